package opstest

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/lib/pq"
	"github.com/redis/go-redis/v9"

	"github.com/north-cloud/infrastructure/postgres"
	"github.com/north-cloud/infrastructure/testenv"
)

// runbookBlock is a fenced sh block of docs/runbook.md whose first line is
// `# runbook-test` or `# runbook-test: <name>`.
type runbookBlock struct {
	name   string
	line   int
	script string
}

func (b runbookBlock) String() string {
	if b.name == "" {
		return fmt.Sprintf("docs/runbook.md:%d", b.line)
	}
	return fmt.Sprintf("docs/runbook.md:%d (%s)", b.line, b.name)
}

func runbookBlocks(t *testing.T) []runbookBlock {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "docs/runbook.md"))
	if err != nil {
		t.Fatal(err)
	}
	var blocks []runbookBlock
	lines := strings.Split(string(b), "\n")
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != "```sh" || i+1 >= len(lines) {
			continue
		}
		start := i + 1
		end := start
		for end < len(lines) && strings.TrimSpace(lines[end]) != "```" {
			end++
		}
		first := strings.TrimSpace(lines[start])
		if rest, ok := strings.CutPrefix(first, "# runbook-test"); ok {
			blocks = append(blocks, runbookBlock{
				name:   strings.TrimSpace(strings.TrimPrefix(rest, ":")),
				line:   start + 1,
				script: strings.Join(lines[start:end], "\n"),
			})
		}
		i = end
	}
	return blocks
}

// The placeholder id of the runbook's re-queue-one-row blocks; the test seeds
// a row with it.
const placeholderID = "00000000-0000-0000-0000-000000000000"

// TestRunbookCommands runs every `# runbook-test` block of docs/runbook.md
// with bash against fresh databases carrying the services' real migrations
// and seeded rows, and the harness's Redis, and checks what the re-queue,
// backup and restore blocks did.
func TestRunbookCommands(t *testing.T) {
	for _, tool := range []string{"bash", "psql", "pg_dump", "pg_restore", "redis-cli"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.Unavailable(t, tool, err)
		}
	}
	blocks := runbookBlocks(t)
	if len(blocks) < 15 {
		t.Fatalf("found %d `# runbook-test` blocks in docs/runbook.md, expected the playbook's (at least 15)", len(blocks))
	}

	classifierDB := testenv.Postgres(t)
	publisherDB := testenv.Postgres(t)
	indexManagerDB := testenv.Postgres(t)
	redisURL := testenv.Env(t, "REDIS_URL", "redis")
	rdb := testenv.Redis(t)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	for dir, dsn := range map[string]string{"classifier": classifierDB, "publisher": publisherDB, "index-manager": indexManagerDB} {
		if err := postgres.MigrateUp(dsn, os.DirFS(filepath.Join(root, dir, "migrations")), ".", logger); err != nil {
			t.Fatalf("migrate %s: %v", dir, err)
		}
	}
	cdb := openDB(t, classifierDB)
	pdb := openDB(t, publisherDB)
	idb := openDB(t, indexManagerDB)
	seedClassifier(t, cdb)
	seedPublisher(t, pdb)
	seedIndexManager(t, idb)

	work := t.TempDir()
	// The runbook's commands run from the repository root (scripts/db.sh).
	scripts, err := filepath.Abs(filepath.Join(root, "scripts"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(scripts, filepath.Join(work, "scripts")); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(),
		"CLASSIFIER_DATABASE_URL="+classifierDB,
		"PUBLISHER_DATABASE_URL="+publisherDB,
		"INDEX_MANAGER_DATABASE_URL="+indexManagerDB,
		"REDIS_URL="+redisURL,
		"PGCONNECT_TIMEOUT=10",
	)

	backedUp := map[string]int{} // rows of each database's table before the restore
	checks := map[string]func(t *testing.T){
		"dlq-requeue": func(t *testing.T) {
			// The exhausted demo_news ES_TIMEOUT row has fresh retries and is due.
			expectRow(t, cdb, `SELECT retry_count = 0 AND max_retries = 5 AND next_retry_at <= NOW() FROM dead_letter_queue WHERE content_id = 'dlq-news-exhausted'`)
			// Others are untouched: another source, and a row still retrying.
			expectRow(t, cdb, `SELECT retry_count = 0 AND max_retries = 0 FROM dead_letter_queue WHERE content_id = 'dlq-metro-validation'`)
			expectRow(t, cdb, `SELECT retry_count = 1 AND next_retry_at > NOW() FROM dead_letter_queue WHERE content_id = 'dlq-news-waiting'`)
		},
		"dlq-requeue-one": func(t *testing.T) {
			// A VALIDATION_ERROR row (max_retries 0) gets one retry.
			expectRow(t, cdb, `SELECT retry_count = 0 AND max_retries = 1 AND next_retry_at <= NOW() FROM dead_letter_queue WHERE id = '`+placeholderID+`'`)
		},
		"outbox-requeue": func(t *testing.T) {
			expectRow(t, pdb, `SELECT status = 'pending' AND retry_count = 0 AND next_retry_at IS NULL FROM classified_outbox WHERE content_id = 'out-news-exhausted'`)
			expectRow(t, pdb, `SELECT status = 'failed' AND retry_count = 5 FROM classified_outbox WHERE content_id = 'out-metro-exhausted'`)
			expectRow(t, pdb, `SELECT status = 'failed' AND retry_count = 2 FROM classified_outbox WHERE content_id = 'out-news-retrying'`)
		},
		"outbox-requeue-one": func(t *testing.T) {
			expectRow(t, pdb, `SELECT status = 'pending' AND retry_count = 0 FROM classified_outbox WHERE id = '`+placeholderID+`'`)
		},
		"backup": func(t *testing.T) {
			for _, db := range []string{"classifier", "publisher", "index_manager"} {
				files, _ := filepath.Glob(filepath.Join(work, "backups", db+"-*.dump"))
				if len(files) != 1 {
					t.Fatalf("backups/%s-*.dump: %d files, want 1", db, len(files))
				}
				if fi, err := os.Stat(files[0]); err != nil || fi.Size() == 0 {
					t.Errorf("%s is empty or unreadable: %v", files[0], err)
				}
			}
		},
		"restore": func(t *testing.T) {
			// The restore replaced each database with the dump taken after
			// the re-queue blocks (before it, damage() emptied them): the
			// rows are back, in that state.
			for db, want := range map[*sql.DB]string{cdb: "dead_letter_queue", pdb: "classified_outbox", idb: "audit_log"} {
				if n := count(t, db, want); n != backedUp[want] {
					t.Errorf("%s has %d rows after restore, want the %d backed up", want, n, backedUp[want])
				}
			}
			if n := count(t, cdb, "dead_letter_queue"); n != 4 {
				t.Errorf("dead_letter_queue has %d rows after restore, want 4", n)
			}
			expectRow(t, cdb, `SELECT max_retries = 1 FROM dead_letter_queue WHERE id = '`+placeholderID+`'`)
		},
	}
	// Before the restore block, every database loses its rows, so only a
	// restore of all three brings them back.
	before := map[string]func(t *testing.T){
		"restore": func(t *testing.T) {
			for db, table := range map[*sql.DB]string{cdb: "dead_letter_queue", pdb: "classified_outbox", idb: "audit_log"} {
				backedUp[table] = count(t, db, table)
				if _, err := db.Exec(`DELETE FROM ` + table); err != nil {
					t.Fatalf("empty %s: %v", table, err)
				}
			}
			if backedUp["dead_letter_queue"] == 0 || backedUp["classified_outbox"] == 0 || backedUp["audit_log"] == 0 {
				t.Fatalf("nothing to restore: %v rows before the restore", backedUp)
			}
		},
	}
	seen := map[string]bool{}
	for _, b := range blocks {
		if b.name == "subscribe" {
			seen[b.name] = true
			runSubscribe(t, b, work, env, rdb)
			continue
		}
		if b.name != "" {
			if _, ok := checks[b.name]; !ok {
				t.Errorf("%s: no check for this block name in runbook_test.go", b)
			}
			seen[b.name] = true
		}
		if prepare := before[b.name]; prepare != nil {
			prepare(t)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd := exec.CommandContext(ctx, "bash", "-e", "-c", b.script)
		cmd.Dir, cmd.Env = work, env
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("%s failed: %v\n--- script\n%s\n--- output\n%s", b, err, b.script, out)
		}
		t.Logf("%s ok:\n%s", b, truncate(string(out), 1500))
		if check := checks[b.name]; check != nil {
			check(t)
		}
	}
	for name := range checks {
		if !seen[name] {
			t.Errorf("docs/runbook.md has no `# runbook-test: %s` block any more", name)
		}
	}
	if !seen["subscribe"] {
		t.Error("docs/runbook.md has no `# runbook-test: subscribe` block (redis-cli PSUBSCRIBE)")
	}
}

// runSubscribe starts the runbook's redis-cli PSUBSCRIBE, publishes a
// message on a pipeline channel and checks redis-cli prints it.
func runSubscribe(t *testing.T, b runbookBlock, dir string, env []string, rdb *redis.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-e", "-c", "exec "+strings.TrimSpace(strings.SplitN(b.script, "\n", 2)[1]))
	cmd.Dir, cmd.Env = dir, env
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	// The messages are JSON with the marker as id and source, as pipeline
	// messages are: other tests subscribed to the same channels of the
	// shared Redis read them and pass them by as another source's.
	marker := testenv.UniqueName("runbook-")
	news := fmt.Sprintf(`{"id":%q,"source_name":%q}`, marker, marker)
	video := fmt.Sprintf(`{"id":%q,"source_name":%q}`, marker+"-video", marker)
	var got []string
	subscribed := 0
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("%s: redis-cli exited; output:\n%s\nstderr:\n%s", b, strings.Join(got, "\n"), stderr.String())
			}
			got = append(got, line)
			// One confirmation per pattern: "psubscribe", the pattern, the
			// count. Redis confirms a pattern once it is active.
			if line == "psubscribe" {
				subscribed++
				if subscribed == 2 {
					for _, m := range [][2]string{{"articles:news", news}, {"content:video", video}} {
						if err := rdb.Publish(ctx, m[0], m[1]).Err(); err != nil {
							t.Fatalf("publish: %v", err)
						}
					}
				}
			}
			if line == video {
				joined := strings.Join(got, "\n")
				if !strings.Contains(joined, "articles:news\n"+news) {
					t.Errorf("%s: message on articles:news not shown:\n%s", b, joined)
				}
				t.Logf("%s ok:\n%s", b, truncate(joined, 1500))
				return
			}
		case <-ctx.Done():
			t.Fatalf("%s: the published messages did not show up within a minute; output:\n%s\nstderr:\n%s", b, strings.Join(got, "\n"), stderr.String())
		}
	}
}

func openDB(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func mustExec(t *testing.T, db *sql.DB, query string) {
	t.Helper()
	if _, err := db.Exec(query); err != nil {
		t.Fatalf("%v\n%s", err, query)
	}
}

// expectRow fails unless query returns one row whose single column is true.
func expectRow(t *testing.T, db *sql.DB, query string) {
	t.Helper()
	var ok bool
	if err := db.QueryRow(query).Scan(&ok); err != nil {
		t.Errorf("%s: %v", query, err)
		return
	}
	if !ok {
		t.Errorf("not true: %s", query)
	}
}

func seedClassifier(t *testing.T, db *sql.DB) {
	t.Helper()
	mustExec(t, db, `
		INSERT INTO dead_letter_queue (content_id, source_name, index_name, error_message, error_code, retry_count, max_retries, next_retry_at, created_at, last_attempt_at)
		VALUES
		  ('dlq-news-exhausted', 'demo_news', 'demo_news_raw_content', 'elasticsearch: context deadline exceeded', 'ES_TIMEOUT', 5, 5, NOW() + INTERVAL '1 hour', NOW() - INTERVAL '2 hours', NOW() - INTERVAL '10 minutes'),
		  ('dlq-news-waiting', 'demo_news', 'demo_news_raw_content', 'elasticsearch: context deadline exceeded', 'ES_TIMEOUT', 1, 5, NOW() + INTERVAL '1 hour', NOW() - INTERVAL '1 hour', NOW() - INTERVAL '5 minutes'),
		  ('dlq-metro-validation', 'demo_metro', 'demo_metro_raw_content', 'empty body', 'VALIDATION_ERROR', 0, 0, NOW(), NOW() - INTERVAL '3 hours', NOW() - INTERVAL '3 hours')`)
	mustExec(t, db, `
		INSERT INTO dead_letter_queue (id, content_id, source_name, index_name, error_message, error_code, retry_count, max_retries, next_retry_at)
		VALUES ('`+placeholderID+`', 'dlq-placeholder', 'demo_sports', 'demo_sports_raw_content', 'url scheme ftp', 'VALIDATION_ERROR', 0, 0, NOW())`)
	mustExec(t, db, `
		INSERT INTO classification_history (content_id, claim_id, source_name, index_name, content_type, quality_score, topics, is_crime_related, confidence, classifier_version)
		VALUES ('hist-1', 'claim-1', 'demo_news', 'demo_news_raw_content', 'article', 70, '{crime}', TRUE, 0.8, 'test')`)
	mustExec(t, db, `
		INSERT INTO source_reputation (source_name, total_documents, classified_documents, failed_documents, crime_documents, quality_sum)
		VALUES ('demo_news', 10, 8, 2, 3, 560)`)
}

func seedPublisher(t *testing.T, db *sql.DB) {
	t.Helper()
	mustExec(t, db, `
		INSERT INTO classified_outbox (content_id, source_name, index_name, content_type, topics, quality_score, is_crime_related, crime_subcategory, title, url, status, retry_count, error_message, published_at, next_retry_at)
		VALUES
		  ('out-published', 'demo_news', 'demo_news_classified_content', 'article', '{}', 60, FALSE, NULL, 't', 'https://x/1', 'published', 0, NULL, NOW() - INTERVAL '5 minutes', NULL),
		  ('out-pending', 'demo_news', 'demo_news_classified_content', 'article', '{crime}', 60, TRUE, 'violent_crime', 't', 'https://x/2', 'pending', 0, NULL, NULL, NULL),
		  ('out-news-exhausted', 'demo_news', 'demo_news_classified_content', 'video', '{}', 60, FALSE, NULL, 't', 'https://x/3', 'failed', 5, 'redis: i/o timeout', NULL, NOW() + INTERVAL '1 hour'),
		  ('out-news-retrying', 'demo_news', 'demo_news_classified_content', 'article', '{}', 60, FALSE, NULL, 't', 'https://x/4', 'failed', 2, 'redis: i/o timeout', NULL, NOW() + INTERVAL '1 hour'),
		  ('out-metro-exhausted', 'demo_metro', 'demo_metro_classified_content', 'article', '{}', 60, FALSE, NULL, 't', 'https://x/5', 'failed', 5, 'redis: connection refused', NULL, NOW() + INTERVAL '1 hour')`)
	mustExec(t, db, `
		INSERT INTO classified_outbox (id, content_id, source_name, index_name, content_type, quality_score, title, url, status, published_at)
		VALUES ('`+placeholderID+`', 'out-placeholder', 'demo_sports', 'demo_sports_classified_content', 'article', 50, 't', 'https://x/6', 'published', NOW())`)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "\n..."
}

// seedIndexManager writes one audit entry, so the index-manager's dump holds
// a row the restore must bring back.
func seedIndexManager(t *testing.T, db *sql.DB) {
	t.Helper()
	if _, err := db.Exec(`INSERT INTO audit_log (actor, action, target, outcome) VALUES ('runbook-test', 'create', 'demo_news_raw_content', 'success')`); err != nil {
		t.Fatalf("seed audit_log: %v", err)
	}
}

func count(t *testing.T, db *sql.DB, table string) int {
	t.Helper()
	var n int
	if err := db.QueryRow(`SELECT COUNT(*) FROM ` + table).Scan(&n); err != nil {
		t.Fatalf("count %s: %v", table, err)
	}
	return n
}
