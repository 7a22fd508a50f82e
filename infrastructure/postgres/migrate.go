package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"strconv"

	"github.com/golang-migrate/migrate/v4"
	migratepg "github.com/golang-migrate/migrate/v4/database/postgres"
	"github.com/golang-migrate/migrate/v4/source/iofs"
)

// Migrator applies a service's embedded migrations. It holds its own
// connection pool because golang-migrate closes the database it is given.
type Migrator struct {
	m      *migrate.Migrate
	logger *slog.Logger
}

// NewMigrator prepares the migrations found in dir of fsys (usually an
// embed.FS holding NNN_name.up.sql / NNN_name.down.sql files) against the
// database at dbURL. golang-migrate takes a Postgres advisory lock, so
// replicas starting together migrate once.
func NewMigrator(dbURL string, fsys fs.FS, dir string, logger *slog.Logger) (*Migrator, error) {
	src, err := iofs.New(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("new migrator: read migrations: %w", err)
	}
	db, err := sql.Open("postgres", dbURL)
	if err != nil {
		return nil, fmt.Errorf("new migrator: open: %w", err)
	}
	driver, err := migratepg.WithInstance(db, &migratepg.Config{})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("new migrator: %w", err)
	}
	m, err := migrate.NewWithInstance("iofs", src, "postgres", driver)
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("new migrator: %w", err)
	}
	return &Migrator{m: m, logger: logger}, nil
}

// Up applies every pending migration; having none to apply is not an error.
func (mg *Migrator) Up() error {
	if err := mg.m.Up(); err != nil && !errors.Is(err, migrate.ErrNoChange) {
		return fmt.Errorf("migrate up: %w", err)
	}
	return nil
}

// Down reverts the last steps migrations.
func (mg *Migrator) Down(steps int) error {
	if steps <= 0 {
		return fmt.Errorf("migrate down: steps must be positive, got %d", steps)
	}
	if err := mg.m.Steps(-steps); err != nil && !errors.Is(err, migrate.ErrNoChange) {
		return fmt.Errorf("migrate down: %w", err)
	}
	return nil
}

// Version reports the applied version, and whether a failed migration left
// the schema dirty. Version 0 means nothing is applied.
func (mg *Migrator) Version() (version uint, dirty bool, err error) {
	v, d, err := mg.m.Version()
	if errors.Is(err, migrate.ErrNilVersion) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("migrate version: %w", err)
	}
	return v, d, nil
}

// Close releases the migrator's connections.
func (mg *Migrator) Close() error {
	srcErr, dbErr := mg.m.Close()
	return errors.Join(srcErr, dbErr)
}

// RunCommand executes the `migrate up|down [N]|version` subcommand shared by
// the services, writing a one-line result to out.
func RunCommand(dbURL string, fsys fs.FS, dir string, args []string, out io.Writer, logger *slog.Logger) error {
	if len(args) == 0 {
		return errors.New("usage: migrate up|down [N]|version")
	}
	mg, err := NewMigrator(dbURL, fsys, dir, logger)
	if err != nil {
		return err
	}
	defer func() { _ = mg.Close() }()

	switch args[0] {
	case "up":
		if err := mg.Up(); err != nil {
			return err
		}
	case "down":
		steps := 1
		if len(args) > 1 {
			n, err := strconv.Atoi(args[1])
			if err != nil || n <= 0 {
				return fmt.Errorf("migrate down: N must be a positive integer, got %q", args[1])
			}
			steps = n
		}
		if err := mg.Down(steps); err != nil {
			return err
		}
	case "version":
	default:
		return fmt.Errorf("unknown migrate command %q: usage: migrate up|down [N]|version", args[0])
	}
	v, dirty, err := mg.Version()
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "version %d dirty=%t\n", v, dirty)
	return err
}

// MigrateUp applies every pending migration and closes the migrator: the
// start-up step of every service.
func MigrateUp(dbURL string, fsys fs.FS, dir string, logger *slog.Logger) error {
	mg, err := NewMigrator(dbURL, fsys, dir, logger)
	if err != nil {
		return err
	}
	upErr := mg.Up()
	v, _, verErr := mg.Version()
	closeErr := mg.Close()
	if err := errors.Join(upErr, verErr, closeErr); err != nil {
		return err
	}
	logger.Info("database schema up to date", "version", v, "target", Redact(dbURL))
	return nil
}

// OpenMigrated applies the service's migrations (the *.sql files at the root
// of fsys) and then opens its pool: the database step of every service's
// start-up.
func OpenMigrated(ctx context.Context, cfg Config, fsys fs.FS, logger *slog.Logger) (*sql.DB, error) {
	if err := MigrateUp(cfg.URL, fsys, ".", logger); err != nil {
		return nil, err
	}
	return Open(ctx, cfg, logger)
}
