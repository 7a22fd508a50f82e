package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisStartTimeout bounds how long a private Redis may take to answer
// PING after it is started.
const redisStartTimeout = 30 * time.Second

// RedisServer is a Redis of one test's own, on a free port, that the test
// may stop and start again (the soak's Redis restart): the shared Redis of
// scripts/services.sh serves every other test and must stay up. It keeps
// its data in an append-only file (fsync every second, flushed at a clean
// stop), as a production Redis that holds the publisher's mirror streams
// does, so a restart loses no stream entry.
type RedisServer struct {
	t    testing.TB
	dir  string
	port int
	log  *logFile
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
}

// PrivateRedis starts a Redis of the test's own and stops it when the test
// ends. Without redis-server the test is skipped, or fails under CI=true.
func PrivateRedis(t testing.TB) *RedisServer {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		Unavailable(t, "redis-server (private; scripts/services.sh up installs it)", err)
	}
	dir := t.TempDir()
	r := &RedisServer{t: t, dir: dir, port: FreePort(t), log: &logFile{path: filepath.Join(dir, "redis.log")}}
	r.start(bin)
	t.Cleanup(func() { r.stop() })
	return r
}

// Addr is the server's host:port.
func (r *RedisServer) Addr() string { return "127.0.0.1:" + strconv.Itoa(r.port) }

// URL is the server's address as a redis:// URL.
func (r *RedisServer) URL() string { return "redis://" + r.Addr() }

// Client returns a client of the server, closed when the test ends.
func (r *RedisServer) Client() *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: r.Addr()})
	r.t.Cleanup(func() { _ = c.Close() })
	return c
}

// Restart stops the server (SIGTERM: its clients see their connections
// close and every subscription end), waits for it to exit, and starts it
// again on the same port after down has passed.
func (r *RedisServer) Restart(down time.Duration) {
	r.t.Helper()
	r.stop()
	time.Sleep(down)
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		r.t.Fatalf("restart redis: %v", err)
	}
	r.start(bin)
}

func (r *RedisServer) start(bin string) {
	r.t.Helper()
	out, err := r.log.open()
	if err != nil {
		r.t.Fatalf("start redis: %v", err)
	}
	cmd := exec.Command(bin, "--port", strconv.Itoa(r.port), "--bind", "127.0.0.1",
		"--dir", r.dir, "--save", "", "--appendonly", "yes", "--appendfsync", "everysec", "--protected-mode", "yes")
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		_ = out.Close()
		r.t.Fatalf("start redis: %v", err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		_ = out.Close()
		close(done)
	}()
	r.cmd, r.done = cmd, done
	c := redis.NewClient(&redis.Options{Addr: r.Addr(), MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(redisStartTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return
		}
		select {
		case <-done:
			r.t.Fatalf("redis on %s exited at start:\n%s", r.Addr(), r.log.Tail(20))
		default:
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("redis on %s did not answer within %s: %v\n%s", r.Addr(), redisStartTimeout, err, r.log.Tail(20))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop ends the server and waits for it to exit; a server that ignores
// SIGTERM for 10 s is killed.
func (r *RedisServer) stop() {
	if r.cmd == nil || r.cmd.Process == nil {
		return
	}
	_ = r.cmd.Process.Signal(os.Interrupt)
	select {
	case <-r.done:
	case <-time.After(10 * time.Second):
		_ = r.cmd.Process.Kill()
		<-r.done
	}
	r.cmd = nil
}

// String names the server in logs.
func (r *RedisServer) String() string { return fmt.Sprintf("redis %s", r.Addr()) }
