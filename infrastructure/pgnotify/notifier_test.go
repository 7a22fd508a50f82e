package pgnotify_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/north-cloud/infrastructure/lifecycle"
	"github.com/north-cloud/infrastructure/lifecycle/lifecycletest"
	"github.com/north-cloud/infrastructure/pgnotify"
	"github.com/north-cloud/infrastructure/testenv"
)

// bundle is what a test needs beside the Notifier under test.
type bundle struct {
	db  *sql.DB
	dsn string
}

// setup returns a started Notifier on channels a and b of a database of the
// test's own, stopped when the test ends, and waits until it listens.
func setup(t *testing.T, cfg pgnotify.Config) (*pgnotify.Notifier, bundle) {
	t.Helper()
	dsn := testenv.Postgres(t)
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	cfg.URL, cfg.Logger = dsn, testenv.Logger(t)
	if cfg.Channels == nil {
		cfg.Channels = []string{"a", "b"}
	}
	n, err := pgnotify.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := n.Stop(context.Background()); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	<-n.Listening()
	return n, bundle{db: db, dsn: dsn}
}

func notify(t *testing.T, db *sql.DB, channel, payload string) {
	t.Helper()
	if _, err := db.Exec(`SELECT pg_notify($1, $2)`, channel, payload); err != nil {
		t.Fatal(err)
	}
}

// collect reads wake-ups until want notifications have arrived and returns
// them.
func collect(t *testing.T, n *pgnotify.Notifier, want int) []pgnotify.Wakeup {
	t.Helper()
	var got []pgnotify.Wakeup
	total := 0
	for total < want {
		w := <-n.C()
		got = append(got, w)
		total += w.Notifications
	}
	if total != want {
		t.Fatalf("received %d notifications, want %d", total, want)
	}
	return got
}

// Every notification is accounted for, on its channel, and the payload a
// consumer sees last is the latest one sent.
func TestNotificationsArriveCoalescedWithLatestPayload(t *testing.T) {
	t.Parallel()
	n, b := setup(t, pgnotify.Config{})
	if err := n.Ping(context.Background()); err != nil {
		t.Fatalf("ping while listening: %v", err)
	}
	const count = 50
	for i := range count {
		notify(t, b.db, "a", fmt.Sprint(i))
	}
	notify(t, b.db, "b", "only")
	notify(t, b.db, "unrelated", "x") // not listened to
	got := collect(t, n, count+1)
	last := map[string]string{}
	for _, w := range got {
		if w.Reconnected {
			t.Errorf("unexpected reconnect: %+v", w)
		}
		for ch, p := range w.Payloads {
			last[ch] = p
		}
	}
	if last["a"] != fmt.Sprint(count-1) || last["b"] != "only" || len(last) != 2 {
		t.Errorf("latest payloads %v", last)
	}
}

// A lost connection comes back by itself, and the consumer is told that
// notifications may have been missed.
func TestReconnectWakesConsumer(t *testing.T) {
	t.Parallel()
	n, b := setup(t, pgnotify.Config{Channels: []string{"a"}, MinReconnect: 10 * time.Millisecond})
	var killed int
	if err := b.db.QueryRow(`SELECT COUNT(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND query ILIKE 'LISTEN%'`).Scan(&killed); err != nil || killed != 1 {
		t.Fatalf("terminate the LISTEN backend: killed %d, %v", killed, err)
	}
	w := <-n.C()
	if !w.Reconnected {
		t.Fatalf("first wake-up after the connection was killed: %+v, want Reconnected", w)
	}
	notify(t, b.db, "a", "after")
	for {
		w = <-n.C()
		if w.Notifications > 0 {
			break
		}
	}
	if w.Payloads["a"] != "after" {
		t.Errorf("after reconnect got %+v", w)
	}
}

// With a Debounce, notifications sent together still arrive, all of them.
func TestDebounce(t *testing.T) {
	t.Parallel()
	n, b := setup(t, pgnotify.Config{Channels: []string{"a"}, Debounce: 20 * time.Millisecond})
	for i := range 5 {
		notify(t, b.db, "a", fmt.Sprint(i))
	}
	got := collect(t, n, 5)
	if p := got[len(got)-1].Payloads["a"]; p != "4" {
		t.Errorf("last payload %q, want 4", p)
	}
}

func TestPingBeforeStartAndAfterStop(t *testing.T) {
	t.Parallel()
	n, err := pgnotify.New(pgnotify.Config{URL: "postgres://127.0.0.1:1/none", Channels: []string{"a"}, Logger: testenv.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Ping(context.Background()); err == nil {
		t.Error("ping before Start succeeded")
	}
	if err := n.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Nothing listens on port 1: the connection never comes up, and Stop
	// still returns (it releases the LISTEN waiting for it).
	if err := n.Ping(context.Background()); err == nil {
		t.Error("ping without a connection succeeded")
	}
	if err := n.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := n.Ping(context.Background()); err == nil {
		t.Error("ping after Stop succeeded")
	}
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	_, err := pgnotify.New(pgnotify.Config{Channels: []string{"a", "a", ""}})
	if err == nil {
		t.Fatal("invalid config accepted")
	}
	for _, want := range []string{"URL is required", `Channels[1] "a"`, `Channels[2] ""`, "Logger is required"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestNotifierStress(t *testing.T) {
	t.Parallel()
	dsn := testenv.Postgres(t)
	lifecycletest.Stress(t, func(t testing.TB) lifecycle.Component {
		n, err := pgnotify.New(pgnotify.Config{URL: dsn, Channels: []string{"a"}, Logger: testenv.Logger(t)})
		if err != nil {
			t.Fatal(err)
		}
		return n
	})
}
