// Command lockproc is an example lock process for lockcheck run --lock-cmd:
// the setnx lock (SET key token NX PX ttl, Lua compare-and-delete release,
// compare-and-PEXPIRE extend) behind lockcheck's JSON-lines protocol. A lock
// in any language follows the same shape: read the Redis endpoints from the
// environment, read one request per line on stdin, answer each on stdout,
// concurrently, in any order, and exit when stdin closes.
//
//	lockcheck run --lock-cmd "go run ./examples/lockproc"
package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

type request struct {
	ID    int64  `json:"id"`
	Op    string `json:"op"`
	Key   string `json:"key"`
	TTLms int64  `json:"ttl_ms"`
	Token string `json:"token"`
}

type reply struct {
	ID    int64  `json:"id"`
	OK    bool   `json:"ok"`
	Token string `json:"token,omitempty"`
	Error string `json:"error,omitempty"`
}

var (
	release = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`)
	extend  = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) else return 0 end`)
)

func main() {
	addrs := strings.Split(os.Getenv("LOCKCHECK_REDIS_ADDRS"), ",")
	if addrs[0] == "" {
		fmt.Fprintln(os.Stderr, "lockproc: LOCKCHECK_REDIS_ADDRS is not set (run me with lockcheck run --lock-cmd)")
		os.Exit(2)
	}
	// No retries: a retried SET NX whose first reply was lost would read
	// as a failure while we hold the lock.
	opts := &redis.Options{Addr: addrs[0], Password: os.Getenv("LOCKCHECK_REDIS_PASSWORD"), MaxRetries: -1, PoolSize: 256}
	var c redis.UniversalClient = redis.NewClient(opts)
	if os.Getenv("LOCKCHECK_TOPOLOGY") == "sentinel" {
		c = redis.NewFailoverClient(&redis.FailoverOptions{MasterName: os.Getenv("LOCKCHECK_MASTER_NAME"),
			SentinelAddrs: strings.Split(os.Getenv("LOCKCHECK_SENTINELS"), ","), Password: opts.Password, MaxRetries: -1, PoolSize: 256})
	}
	defer c.Close()

	out := bufio.NewWriter(os.Stdout)
	var mu sync.Mutex
	var wg sync.WaitGroup
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		var req request
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			fmt.Fprintf(os.Stderr, "lockproc: bad request %q: %v\n", in.Text(), err)
			os.Exit(1)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := handle(c, req)
			b, _ := json.Marshal(r)
			mu.Lock()
			out.Write(append(b, '\n'))
			out.Flush()
			mu.Unlock()
		}()
	}
	wg.Wait()
}

func handle(c redis.UniversalClient, req request) reply {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r := reply{ID: req.ID}
	var err error
	switch req.Op {
	case "acquire":
		var b [16]byte
		_, _ = rand.Read(b[:])
		token := hex.EncodeToString(b[:])
		err = c.SetArgs(ctx, req.Key, token, redis.SetArgs{Mode: "NX", TTL: time.Duration(req.TTLms) * time.Millisecond}).Err()
		r.OK, r.Token = err == nil, token
	case "release":
		var n int64
		n, err = release.Run(ctx, c, []string{req.Key}, req.Token).Int64()
		r.OK = err == nil && n == 1
	case "extend":
		var n int64
		n, err = extend.Run(ctx, c, []string{req.Key}, req.Token, req.TTLms).Int64()
		r.OK = err == nil && n == 1
	default:
		err = fmt.Errorf("unknown op %q", req.Op)
	}
	switch {
	case errors.Is(err, redis.Nil):
		r.OK, r.Token = false, "" // definite: the key is taken
	case err != nil:
		r.OK, r.Token, r.Error = false, "", err.Error() // indeterminate
	}
	return r
}
