package workload

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/lockimpl"
	"github.com/lockcheck/lockcheck/nemesis"
)

func TestConfig_WithDefaults(t *testing.T) {
	c, err := Config{}.WithDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if c.Clients != DefaultClients || c.TTL != DefaultTTL || c.Duration != DefaultDuration || c.Hold != 0 {
		t.Errorf("defaults: got %+v", c)
	}
	if want := 5*time.Millisecond + DefaultTTL/10; c.Margin != want {
		t.Errorf("margin: got %v, want %v", c.Margin, want)
	}
	if c, _ := (Config{Ops: 100}).WithDefaults(); c.Duration != 0 {
		t.Errorf("--ops alone: got duration %v, want none", c.Duration)
	}
	bad := []struct {
		cfg  Config
		want string
	}{
		{Config{Clients: -1}, "--clients"},
		{Config{KeyDist: "pareto"}, "--key-dist"},
		{Config{HoldDist: "normal"}, "--hold-dist"},
		{Config{Retry: "forever"}, "--retry"},
		{Config{TTL: time.Microsecond}, "--ttl"},
		{Config{TTL: 10 * time.Millisecond, Margin: 20 * time.Millisecond}, "margin"},
	}
	for _, b := range bad {
		if _, err := b.cfg.WithDefaults(); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%+v: got %v, want an error naming %s", b.cfg, err, b.want)
		}
	}
}

func TestClient_KeyAndHoldDistributions(t *testing.T) {
	const n = 20000
	uni := &client{rng: rand.New(rand.NewPCG(1, 1))}
	zr := rand.New(rand.NewPCG(1, 2))
	zipf := &client{rng: zr, zipf: rand.NewZipf(zr, 1.1, 1, 9)}
	var u, z [10]int
	for i := 0; i < n; i++ {
		u[uni.pickKey(10)]++
		z[zipf.pickKey(10)]++
	}
	for k, c := range u {
		if c < n/10*8/10 || c > n/10*12/10 {
			t.Errorf("uniform: key %d drawn %d times of %d, want about %d", k, c, n, n/10)
		}
	}
	if z[0] < 3*z[9] {
		t.Errorf("zipf: key 0 drawn %d times, key 9 %d; want a strong skew", z[0], z[9])
	}
	r := &Runner{cfg: Config{Hold: 100 * time.Millisecond}}
	for _, dist := range []string{HoldFixed, HoldExp, HoldUniform} {
		r.cfg.HoldDist = dist
		var sum time.Duration
		for i := 0; i < n; i++ {
			sum += r.holdTime(uni)
		}
		if mean := sum / n; mean < 90*time.Millisecond || mean > 110*time.Millisecond {
			t.Errorf("%s hold: mean %v, want about 100ms", dist, mean)
		}
	}
}

// TestResource_FencedSectionOvertaken: a fenced section is many writes,
// each checked against the highest token, so a stale holder that entered
// before the new holder's first write is accepted only until the new
// holder enters; a lower token after that is rejected at entry; unfenced
// sections are recorded as they were.
func TestResource_FencedSectionOvertaken(t *testing.T) {
	var clock int64
	var ops []history.Op
	r := newResource(func(op history.Op) { ops = append(ops, op) }, func() int64 { return clock })
	stale := lockimpl.Lease{Key: "k", Token: "a", Fence: 1}
	next := lockimpl.Lease{Key: "k", Token: "b", Fence: 2}
	clock = 10
	c1, s1, ok1 := r.Enter(stale)
	clock = 20
	c2, s2, ok2 := r.Enter(next)
	clock = 30
	c3, _, ok3 := r.Enter(stale)
	if !ok1 || !ok2 || ok3 {
		t.Fatalf("entries accepted %v %v %v, want true true false", ok1, ok2, ok3)
	}
	r.Exit(history.Op{Call: c3, Return: c3}, stale, nil, false)
	r.Exit(history.Op{Call: c1, Return: 50}, stale, s1, true)
	r.Exit(history.Op{Call: c2, Return: 60}, next, s2, true)
	if len(ops) != 3 || ops[0].Type != history.Fail || ops[1].Return != 20 || !ops[1].CutShort || ops[2].Return != 60 || ops[2].CutShort {
		t.Errorf("recorded %+v; want the late entry rejected, the overtaken section ended at 20 (cut short), the new one whole", ops)
	}
	c, s, _ := r.Enter(lockimpl.Lease{Key: "u", Token: "x"})
	r.Exit(history.Op{Call: c, Return: 99}, lockimpl.Lease{Key: "u", Token: "x"}, s, true)
	if ops[3].Return != 99 || s != nil {
		t.Errorf("unfenced: %+v, section %v", ops[3], s)
	}
}

// TestRunner_PlayRefusesUnknownKind: a client fault kind neither built
// in nor registered is refused with an error, never silently ignored.
func TestRunner_PlayRefusesUnknownKind(t *testing.T) {
	r := &Runner{faults: newFaults(4)}
	if ids, err := r.Play(rand.New(rand.NewPCG(1, 2)), nemesis.ClientFault{Kind: "nope", N: 2}); err == nil || ids != nil {
		t.Fatalf("Play of an unknown kind: ids %v, error %v; want an error", ids, err)
	}
	if ids, err := r.Play(rand.New(rand.NewPCG(1, 2)), nemesis.ClientFault{Kind: nemesis.ClientCrash, N: 2}); err != nil || len(ids) != 2 {
		t.Fatalf("Play of a crash: ids %v, error %v; want 2 ids", ids, err)
	}
}
