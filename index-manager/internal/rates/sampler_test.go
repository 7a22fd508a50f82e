package rates_test

import (
	"testing"
	"time"

	"github.com/north-cloud/index-manager/internal/indices"
	"github.com/north-cloud/index-manager/internal/rates"
	"github.com/north-cloud/index-manager/migrations"
	"github.com/north-cloud/infrastructure/lifecycle"
	"github.com/north-cloud/infrastructure/lifecycle/lifecycletest"
	"github.com/north-cloud/infrastructure/postgres/postgrestest"
	"github.com/north-cloud/infrastructure/testenv"
)

// The sampler keeps the start/stop contract when started and stopped from
// many goroutines at once, each start sampling the real Elasticsearch into
// a database of the test's own (run with -race).
func TestSamplerStartStopStress(t *testing.T) {
	t.Parallel()
	es, _ := testenv.Elasticsearch(t)
	store, err := indices.NewStore(es)
	if err != nil {
		t.Fatal(err)
	}
	db, _ := postgrestest.Migrated(t, migrations.FS)
	log := testenv.Logger(t)
	repo, err := rates.NewRepository(db, rates.WindowDefault)
	if err != nil {
		t.Fatal(err)
	}
	lifecycletest.Stress(t, func(t testing.TB) lifecycle.Component {
		s, err := rates.NewSampler(store, repo, rates.SamplerConfig{Interval: time.Hour, Logger: log})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
