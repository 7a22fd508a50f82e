package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/north-cloud/infrastructure/config"
	"github.com/north-cloud/infrastructure/testenv"
)

func TestHashPasswordPrintsAVerifiableHash(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	if err := writeHash(strings.NewReader("s3cret pass\n"), &out); err != nil {
		t.Fatal(err)
	}
	hash := strings.TrimSpace(out.String())
	if err := bcrypt.CompareHashAndPassword([]byte(hash), []byte("s3cret pass")); err != nil {
		t.Fatalf("hash %q does not verify: %v", hash, err)
	}
	if cost, _ := bcrypt.Cost([]byte(hash)); cost != bcryptCost {
		t.Fatalf("cost %d, want %d", cost, bcryptCost)
	}
	for _, in := range []string{"", "\n", strings.Repeat("x", 73)} {
		if err := writeHash(strings.NewReader(in), &out); err == nil {
			t.Errorf("input %q accepted", in)
		}
	}
}

func TestRedactURL(t *testing.T) {
	t.Parallel()
	if got := redactURL("https://elastic:s3cret@es.example:9200"); strings.Contains(got, "s3cret") || !strings.Contains(got, "es.example:9200") {
		t.Fatalf("redacted to %q", got)
	}
	if got := redactURL("http://127.0.0.1:9200"); got != "http://127.0.0.1:9200" {
		t.Fatalf("plain URL changed to %q", got)
	}
}

func TestLoadConfigChecksTheAccount(t *testing.T) {
	t.Parallel()
	base := map[string]string{
		"JWT_SECRET":                 strings.Repeat("k", 32),
		"INDEX_MANAGER_DATABASE_URL": "postgres://u:p@127.0.0.1:5432/im",
	}
	with := func(extra map[string]string) map[string]string {
		m := maps.Clone(base)
		maps.Copy(m, extra)
		return m
	}
	cfg, err := loadConfig(config.NewFromMap(base))
	if err != nil || cfg.Account.Configured() || cfg.TokenTTL != 15*time.Minute || cfg.SessionTTL != 12*time.Hour ||
		cfg.LoginLimits.PerUser != 5 || cfg.LoginLimits.PerAddress != 20 || cfg.LoginLimits.Window != 15*time.Minute ||
		cfg.LoginLimits.MaxDelay != time.Minute || fmt.Sprint(cfg.TrustedProxies) != "[127.0.0.0/8 ::1/128]" {
		t.Fatalf("defaults: %v %+v", err, cfg)
	}
	for _, bad := range []map[string]string{
		{"INDEX_MANAGER_ADMIN_USER": "op"},
		{"INDEX_MANAGER_ADMIN_USER": "op", "INDEX_MANAGER_ADMIN_PASSWORD_HASH": "plaintext"},
		{"INDEX_MANAGER_STATS_RETENTION": "1m"},
		{"INDEX_MANAGER_TOKEN_TTL": "forever"},
		{"INDEX_MANAGER_SESSION_TTL": "5m"},
		{"INDEX_MANAGER_READS_PER_CALLER": "9"},
		{"INDEX_MANAGER_MAX_RESULT_BYTES": "10"},
		{"INDEX_MANAGER_LOGIN_MAX_FAILURES_PER_USER": "0"},
		{"INDEX_MANAGER_LOGIN_MAX_FAILURES_PER_ADDRESS": "many"},
		{"INDEX_MANAGER_LOGIN_FAILURE_WINDOW": "0s"},
		{"INDEX_MANAGER_LOGIN_FAILURE_WINDOW": "1m", "INDEX_MANAGER_LOGIN_MAX_DELAY": "5m"},
		{"INDEX_MANAGER_LOGIN_MAX_DELAY": "10ms"},
		{"INDEX_MANAGER_TRUSTED_PROXIES": "127.0.0.1,dashboard"},
		// The operator hash of .env.example (password north-cloud-dev).
		{"INDEX_MANAGER_ADMIN_USER": "admin", "INDEX_MANAGER_ADMIN_PASSWORD_HASH": "$2a$12$GcL5YG7JYLsqQ8FyxVgxJeBlu3NIEgmwLxnzXRlyRA.M8OqhJmkVG"},
		// Login tokens longer-lived than any service accepts.
		{"INDEX_MANAGER_TOKEN_TTL": "48h"},
		// The JWT secret of .env.example.
		{"JWT_SECRET": "change-me-local-dev-jwt-secret-0123456789abcdef"},
	} {
		if _, err := loadConfig(config.NewFromMap(with(bad))); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	// The accounts file: read and checked at start, its problems named.
	dir := t.TempDir()
	writeFile := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	hash, err := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	good := writeFile("good", "vera viewer "+string(hash)+"\n")
	cfg, err = loadConfig(config.NewFromMap(with(map[string]string{"INDEX_MANAGER_ACCOUNTS_FILE": good})))
	if err != nil || len(cfg.Accounts) != 1 || cfg.Accounts[0].User != "vera" || cfg.Accounts[0].Role != "viewer" {
		t.Fatalf("accounts file: %v %+v", err, cfg.Accounts)
	}
	for file, want := range map[string]string{
		filepath.Join(dir, "missing"):                   "INDEX_MANAGER_ACCOUNTS_FILE: accounts file: open",
		writeFile("role", "vera root "+string(hash)):    `INDEX_MANAGER_ACCOUNTS_FILE: accounts file ` + filepath.Join(dir, "role") + `: line 1: unknown role "root"`,
		writeFile("admin", "op operator "+string(hash)): "op is also INDEX_MANAGER_ADMIN_USER",
	} {
		_, err := loadConfig(config.NewFromMap(with(map[string]string{"INDEX_MANAGER_ACCOUNTS_FILE": file,
			"INDEX_MANAGER_ADMIN_USER": "op", "INDEX_MANAGER_ADMIN_PASSWORD_HASH": string(hash)})))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("accounts file %s: %v, want %q", file, err, want)
		}
	}
	cfg, err = loadConfig(config.NewFromMap(with(map[string]string{"INDEX_MANAGER_TRUSTED_PROXIES": "none"})))
	if err != nil || cfg.TrustedProxies != nil {
		t.Fatalf("no trusted proxies: %v %v", err, cfg.TrustedProxies)
	}
	cfg, err = loadConfig(config.NewFromMap(with(map[string]string{"INDEX_MANAGER_PROTECTED_INDICES": " a_raw_content, b_raw_content ,"})))
	if err != nil || len(cfg.ProtectedIndices) != 2 || cfg.ProtectedIndices[1] != "b_raw_content" {
		t.Fatalf("protected indices: %v %v", err, cfg.ProtectedIndices)
	}
}

// TestServeEndToEnd runs the real serve command against the real services:
// login with the configured account, list indices with the token, and a
// clean shutdown on cancel.
func TestServeEndToEnd(t *testing.T) {
	dsn := testenv.Postgres(t)
	testenv.Elasticsearch(t)
	esURL := testenv.Env(t, "ELASTICSEARCH_URL", "elasticsearch")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	hash, err := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{
		"JWT_SECRET":                          strings.Repeat("s", 40),
		"INDEX_MANAGER_DATABASE_URL":          dsn,
		"ELASTICSEARCH_URL":                   esURL,
		"INDEX_MANAGER_HTTP_ADDR":             addr,
		"INDEX_MANAGER_ADMIN_USER":            "op",
		"INDEX_MANAGER_ADMIN_PASSWORD_HASH":   string(hash),
		"INDEX_MANAGER_STATS_SAMPLE_INTERVAL": "100ms",
		"LOG_LEVEL":                           "error",
		"OTEL_EXPORTER_OTLP_ENDPOINT":         "",
	} {
		t.Setenv(k, v)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serveCommand(ctx, nil) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()

	base := "http://" + addr
	deadline := time.Now().Add(60 * time.Second)
	for {
		res, err := http.Get(base + "/ready")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("service never became ready: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	res, err := http.Post(base+"/api/v1/auth/login", "application/json", strings.NewReader(`{"username":"op","password":"pw"}`))
	if err != nil {
		t.Fatal(err)
	}
	var login struct {
		Token string `json:"token"`
	}
	_ = json.NewDecoder(res.Body).Decode(&login)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || login.Token == "" {
		t.Fatalf("login: %d", res.StatusCode)
	}
	req, _ := http.NewRequest("GET", base+"/api/v1/indices?prefix=nothing-here-", nil)
	req.Header.Set("Authorization", "Bearer "+login.Token)
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("list: %d", res.StatusCode)
	}
	// The sampler runs in the background: wait (bounded) for its first
	// round to show on /metrics.
	for {
		res, err = http.Get(base + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		var metrics bytes.Buffer
		_, _ = metrics.ReadFrom(res.Body)
		res.Body.Close()
		if strings.Contains(metrics.String(), `index_manager_stats_samples_total{`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("sampler metric missing from /metrics")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
