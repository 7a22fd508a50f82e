package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// The tests that kill a node of the Redis Cluster of scripts/services.sh
// (the publisher's sharded sink, the end-to-end failover) find the master
// of a channel, its process, and start the node again afterwards with
// these.

// RedisSlotMaster returns the address of the master of c that owns key's
// slot.
func RedisSlotMaster(t testing.TB, c *redis.ClusterClient, key string) string {
	t.Helper()
	ctx := context.Background()
	slot, err := c.ClusterKeySlot(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	ranges, err := c.ClusterSlots(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range ranges {
		if int64(r.Start) <= slot && slot <= int64(r.End) && len(r.Nodes) > 0 {
			return r.Nodes[0].Addr
		}
	}
	t.Fatalf("no master owns slot %d", slot)
	return ""
}

// RedisNodePID returns the process id of the Redis server at addr, a node
// of c, as its INFO reports it (asked as c's user).
func RedisNodePID(t testing.TB, c *redis.ClusterClient, addr string) int {
	t.Helper()
	o := c.Options()
	n := redis.NewClient(&redis.Options{Addr: addr, Username: o.Username, Password: o.Password})
	defer n.Close()
	info, err := n.Info(context.Background(), "server").Result()
	if err != nil {
		t.Fatalf("info server of %s: %v", addr, err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			if pid, err := strconv.Atoi(v); err == nil && pid > 1 {
				return pid
			}
		}
	}
	t.Fatalf("no process_id in INFO of %s", addr)
	return 0
}

// ServicesUp runs `scripts/services.sh up` with the test's environment (the
// cluster settings included): it starts whatever node of the clusters is
// not running and waits until each cluster is whole. The script is the one
// of the repository the test runs in, found above its working directory.
func ServicesUp() error {
	dir, err := os.Getwd()
	if err != nil {
		return err
	}
	script := ""
	for ; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "scripts", "services.sh")); err == nil {
			script = filepath.Join(dir, "scripts", "services.sh")
			break
		}
		if filepath.Dir(dir) == dir {
			return errors.New("no scripts/services.sh above the working directory")
		}
	}
	cmd := exec.Command(script, "up")
	cmd.Env = os.Environ()
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("scripts/services.sh up: %w\n%s", err, out)
	}
	return nil
}
