// Package gotest is an example of testing your own Go lock with lockcheck
// from go test (see mylock_test.go). MyLock stands for the lock you ship.
package gotest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockcheck/lockcheck/lockimpl"
)

// MyLock is a user's lock: SET NX PX with a random token, released and
// extended by Lua scripts that check the token.
type MyLock struct {
	rdb *redis.Client
}

var (
	unlock  = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) end return 0`)
	prolong = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) end return 0`)
)

// New is the factory lockcheck calls, with the Redis it started.
func New(env lockimpl.Env) (lockimpl.Locker, error) {
	// MaxRetries -1: a retried SET NX whose first reply was lost would
	// read as "taken" while we hold the lock. Timeouts follow the run's.
	return &MyLock{rdb: redis.NewClient(&redis.Options{Addr: env.Addrs[0], Password: env.Password, MaxRetries: -1,
		PoolSize: env.PoolSize, ReadTimeout: env.OpTimeout, WriteTimeout: env.OpTimeout})}, nil
}

// Acquire implements lockimpl.Locker.
func (m *MyLock) Acquire(ctx context.Context, key string, ttl time.Duration) (lockimpl.Lease, error) {
	var b [16]byte
	_, _ = rand.Read(b[:])
	token := hex.EncodeToString(b[:])
	err := m.rdb.SetArgs(ctx, key, token, redis.SetArgs{Mode: "NX", TTL: ttl}).Err()
	switch {
	case errors.Is(err, redis.Nil):
		return lockimpl.Lease{}, lockimpl.ErrNotAcquired // definite: someone holds it
	case err != nil:
		return lockimpl.Lease{}, fmt.Errorf("acquire %s: %w", key, err) // indeterminate
	}
	return lockimpl.Lease{Key: key, Token: token, TTL: ttl}, nil
}

// Release implements lockimpl.Locker.
func (m *MyLock) Release(ctx context.Context, l lockimpl.Lease) error {
	n, err := unlock.Run(ctx, m.rdb, []string{l.Key}, l.Token).Int64()
	if err != nil {
		return fmt.Errorf("release %s: %w", l.Key, err)
	}
	if n != 1 {
		return lockimpl.ErrNotHeld
	}
	return nil
}

// Extend implements lockimpl.Locker.
func (m *MyLock) Extend(ctx context.Context, l lockimpl.Lease, ttl time.Duration) (lockimpl.Lease, error) {
	n, err := prolong.Run(ctx, m.rdb, []string{l.Key}, l.Token, ttl.Milliseconds()).Int64()
	if err != nil {
		return lockimpl.Lease{}, fmt.Errorf("extend %s: %w", l.Key, err)
	}
	if n != 1 {
		return lockimpl.Lease{}, lockimpl.ErrNotHeld
	}
	l.TTL = ttl
	return l, nil
}

// Close lets lockcheck close the client at the end of the run.
func (m *MyLock) Close() error { return m.rdb.Close() }
