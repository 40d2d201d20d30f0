package lockimpl

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// brokenCancelKeepEntry is "broken-cancel-keep".
var brokenCancelKeepEntry = Entry{Name: "broken-cancel-keep", Broken: true, Factory: newCancelKeep, Topology: "single",
	Description: "SetNX's commands over a hand-written RESP client on one connection whose cancelled read (a context cancel, made a read deadline) keeps the connection: the reply still on its way is read as the next command's (redis-py asyncio's CVE-2023-28858, go-redis's CVE-2025-29923)"}

// cancelKeep is SetNX's protocol (SET NX PX, compare-and-delete and
// compare-and-PEXPIRE scripts) over keepClient, a hand-written RESP
// client with one mistake: a read its caller's cancel interrupted leaves
// the connection in use, its reply unread.
type cancelKeep struct {
	c   *keepClient
	now func() int64
}

func newCancelKeep(env Env) (Locker, error) {
	if len(env.Addrs) == 0 {
		return nil, errors.New("no redis address")
	}
	d := dialer(env)
	if d == nil {
		d = (&net.Dialer{Timeout: 5 * time.Second}).DialContext
	}
	// The client takes Env's hooks as go-redis does: each hook's DialHook
	// around the dial and its ProcessHook around each command.
	c := &keepClient{addr: env.Addrs[0], user: env.Username, password: env.Password, timeout: cmp.Or(env.OpTimeout, 3*time.Second)}
	dial, process := redis.DialHook(d), redis.ProcessHook(c.roundTrip)
	for i := len(env.Hooks) - 1; i >= 0; i-- {
		dial, process = env.Hooks[i].DialHook(dial), env.Hooks[i].ProcessHook(process)
	}
	c.dial, c.process = dial, process
	return &cancelKeep{c: c, now: ClockOf(env)}, nil
}

// Acquire implements Locker.
func (k *cancelKeep) Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	l := Lease{Key: key, Token: NewToken(), Acquired: time.Duration(k.now()), TTL: ttl}
	v, err := k.c.do(ctx, "set", key, l.Token, "px", ttl.Milliseconds(), "nx")
	switch {
	case errors.Is(err, redis.Nil):
		return l, ErrNotAcquired
	case err != nil:
		return l, firstErr("acquire", key, err)
	case v != "OK":
		return l, fmt.Errorf("acquire %s: unexpected reply %v", key, v)
	}
	return l, nil
}

// Release implements Locker.
func (k *cancelKeep) Release(ctx context.Context, l Lease) error {
	return k.script(ctx, "release", ReleaseScriptSource, l.Key, l.Token)
}

// Extend implements Locker.
func (k *cancelKeep) Extend(ctx context.Context, l Lease, ttl time.Duration) (Lease, error) {
	call := time.Duration(k.now())
	if err := k.script(ctx, "extend", extendScriptSource, l.Key, l.Token, ttl.Milliseconds()); err != nil {
		return Lease{}, err
	}
	l.Acquired, l.TTL = call, ttl
	return l, nil
}

// script runs a compare-and-X script by EVAL: 1 is done, 0 not held.
func (k *cancelKeep) script(ctx context.Context, what, src, key string, args ...any) error {
	v, err := k.c.do(ctx, append([]any{"eval", src, 1, key}, args...)...)
	if err != nil {
		return firstErr(what, key, err)
	}
	switch v {
	case int64(1):
		return nil
	case int64(0):
		return ErrNotHeld
	}
	return fmt.Errorf("%s %s: unexpected reply %v", what, key, v)
}

// Close implements Closer.
func (k *cancelKeep) Close() error { return k.c.close() }

// keepClient is a RESP client over one connection, one command at a
// time, that gives up on a reply when its caller's context is cancelled:
// the cancel sets the read deadline in the past (context.AfterFunc, the
// way net/http interrupts a read). Its mistake is what it does then: it
// takes the interrupted read for the caller's business, not the
// connection's, and keeps the connection, so the reply still on its way
// is the next command's first read and every reply after it is one
// behind. A correct client closes the connection (go-redis removes a
// connection whose command ended in a context or network error,
// releaseConnToPool and isBadConn at v9.23.0, redis.go:1294-1303 and
// error.go:188-196).
type keepClient struct {
	addr, user, password string
	timeout              time.Duration
	dial                 redis.DialHook
	process              redis.ProcessHook

	mu   sync.Mutex
	conn net.Conn
	rd   *bufio.Reader
}

// do sends args and returns the reply: a string, an int64, nil
// (redis.Nil), a []any, or a Redis error.
func (c *keepClient) do(ctx context.Context, args ...any) (any, error) {
	cmd := redis.NewCmd(ctx, args...)
	err := c.process(ctx, cmd)
	if err != nil {
		return nil, err
	}
	return cmd.Val(), nil
}

// aLongTimeAgo is a read deadline that has passed.
var aLongTimeAgo = time.Unix(1, 0)

func (c *keepClient) roundTrip(ctx context.Context, cmd redis.Cmder) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == nil {
		conn, err := c.dial(ctx, "tcp", c.addr)
		if err != nil {
			cmd.SetErr(err)
			return err
		}
		c.conn, c.rd = conn, bufio.NewReader(conn)
		if err := c.auth(); err != nil {
			c.drop()
			cmd.SetErr(err)
			return err
		}
	}
	_ = c.conn.SetDeadline(time.Now().Add(c.timeout))
	if _, err := c.conn.Write(respCommand(cmd.Args())); err != nil {
		c.drop()
		cmd.SetErr(err)
		return err
	}
	stop := context.AfterFunc(ctx, func() { _ = c.conn.SetReadDeadline(aLongTimeAgo) })
	v, err := readResp(c.rd)
	stop()
	if err != nil {
		if ctx.Err() != nil {
			// The mistake: the caller cancelled, so the connection is
			// thought sound and kept, its reply unread.
			err = ctx.Err()
		} else if !isRespErr(err) {
			c.drop()
		}
		cmd.SetErr(err)
		return err
	}
	cmd.(*redis.Cmd).SetVal(v)
	return nil
}

// auth authenticates a new connection, if Redis wants a password.
func (c *keepClient) auth() error {
	if c.password == "" {
		return nil
	}
	args := []any{"auth", c.password}
	if c.user != "" {
		args = []any{"auth", c.user, c.password}
	}
	_ = c.conn.SetDeadline(time.Now().Add(c.timeout))
	if _, err := c.conn.Write(respCommand(args)); err != nil {
		return err
	}
	_, err := readResp(c.rd)
	return err
}

func (c *keepClient) drop() {
	_ = c.conn.Close()
	c.conn, c.rd = nil, nil
}

func (c *keepClient) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn != nil {
		c.drop()
	}
	return nil
}

// respCommand is args as a RESP array of bulk strings.
func respCommand(args []any) []byte {
	b := append([]byte{'*'}, strconv.Itoa(len(args))...)
	b = append(b, '\r', '\n')
	for _, a := range args {
		var s string
		switch v := a.(type) {
		case string:
			s = v
		case int:
			s = strconv.Itoa(v)
		case int64:
			s = strconv.FormatInt(v, 10)
		default:
			s = fmt.Sprint(v)
		}
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(s)), 10)
		b = append(b, '\r', '\n')
		b = append(b, s...)
		b = append(b, '\r', '\n')
	}
	return b
}

// respErr is an error reply of Redis (redis.Error).
type respErr string

func (e respErr) Error() string { return string(e) }
func (respErr) RedisError()     {}

func isRespErr(err error) bool {
	var r respErr
	return errors.As(err, &r) || errors.Is(err, redis.Nil)
}

// readResp reads one RESP2 reply.
func readResp(rd *bufio.Reader) (any, error) {
	line, err := rd.ReadString('\n')
	if err != nil {
		return nil, err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return nil, fmt.Errorf("bad reply line %q", line)
	}
	body := line[1 : len(line)-2]
	switch line[0] {
	case '+':
		return body, nil
	case '-':
		return nil, respErr(body)
	case ':':
		return strconv.ParseInt(body, 10, 64)
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return nil, redis.Nil
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(rd, b); err != nil {
			return nil, err
		}
		return string(b[:n]), nil
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return nil, redis.Nil
		}
		out := make([]any, n)
		for i := range out {
			if out[i], err = readResp(rd); err != nil && !errors.Is(err, redis.Nil) {
				return nil, err
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("bad reply line %q", line)
}
