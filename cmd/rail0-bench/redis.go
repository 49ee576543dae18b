package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	rail0 "github.com/rail0/rail0-go"
	"github.com/rail0/rail0-go/ratelimit"
	"github.com/rail0/rail0-go/redislimit"
)

// newRedis returns a client of addrs, a Redis Cluster client when cluster
// is set. It has short timeouts, as the redislimit documentation advises.
// It gives up quickly when nothing listens there.
func newRedis(addrs []string, cluster bool) redis.UniversalClient {
	return redis.NewUniversalClient(&redis.UniversalOptions{Addrs: addrs, IsClusterMode: cluster,
		DialTimeout: time.Second, DialerRetries: 1, ReadTimeout: time.Second, WriteTimeout: time.Second,
		PoolTimeout: time.Second, ContextTimeoutEnabled: true})
}

// redisAddrs splits the -redis flag: one address, or a cluster's nodes.
func redisAddrs(s string) []string {
	var addrs []string
	for a := range strings.SplitSeq(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			addrs = append(addrs, a)
		}
	}
	return addrs
}

// counter is a go-redis hook that counts the limiter's round trips to the
// server: its script calls. The handshake of each new connection is not
// the limiter's doing, and is not counted.
type counter struct{ n atomic.Int64 }

func (c *counter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if isScript(cmd.Name()) {
			c.n.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (c *counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			if isScript(cmd.Name()) {
				c.n.Add(1)
				break
			}
		}
		return next(ctx, cmds)
	}
}

// isScript reports whether a command runs a Lua script.
func isScript(name string) bool {
	switch strings.ToLower(name) {
	case "eval", "evalsha", "eval_ro", "evalsha_ro":
		return true
	}
	return false
}

// redisDoer is the SDK with 429 retries on. Its limiter is a
// redislimit.Limiter in the Redis (or Redis Cluster) at o.redisAddr, under
// o.prefix. All the processes of a run share it. paced adds pacing at the
// gateway's budget. A client whose store fails mid-run keeps going on its
// local fallback. Its fail-open warnings are not printed then, one per
// call.
func redisDoer(paced bool) doer {
	return func(o options, url string, rt http.RoundTripper) (caller, error) {
		if o.prefix == "" {
			return caller{}, errors.New("a strategy sharing Redis needs -prefix")
		}
		rdb := newRedis(redisAddrs(o.redisAddr), o.cluster)
		trips := &counter{}
		rdb.AddHook(trips)
		lim := redislimit.New(rdb, redislimit.WithKeyPrefix(o.prefix))
		var logs slog.Handler = slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})
		if o.cluster {
			logs = slog.DiscardHandler
		}
		opts := []rail0.Option{rail0.WithLimiter(lim), rail0.WithLogger(slog.New(logs))}
		if paced {
			opts = append(opts, rail0.WithPacing(budget(o)))
		}
		c, err := sdkDoer(opts...)(o, url, rt)
		if err != nil {
			rdb.Close()
			return c, err
		}
		// A long-lived process has the limiter's script in Redis's cache.
		// The first call of a fresh one pays a second round trip to load
		// it. Load it before the measured calls, on a partition of its own.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		warm := ratelimit.Reservation{Partition: fmt.Sprintf("warm-up-%d", o.child), MaxWait: time.Second}
		if adm, err := lim.Reserve(ctx, warm); err == nil && adm.Ticket != 0 {
			_ = lim.Release(ctx, warm.Partition, adm.Ticket)
		}
		trips.n.Store(0) // only the calls' round trips
		c.trips = trips.n.Load
		c.close = func() { rdb.Close() }
		return c, nil
	}
}

// pingRedis reports why the Redis at addr cannot serve a run, or "".
func pingRedis(ctx context.Context, addr string) string {
	rdb := newRedis(redisAddrs(addr), false)
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		return fmt.Sprintf("skipped: Redis unreachable at %s (%v)", addr, err)
	}
	return ""
}

// dropKeys deletes the keys under prefix. They expire anyway, but a run
// should leave nothing behind sooner.
func dropKeys(addr, prefix string) {
	rdb := newRedis(redisAddrs(addr), false)
	defer rdb.Close()
	ctx := context.Background()
	it := rdb.Scan(ctx, 0, prefix+"*", 100).Iterator()
	for it.Next(ctx) {
		rdb.Del(ctx, it.Val())
	}
}

// cluster is a Redis Cluster of three masters and no replicas on
// loopback. The bench starts it for one run, as the outside check
// had it. Losing a master loses its slots.
type cluster struct {
	dir   string
	addrs []string
	procs []*exec.Cmd
}

// clusterTools reports why the bench cannot start a cluster, or "".
func clusterTools() string {
	for _, tool := range []string{"redis-server", "redis-cli"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Sprintf("skipped: %s not found, needed to start a Redis Cluster", tool)
		}
	}
	return ""
}

// clusterPorts picks n ports whose cluster bus ports (port + 10000) are
// free too.
func clusterPorts(ctx context.Context, n int) ([]int, error) {
	free := func(p int) bool {
		ln, err := new(net.ListenConfig).Listen(ctx, "tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			return false
		}
		ln.Close()
		return true
	}
	var ports []int
	for p := 21000 + os.Getpid()%20000; len(ports) < n && p < 55000; p++ {
		if free(p) && free(p+10000) {
			ports = append(ports, p)
		}
	}
	if len(ports) < n {
		return nil, errors.New("no free ports for a Redis Cluster")
	}
	return ports, nil
}

// startCluster starts three redis-server processes in cluster mode. It
// joins them with redis-cli --cluster create. It waits until the cluster
// serves every slot.
func startCluster(ctx context.Context) (*cluster, error) {
	dir, err := os.MkdirTemp("", "rail0-bench-cluster-")
	if err != nil {
		return nil, err
	}
	c := &cluster{dir: dir}
	ports, err := clusterPorts(ctx, 3)
	if err != nil {
		c.close()
		return nil, err
	}
	for _, p := range ports {
		port := strconv.Itoa(p)
		log, err := os.Create(filepath.Join(dir, "redis-"+port+".log"))
		if err != nil {
			c.close()
			return nil, err
		}
		cmd := exec.CommandContext(ctx, "redis-server", "--port", port, "--bind", "127.0.0.1", "--dir", dir,
			"--cluster-enabled", "yes", "--cluster-config-file", "nodes-"+port+".conf",
			"--cluster-node-timeout", "2000", "--save", "", "--appendonly", "no")
		cmd.Stdout, cmd.Stderr = log, log
		err = cmd.Start()
		_ = log.Close() // the child holds its own descriptor
		if err != nil {
			c.close()
			return nil, err
		}
		c.procs = append(c.procs, cmd)
		c.addrs = append(c.addrs, "127.0.0.1:"+port)
	}
	for _, a := range c.addrs {
		if err := waitFor(ctx, func(ctx context.Context) error {
			rdb := redis.NewClient(&redis.Options{Addr: a})
			defer rdb.Close()
			return rdb.Ping(ctx).Err()
		}); err != nil {
			c.close()
			return nil, fmt.Errorf("redis-server %s: %w", a, err)
		}
	}
	create := exec.CommandContext(ctx, "redis-cli", append(append([]string{"--cluster", "create"}, c.addrs...),
		"--cluster-replicas", "0", "--cluster-yes")...)
	if out, err := create.CombinedOutput(); err != nil {
		c.close()
		return nil, fmt.Errorf("redis-cli --cluster create: %w\n%s", err, out)
	}
	for _, a := range c.addrs {
		if err := waitFor(ctx, func(ctx context.Context) error {
			rdb := redis.NewClient(&redis.Options{Addr: a})
			defer rdb.Close()
			info, err := rdb.ClusterInfo(ctx).Result()
			if err == nil && !strings.Contains(info, "cluster_state:ok") {
				err = errors.New("cluster_state is not ok")
			}
			return err
		}); err != nil {
			c.close()
			return nil, fmt.Errorf("cluster at %s: %w", a, err)
		}
	}
	return c, nil
}

// waitFor retries check every 50 ms for up to 10 s.
func waitFor(ctx context.Context, check func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		err := check(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// owner returns the index of the master that holds key's slot.
func (c *cluster) owner(ctx context.Context, key string) (int, error) {
	rdb := redis.NewClient(&redis.Options{Addr: c.addrs[0]})
	defer rdb.Close()
	slot, err := rdb.ClusterKeySlot(ctx, key).Result()
	if err != nil {
		return 0, err
	}
	shards, err := rdb.ClusterShards(ctx).Result()
	if err != nil {
		return 0, err
	}
	for _, sh := range shards {
		for _, r := range sh.Slots {
			if r.Start > slot || slot > r.End {
				continue
			}
			for _, n := range sh.Nodes {
				if i := slices.Index(c.addrs, fmt.Sprintf("%s:%d", n.IP, n.Port)); i >= 0 && n.Role == "master" {
					return i, nil
				}
			}
		}
	}
	return 0, fmt.Errorf("no master holds slot %d", slot)
}

// kill ends master i at once, as a crash would.
func (c *cluster) kill(i int) error {
	if err := c.procs[i].Process.Kill(); err != nil {
		return err
	}
	_ = c.procs[i].Wait() // killed
	return nil
}

// close ends every master still running and removes the cluster's files.
func (c *cluster) close() {
	for _, p := range c.procs {
		if p.ProcessState == nil {
			_ = p.Process.Kill()
			_ = p.Wait() // killed
		}
	}
	_ = os.RemoveAll(c.dir)
}
