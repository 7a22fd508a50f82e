// Command index-manager serves the REST API over the content indices.
//
//	index-manager [serve]              run the service
//	index-manager migrate up|down [N]|version
//	index-manager hash-password        read a password on stdin, print its bcrypt hash
package main

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/north-cloud/index-manager/internal/api"
	"github.com/north-cloud/index-manager/internal/audit"
	"github.com/north-cloud/index-manager/internal/indices"
	"github.com/north-cloud/index-manager/internal/rates"
	"github.com/north-cloud/index-manager/internal/sessions"
	"github.com/north-cloud/index-manager/migrations"
	"github.com/north-cloud/infrastructure/config"
	"github.com/north-cloud/infrastructure/contentindex"
	"github.com/north-cloud/infrastructure/esclient"
	"github.com/north-cloud/infrastructure/httpserver"
	"github.com/north-cloud/infrastructure/lifecycle"
	"github.com/north-cloud/infrastructure/postgres"
	"github.com/north-cloud/infrastructure/service"
)

// serveCommand is the serve subcommand: serve, with its configuration read.
var serveCommand = service.ServeCommand(loadConfig, serve)

func main() {
	service.Main("serve", map[string]service.Command{
		"serve":         serveCommand,
		"migrate":       service.MigrateCommand("index-manager", "INDEX_MANAGER_DATABASE_URL", migrations.FS),
		"hash-password": hashPassword,
	})
}

// bcryptCost is the work factor of hashes made by hash-password.
const bcryptCost = 12

// Config is the index-manager's whole configuration; docs/configuration.md
// lists every variable.
type Config struct {
	service.Common
	DB               postgres.Config
	ES               esclient.Config
	Account          api.Account
	Accounts         []api.RoleAccount
	AccountsFile     string
	LoginLimits      api.LoginLimits
	TrustedProxies   []netip.Prefix
	MessageBodies    api.MessageBodies
	TokenTTL         time.Duration
	SessionTTL       time.Duration
	QueryTimeout     time.Duration
	Reads            api.ReadLimits
	ProtectedIndices []string
	SampleInterval   time.Duration
	SampleRetention  time.Duration
}

// examplePasswordHash is the operator password hash of .env.example, the
// hash of the public password "north-cloud-dev": the service refuses to
// start with it.
const examplePasswordHash = "$2a$12$GcL5YG7JYLsqQ8FyxVgxJeBlu3NIEgmwLxnzXRlyRA.M8OqhJmkVG"

func loadConfig(l *config.Loader) (Config, error) {
	c := Config{
		Common: service.LoadCommon(l, "index-manager", "INDEX_MANAGER_HTTP_ADDR", ":8090"),
		DB:     postgres.ConfigFromEnv(l, "INDEX_MANAGER_DATABASE_URL"),
		ES:     esclient.ConfigFromEnv(l),
		Account: api.Account{
			User:         l.String("INDEX_MANAGER_ADMIN_USER", ""),
			PasswordHash: l.String("INDEX_MANAGER_ADMIN_PASSWORD_HASH", ""),
		},
		LoginLimits: api.LoginLimits{
			PerUser:    l.PositiveInt("INDEX_MANAGER_LOGIN_MAX_FAILURES_PER_USER", api.LoginFailuresPerUserDefault),
			PerAddress: l.PositiveInt("INDEX_MANAGER_LOGIN_MAX_FAILURES_PER_ADDRESS", api.LoginFailuresPerAddressDefault),
			Window:     l.Duration("INDEX_MANAGER_LOGIN_FAILURE_WINDOW", api.LoginWindowDefault),
			MaxDelay:   l.Duration("INDEX_MANAGER_LOGIN_MAX_DELAY", api.LoginMaxDelayDefault),
		},
		TokenTTL:     l.Duration("INDEX_MANAGER_TOKEN_TTL", api.TokenTTLDefault),
		SessionTTL:   l.Duration("INDEX_MANAGER_SESSION_TTL", api.SessionTTLDefault),
		QueryTimeout: l.Duration("INDEX_MANAGER_QUERY_TIMEOUT", api.QueryTimeoutDefault),
		Reads: api.ReadLimits{
			PerCaller:      l.PositiveInt("INDEX_MANAGER_READS_PER_CALLER", api.ReadsPerCallerDefault),
			Total:          l.PositiveInt("INDEX_MANAGER_READS_TOTAL", api.ReadsTotalDefault),
			MaxResultBytes: l.Int64("INDEX_MANAGER_MAX_RESULT_BYTES", api.MaxResultBytesDefault),
		},
		SampleInterval:  l.Duration("INDEX_MANAGER_STATS_SAMPLE_INTERVAL", rates.IntervalDefault),
		SampleRetention: l.Duration("INDEX_MANAGER_STATS_RETENTION", rates.RetentionDefault),
	}
	for _, n := range strings.Split(l.String("INDEX_MANAGER_PROTECTED_INDICES", ""), ",") {
		if n = strings.TrimSpace(n); n != "" {
			c.ProtectedIndices = append(c.ProtectedIndices, n)
		}
	}
	if err := c.Account.Validate(); err != nil {
		l.Check("INDEX_MANAGER_ADMIN_PASSWORD_HASH", false, err.Error())
	}
	if err := c.Reads.Validate(); err != nil {
		l.Check("INDEX_MANAGER_READS_PER_CALLER", false, err.Error()+" (INDEX_MANAGER_READS_PER_CALLER, INDEX_MANAGER_READS_TOTAL, INDEX_MANAGER_MAX_RESULT_BYTES)")
	}
	// More accounts with their roles, one "name role bcrypt-hash" a line.
	if c.AccountsFile = l.String("INDEX_MANAGER_ACCOUNTS_FILE", ""); c.AccountsFile != "" {
		accounts, err := api.LoadAccountsFile(c.AccountsFile)
		l.Check("INDEX_MANAGER_ACCOUNTS_FILE", err == nil, strings.ReplaceAll(fmt.Sprint(err), "\n", "; "))
		c.Accounts = accounts
		for _, a := range accounts {
			l.Check("INDEX_MANAGER_ACCOUNTS_FILE", a.User != c.Account.User,
				fmt.Sprintf("%s is also INDEX_MANAGER_ADMIN_USER; give the file's account another name", a.User))
			l.Check("INDEX_MANAGER_ACCOUNTS_FILE", a.PasswordHash != examplePasswordHash,
				fmt.Sprintf("the password hash of %s is the example of .env.example (the public password north-cloud-dev)", a.User))
		}
	}
	l.Check("INDEX_MANAGER_ADMIN_PASSWORD_HASH", c.Account.PasswordHash != examplePasswordHash,
		"is the example of .env.example (the public password north-cloud-dev); make your own with index-manager hash-password")
	l.Check("INDEX_MANAGER_TOKEN_TTL", c.TokenTTL <= c.Common.Auth.MaxLifetime,
		fmt.Sprintf("must be at most JWT_MAX_LIFETIME (%s), or its tokens are refused (got %s)", c.Common.Auth.MaxLifetime, c.TokenTTL))
	l.Check("INDEX_MANAGER_SESSION_TTL", c.SessionTTL >= c.TokenTTL && c.SessionTTL <= 30*24*time.Hour,
		fmt.Sprintf("must be from INDEX_MANAGER_TOKEN_TTL (%s) to 720h (got %s)", c.TokenTTL, c.SessionTTL))
	l.Check("INDEX_MANAGER_LOGIN_FAILURE_WINDOW", c.LoginLimits.Window >= time.Second && c.LoginLimits.Window <= 24*time.Hour,
		fmt.Sprintf("must be from 1s to 24h (got %s)", c.LoginLimits.Window))
	l.Check("INDEX_MANAGER_LOGIN_MAX_DELAY", c.LoginLimits.MaxDelay >= api.LoginFirstDelay && c.LoginLimits.MaxDelay <= c.LoginLimits.Window,
		fmt.Sprintf("must be from %s to INDEX_MANAGER_LOGIN_FAILURE_WINDOW (%s), or a slowed-down key is forgotten before its wait ends (got %s)",
			api.LoginFirstDelay, c.LoginLimits.Window, c.LoginLimits.MaxDelay))
	trusted, err := api.ParseTrustedProxies(l.String("INDEX_MANAGER_TRUSTED_PROXIES", api.TrustedProxiesDefault))
	l.Check("INDEX_MANAGER_TRUSTED_PROXIES", err == nil, fmt.Sprint(err))
	c.TrustedProxies = trusted
	bodies, err := api.ParseMessageBodies(l.String("VIEWER_MESSAGE_BODIES", string(api.BodiesShown)))
	l.Check("VIEWER_MESSAGE_BODIES", err == nil, fmt.Sprint(err))
	c.MessageBodies = bodies
	l.Check("INDEX_MANAGER_STATS_RETENTION", c.SampleRetention > rates.WindowDefault,
		fmt.Sprintf("must be longer than the %s rate window (got %s)", rates.WindowDefault, c.SampleRetention))
	return c, l.Err()
}

// redactURL masks the password of a URL for logs (Elasticsearch URLs may
// carry credentials).
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "<unparsable url>"
	}
	return u.Redacted()
}

// cursorKey derives the documents-cursor signing key from the shared
// secret, so every replica accepts the cursors of the others.
func cursorKey(secret string) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("index-manager documents cursor key"))
	return m.Sum(nil)
}

// hashPassword reads one password (the first line of stdin) and prints its
// bcrypt hash, the value of INDEX_MANAGER_ADMIN_PASSWORD_HASH.
func hashPassword(_ context.Context, _ []string) error {
	return writeHash(os.Stdin, os.Stdout)
}

func writeHash(in io.Reader, out io.Writer) error {
	line, err := bufio.NewReader(io.LimitReader(in, 4096)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("hash-password: read stdin: %w", err)
	}
	password := strings.TrimRight(line, "\r\n")
	if password == "" {
		return errors.New("hash-password: no password on stdin (usage: printf '%s' \"$PASSWORD\" | index-manager hash-password)")
	}
	if len(password) > 72 {
		return errors.New("hash-password: bcrypt uses at most 72 bytes of a password; choose a shorter one")
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcryptCost)
	if err != nil {
		return fmt.Errorf("hash-password: %w", err)
	}
	_, err = fmt.Fprintln(out, string(hash))
	return err
}

// serve runs the service (service.ServeCommand has read cfg and built rt).
func serve(ctx context.Context, cfg Config, rt *service.Runtime) error {
	log := rt.Logger
	log.InfoContext(ctx, "starting index-manager", "http_addr", cfg.HTTP.Addr, "database", postgres.Redact(cfg.DB.URL),
		"elasticsearch", redactURL(cfg.ES.URL), "auth", cfg.Auth.String(), "admin_user", cfg.Account.User,
		"accounts_file", cfg.AccountsFile, "accounts", len(cfg.Accounts),
		"login_enabled", cfg.Account.Configured() || len(cfg.Accounts) > 0, "token_ttl", cfg.TokenTTL.String(),
		"login_max_failures_per_user", cfg.LoginLimits.PerUser, "login_max_failures_per_address", cfg.LoginLimits.PerAddress,
		"login_failure_window", cfg.LoginLimits.Window.String(), "login_max_delay", cfg.LoginLimits.MaxDelay.String(),
		"trusted_proxies", cfg.TrustedProxies,
		"viewer_message_bodies", string(cfg.MessageBodies),
		"stats_sample_interval", cfg.SampleInterval.String(), "stats_retention", cfg.SampleRetention.String(),
		"query_timeout", cfg.QueryTimeout.String(), "protected_indices", cfg.ProtectedIndices)
	if !cfg.Account.Configured() && len(cfg.Accounts) == 0 {
		log.WarnContext(ctx, "login disabled: INDEX_MANAGER_ADMIN_USER and INDEX_MANAGER_ADMIN_PASSWORD_HASH are not set")
	}

	db, err := postgres.OpenMigrated(ctx, cfg.DB, migrations.FS, log)
	if err != nil {
		return err
	}
	defer db.Close()
	// Every Elasticsearch call is a span, inside the request span that made it.
	cfg.ES.TracerProvider = rt.Telemetry.TracerProvider()
	es, err := contentindex.Connect(ctx, cfg.ES, log)
	if err != nil {
		return err
	}

	store, err := indices.NewStore(es)
	if err != nil {
		return err
	}
	auditLog, err := audit.NewRepository(db)
	if err != nil {
		return err
	}
	samples, err := rates.NewRepository(db, rates.WindowDefault)
	if err != nil {
		return err
	}
	sess, err := sessions.NewRepository(db)
	if err != nil {
		return err
	}
	sampler, err := rates.NewSampler(store, samples, rates.SamplerConfig{
		Interval: cfg.SampleInterval, Retention: cfg.SampleRetention,
		Meter: rt.Telemetry.Meter("index-manager"), Logger: log,
	})
	if err != nil {
		return err
	}

	srv, err := rt.HTTPServer(cfg.HTTP,
		httpserver.ReadyCheck{Name: "postgres", Check: postgres.Ping(db)},
		httpserver.ReadyCheck{Name: "elasticsearch", Check: esclient.Ping(es)},
	)
	if err != nil {
		return err
	}
	err = api.Mount(srv.Router(), api.Config{
		Indices: store, Audit: auditLog, Rates: samples, Auth: rt.Auth, Sessions: sess, SessionTTL: cfg.SessionTTL,
		Meter: rt.Telemetry.Meter("index-manager"), Account: cfg.Account, Accounts: cfg.Accounts, LoginLimits: cfg.LoginLimits, TrustedProxies: cfg.TrustedProxies, MessageBodies: cfg.MessageBodies, TokenTTL: cfg.TokenTTL, CursorKey: cursorKey(cfg.Auth.Secret),
		QueryTimeout: cfg.QueryTimeout, Reads: cfg.Reads, ProtectedIndices: cfg.ProtectedIndices, Logger: log,
	})
	if err != nil {
		return err
	}

	// Stopped in reverse: the HTTP server drains first, then the sampler.
	return lifecycle.Run(ctx, log, cfg.HTTP.ShutdownTimeout,
		lifecycle.Named("stats_sampler", sampler),
		lifecycle.Named("http", srv))
}
