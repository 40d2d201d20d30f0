package cluster

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// ProbeKey returns a key under the prefix for a probe (its own hash tag
// i, so that a cluster's probes can land on every master).
func (e ExternalConfig) ProbeKey(i int) string {
	return e.KeyPrefix + "{probe" + strconv.Itoa(i) + "}"
}

// probe runs, on each master, the commands the locks send, on keys under
// the prefix, and names the first the user may not run. Its keys are
// deleted again.
func (c *Cluster) probe(ctx context.Context) error {
	masters, err := c.masterKeys(ctx)
	if err != nil {
		return err
	}
	for addr, key := range masters {
		rc := redis.NewClient(c.Options(addr))
		err := c.probeOn(ctx, rc, key)
		rc.Close()
		if err != nil {
			return fmt.Errorf("redis %s: %w", addr, err)
		}
	}
	return nil
}

// probeScript reads a key from Lua, as the locks' scripts do.
var probeScript = redis.NewScript(`return redis.call('GET', KEYS[1])`)

func (c *Cluster) probeOn(ctx context.Context, rc *redis.Client, key string) error {
	fence := key + ":fence"
	type step struct {
		cmd, why string
		run      func() error
	}
	steps := []step{
		{"SET", "acquires with SET NX PX", func() error { return rc.SetNX(ctx, key, "probe", 10*time.Second).Err() }},
		{"GET", "reads the holder", func() error { return rc.Get(ctx, key).Err() }},
		{"PEXPIRE", "extends", func() error { return rc.PExpire(ctx, key, 10*time.Second).Err() }},
		{"EVAL", "releases and extends with Lua", func() error { return probeScript.Eval(ctx, rc, []string{key}).Err() }},
		{"EVALSHA", "runs its Lua scripts by hash", func() error { return probeScript.EvalSha(ctx, rc, []string{key}).Err() }},
		{"INCR", "counts fencing tokens", func() error { return rc.Incr(ctx, fence).Err() }},
		{"DEL", "releases, and deletes its keys at the end", func() error { return rc.Del(ctx, key, fence).Err() }},
		{"SCAN", "finds its keys to delete them at the end", func() error {
			return rc.Scan(ctx, 0, globEscape(c.external.KeyPrefix)+"*", 10).Err()
		}},
	}
	if c.external.Wait {
		steps = append(steps, step{"WAIT", "waits for a replica (setnx-wait)", func() error { return rc.Wait(ctx, 0, 0).Err() }})
	}
	for _, s := range steps {
		err := s.run()
		if err == nil || errors.Is(err, redis.Nil) {
			continue
		}
		msg := err.Error()
		switch {
		case strings.HasPrefix(msg, "NOPERM") && strings.Contains(msg, "key"):
			return fmt.Errorf("user %q may not touch key %s with %s (%s): allow the key pattern %s* (ACL SETUSER %s ~%s*) or choose a --key-prefix it may use",
				c.userName(), key, s.cmd, msg, c.external.KeyPrefix, c.userName(), c.external.KeyPrefix)
		case strings.HasPrefix(msg, "NOPERM"):
			return fmt.Errorf("user %q may not run %s, which lockcheck needs (it %s): ACL SETUSER %s +%s", c.userName(), s.cmd, s.why, c.userName(), strings.ToLower(s.cmd))
		}
		return fmt.Errorf("%s on %s: %v", s.cmd, key, err)
	}
	return nil
}

func (c *Cluster) userName() string {
	if c.User == "" {
		return "default"
	}
	return c.User
}
