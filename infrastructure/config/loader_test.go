package config_test

import (
	"errors"
	"testing"
	"time"

	"github.com/north-cloud/infrastructure/config"
)

func TestLoaderGetters(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		env     map[string]string
		read    func(l *config.Loader) any
		want    any
		problem string // empty when no problem is expected
	}{
		{"string set", map[string]string{"A": " x "}, func(l *config.Loader) any { return l.String("A", "d") }, "x", ""},
		{"string unset", nil, func(l *config.Loader) any { return l.String("A", "d") }, "d", ""},
		{"string empty uses default", map[string]string{"A": ""}, func(l *config.Loader) any { return l.String("A", "d") }, "d", ""},
		{"required set", map[string]string{"A": "v"}, func(l *config.Loader) any { return l.Required("A") }, "v", ""},
		{"required missing", nil, func(l *config.Loader) any { return l.Required("A") }, "", "A: required"},
		{"required empty", map[string]string{"A": "  "}, func(l *config.Loader) any { return l.Required("A") }, "", "A: required"},
		{"int", map[string]string{"A": "-3"}, func(l *config.Loader) any { return l.Int("A", 7) }, -3, ""},
		{"int bad", map[string]string{"A": "ten"}, func(l *config.Loader) any { return l.Int("A", 7) }, 7, `A: must be an integer (got "ten")`},
		{"positive int", map[string]string{"A": "4"}, func(l *config.Loader) any { return l.PositiveInt("A", 7) }, 4, ""},
		{"positive int zero", map[string]string{"A": "0"}, func(l *config.Loader) any { return l.PositiveInt("A", 7) }, 7, `A: must be a positive integer (got "0")`},
		{"positive int word", map[string]string{"A": "ten"}, func(l *config.Loader) any { return l.PositiveInt("A", 7) }, 7, `A: must be a positive integer (got "ten")`},
		{"int64", map[string]string{"A": "1099511627776"}, func(l *config.Loader) any { return l.Int64("A", 1) }, int64(1 << 40), ""},
		{"int64 bad", map[string]string{"A": "1.5"}, func(l *config.Loader) any { return l.Int64("A", 1) }, int64(1), `A: must be an integer (got "1.5")`},
		{"positive int64 negative", map[string]string{"A": "-1"}, func(l *config.Loader) any { return l.PositiveInt64("A", 1) }, int64(1), `A: must be a positive integer (got "-1")`},
		{"duration", map[string]string{"A": "1m30s"}, func(l *config.Loader) any { return l.Duration("A", time.Second) }, 90 * time.Second, ""},
		{"duration unset", nil, func(l *config.Loader) any { return l.Duration("A", time.Second) }, time.Second, ""},
		{"duration no unit", map[string]string{"A": "30"}, func(l *config.Loader) any { return l.Duration("A", time.Second) }, time.Second, `A: must be a positive duration such as "30s" (got "30")`},
		{"duration zero", map[string]string{"A": "0s"}, func(l *config.Loader) any { return l.Duration("A", time.Second) }, time.Second, `A: must be a positive duration such as "30s" (got "0s")`},
		{"fraction", map[string]string{"A": "0.25"}, func(l *config.Loader) any { return l.Fraction("A", 0.5) }, 0.25, ""},
		{"fraction zero", map[string]string{"A": "0"}, func(l *config.Loader) any { return l.Fraction("A", 0.5) }, 0.0, ""},
		{"fraction over one", map[string]string{"A": "1.5"}, func(l *config.Loader) any { return l.Fraction("A", 0.5) }, 0.5, `A: must be a number from 0 to 1 (got "1.5")`},
		{"fraction NaN", map[string]string{"A": "NaN"}, func(l *config.Loader) any { return l.Fraction("A", 0.5) }, 0.5, `A: must be a number from 0 to 1 (got "NaN")`},
		{"bool", map[string]string{"A": "false"}, func(l *config.Loader) any { return l.Bool("A", true) }, false, ""},
		{"bool bad", map[string]string{"A": "yes"}, func(l *config.Loader) any { return l.Bool("A", true) }, true, `A: must be true or false (got "yes")`},
		{"one of", map[string]string{"A": "warn"}, func(l *config.Loader) any { return l.OneOf("A", "info", "info", "warn") }, "warn", ""},
		{"one of bad", map[string]string{"A": "loud"}, func(l *config.Loader) any { return l.OneOf("A", "info", "info", "warn") }, "info", `A: must be one of info, warn (got "loud")`},
		{"url", map[string]string{"A": "https://es:9200"}, func(l *config.Loader) any { return l.URL("A", "", "http", "https") }, "https://es:9200", ""},
		{"url optional unset", nil, func(l *config.Loader) any { return l.URL("A", "", "http") }, "", ""},
		{"url wrong scheme", map[string]string{"A": "ftp://h"}, func(l *config.Loader) any { return l.URL("A", "http://d", "http", "https") }, "http://d",
			`A: must be a URL with scheme http or https and a host (got "ftp://h")`},
		{"url no host", map[string]string{"A": "localhost:9200"}, func(l *config.Loader) any { return l.URL("A", "", "http") }, "",
			`A: must be a URL with scheme http and a host (got "localhost:9200")`},
		{"url password redacted", map[string]string{"A": "mysql://u:hunter2@h/db"}, func(l *config.Loader) any { return l.URL("A", "", "postgres") }, "",
			`A: must be a URL with scheme postgres and a host (got "mysql://u:xxxxx@h/db")`},
		{"url unparseable", map[string]string{"A": "http://h:port/%zz"}, func(l *config.Loader) any { return l.URL("A", "", "http") }, "",
			`A: must be a URL with scheme http`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l := config.NewFromMap(tt.env)
			if got := tt.read(l); got != tt.want {
				t.Errorf("value = %#v, want %#v", got, tt.want)
			}
			err := l.Err()
			if tt.problem == "" {
				if err != nil {
					t.Fatalf("Err() = %v, want nil", err)
				}
				return
			}
			if want := "invalid configuration: " + tt.problem; err == nil || err.Error() != want {
				t.Fatalf("Err() = %v, want %q", err, want)
			}
		})
	}
}

func TestLoaderCollectsEveryProblemSortedByName(t *testing.T) {
	t.Parallel()

	l := config.NewFromMap(map[string]string{"CLASSIFIER_CONCURRENCY": "ten", "SECRET": "short"})
	l.Required("JWT_SECRET")
	l.PositiveInt("CLASSIFIER_CONCURRENCY", 10)
	s := l.String("SECRET", "")
	l.Check("SECRET", len(s) >= 32, "must be at least 32 bytes")
	l.Check("OK", true, "never reported")

	err := l.Err()
	want := `invalid configuration: CLASSIFIER_CONCURRENCY: must be a positive integer (got "ten"); JWT_SECRET: required; SECRET: must be at least 32 bytes`
	if err == nil || err.Error() != want {
		t.Fatalf("Err() = %v\nwant %s", err, want)
	}
	var cfgErr *config.Error
	if !errors.As(err, &cfgErr) {
		t.Fatalf("Err() is %T, want *config.Error", err)
	}
	if len(cfgErr.Problems) != 3 || cfgErr.Problems[1] != (config.Problem{Var: "JWT_SECRET", Msg: "required"}) {
		t.Fatalf("Problems = %+v", cfgErr.Problems)
	}
}

func TestNewReadsProcessEnvironment(t *testing.T) {
	// Not parallel: t.Setenv modifies the process environment.
	t.Setenv("NORTH_CLOUD_CONFIG_TEST", "42")
	l := config.New()
	if got := l.PositiveInt("NORTH_CLOUD_CONFIG_TEST", 1); got != 42 {
		t.Fatalf("PositiveInt = %d, want 42", got)
	}
	if err := l.Err(); err != nil {
		t.Fatalf("Err() = %v", err)
	}
}
