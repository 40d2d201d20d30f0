package process_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/lockimpl"
	"github.com/lockcheck/lockcheck/lockimpl/process"
)

// fakeScoped grants every acquire of "free" as a scope, refuses others,
// and keeps the watches so that the test can take a lease away.
type fakeScoped struct{ watches chan *lockimpl.Watch }

func (f fakeScoped) Acquire(_ context.Context, key string, ttl time.Duration) (lockimpl.Lease, error) {
	switch key {
	case "free":
	case "breaker":
		return lockimpl.Lease{}, lockimpl.ErrNotSent
	case "split":
		return lockimpl.Lease{}, fmt.Errorf("acquire split: %w", lockimpl.ErrUndone)
	default:
		return lockimpl.Lease{}, lockimpl.ErrNotAcquired
	}
	w := lockimpl.NewScope()
	f.watches <- w
	return lockimpl.Lease{Key: key, Token: "t-" + key, TTL: ttl, Watch: w}, nil
}
func (fakeScoped) Release(context.Context, lockimpl.Lease) error { return nil }
func (fakeScoped) Extend(context.Context, lockimpl.Lease, time.Duration) (lockimpl.Lease, error) {
	return lockimpl.Lease{}, errors.New("no extend")
}
func (fakeScoped) Scope() string { return "a fake scope" }

// TestServe_Protocol: Serve answers a ping with the lock's scope, an
// acquire with its token, a definite refusal, not_sent or undone, an extend's error as
// indeterminate, and writes a lost event when the lock lets a lease go.
func TestServe_Protocol(t *testing.T) {
	f := fakeScoped{watches: make(chan *lockimpl.Watch, 1)}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- process.Serve(f, time.Second, inR, outW); outW.Close() }()
	lines := bufio.NewScanner(outR)
	ask := func(req string) map[string]any {
		t.Helper()
		if _, err := io.WriteString(inW, req+"\n"); err != nil {
			t.Fatal(err)
		}
		if !lines.Scan() {
			t.Fatalf("no reply to %s", req)
		}
		var m map[string]any
		if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	if r := ask(`{"id":1,"op":"ping"}`); r["ok"] != true || r["scope"] != "a fake scope" {
		t.Errorf("ping: %v", r)
	}
	if r := ask(`{"id":2,"op":"acquire","key":"taken","ttl_ms":1000}`); r["ok"] != false || r["error"] != nil {
		t.Errorf("refused acquire: %v, want a definite ok false", r)
	}
	if r := ask(`{"id":5,"op":"acquire","key":"breaker","ttl_ms":1000}`); r["not_sent"] != true || r["error"] == nil {
		t.Errorf("acquire never sent: %v, want not_sent with its error", r)
	}
	if r := ask(`{"id":6,"op":"acquire","key":"split","ttl_ms":1000}`); r["undone"] != true || r["ok"] == true || r["error"] != nil {
		t.Errorf("acquire undone: %v, want undone alone", r)
	}
	if r := ask(`{"id":3,"op":"acquire","key":"free","ttl_ms":1000}`); r["ok"] != true || r["token"] != "t-free" {
		t.Errorf("acquire: %v", r)
	}
	if r := ask(`{"id":4,"op":"extend","key":"free","token":"t-free","ttl_ms":1000}`); !strings.Contains(r["error"].(string), "no extend") {
		t.Errorf("extend: %v, want its error", r)
	}
	(<-f.watches).Lose(errors.New("gone"))
	if !lines.Scan() || !strings.Contains(lines.Text(), `"event":"lost"`) || !strings.Contains(lines.Text(), `"token":"t-free"`) {
		t.Errorf("after the loss: %q, want a lost event of t-free", lines.Text())
	}
	inW.Close()
	if err := <-done; err != nil {
		t.Errorf("Serve: %v", err)
	}
}

// TestEnvFromProcess_DialMap: a served lock dials where LOCKCHECK_DIAL_MAP
// says for each address Redis or a Sentinel announces, and where it is
// told for any other; the map lockcheck hands a process holds exactly the
// addresses its DialAddr moves.
func TestEnvFromProcess_DialMap(t *testing.T) {
	t.Setenv("LOCKCHECK_DIAL_MAP", "127.0.0.1:7001=127.0.0.1:6001,127.0.0.1:7002=127.0.0.1:6002")
	env := process.EnvFromProcess()
	for from, want := range map[string]string{"127.0.0.1:7001": "127.0.0.1:6001", "127.0.0.1:7002": "127.0.0.1:6002", "127.0.0.1:6379": "127.0.0.1:6379"} {
		if env.DialAddr == nil {
			t.Fatal("DialAddr not set")
		}
		if got := env.DialAddr(from); got != want {
			t.Errorf("DialAddr(%s) = %s, want %s", from, got, want)
		}
	}
	t.Setenv("LOCKCHECK_DIAL_MAP", "")
	if env := process.EnvFromProcess(); env.DialAddr != nil {
		t.Error("no map: DialAddr set, want nil (dial what is announced)")
	}
}
