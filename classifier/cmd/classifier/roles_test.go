package main

import (
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/north-cloud/classifier/internal/api"
	"github.com/north-cloud/classifier/internal/dbtest"
	"github.com/north-cloud/classifier/internal/deadletter"
	"github.com/north-cloud/classifier/internal/labels"
	"github.com/north-cloud/classifier/internal/modelapi"
	"github.com/north-cloud/classifier/internal/modelstore"
	"github.com/north-cloud/classifier/internal/openapi"
	"github.com/north-cloud/classifier/internal/opsapi"
	"github.com/north-cloud/classifier/internal/pipeline"
	"github.com/north-cloud/classifier/internal/reputation"
	"github.com/north-cloud/classifier/internal/rules"
	"github.com/north-cloud/classifier/internal/rulestore"
	"github.com/north-cloud/classifier/internal/storage"
	"github.com/north-cloud/infrastructure/audit"
	"github.com/north-cloud/infrastructure/auth"
	"github.com/north-cloud/infrastructure/auth/authtest"
	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/openapi/openapitest"
	"github.com/north-cloud/infrastructure/testenv"
)

// The two tests below are the same as in publisher/cmd/publisher: kept apart because
// mountAPI, which they check, is each main package's own.

// TestRoleMatrix mounts the API as serve does (mountAPI) over a migrated
// database, calls every route with a token of every role and checks the
// answers against the policy, the docs' matrix against the routes, and
// that every call to a mutating route was audited.
func TestRoleMatrix(t *testing.T) {
	t.Parallel()
	m := mounted(t)
	authtest.CheckService(t, m.Router, m.Auth, apiPolicy(), m.DB, "../../../docs/roles.md", "classifier")
}

// TestEmptyQueryValuesAre400 sends every query parameter the OpenAPI
// document says refuses an empty value ("?before_id=") to the API as serve
// mounts it, and wants 400 for each.
func TestEmptyQueryValuesAre400(t *testing.T) {
	t.Parallel()
	m := mounted(t)
	doc, err := openapi.Load()
	if err != nil {
		t.Fatal(err)
	}
	openapitest.CheckEmptyQueryParams(t, m.Router, doc, authtest.Header(t, m.Auth, auth.RoleAdmin), nil)
}

// mounted is the API as serve mounts it (mountAPI) over a migrated
// database, with its authenticator and database.
func mounted(t *testing.T) authtest.Mounted {
	t.Helper()
	db, _ := dbtest.Migrated(t)
	log := testenv.Logger(t)
	engine, err := rules.NewEngine(rules.MatcherTokenIndex, nil)
	if err != nil {
		t.Fatal(err)
	}
	pipe, err := pipeline.New(pipeline.Config{Topics: engine})
	if err != nil {
		t.Fatal(err)
	}
	es, prefix := testenv.Elasticsearch(t)
	finder, err := labels.NewFinder(labels.FinderConfig{ES: es, Pattern: prefix + "*" + contentindex.ClassifiedSuffix})
	if err != nil {
		t.Fatal(err)
	}
	return authtest.Mount(t, "classifier", db, func(router gin.IRouter, g audit.GroupConfig) error {
		return mountAPI(router, g,
			api.Deps{Store: rulestore.NewRepository(db), Engine: engine, Pipeline: pipe, Logger: log},
			opsapi.Deps{DeadLetters: deadletter.NewRepository(db), Sources: reputation.NewRepository(db),
				History: storage.NewHistoryRepository(db), Logger: log},
			modelapi.Deps{Store: modelstore.NewRepository(db), Logger: log},
			labels.Deps{Store: labels.NewStore(db), Finder: finder, Logger: log})
	})
}
