// End to end: a coordinator (harness.Run with Agents) and agents
// (agent.Run in goroutines, the same protocol as processes) over
// loopback, against real redis-server processes. They live here, not in
// harness, so that go test runs them beside harness's long package.
package agent_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/agent"
	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/harness"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/faultrun"
	"github.com/lockcheck/lockcheck/internal/testutil"
	"github.com/lockcheck/lockcheck/internal/version"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/scenario"
	"github.com/lockcheck/lockcheck/workload"
)

// agentSkew is one agent's clock, run off on purpose.
type agentSkew struct {
	skew  time.Duration
	drift int64 // ppm
}

// threeClocks: one agent right, one 300 ms ahead, one drifting 300 ppm
// (under the 500 ppm allowance).
func errString(err error) string {
	if err == nil {
		return ""
	}
	return " (" + err.Error() + ")"
}

var threeClocks = []agentSkew{{}, {skew: 300 * time.Millisecond}, {drift: 300}}

const testToken = "s3cret-agent-token"

// runAgents runs cfg as the coordinator of len(skews) agents in this
// process (goroutines speaking the wire protocol over loopback).
func runAgents(t *testing.T, cfg harness.Config, skews []agentSkew) (*harness.Result, error) {
	t.Helper()
	cfg.Agents, cfg.Token = len(skews), testToken
	addr := make(chan string, 1)
	cfg.Listening = func(a string) { addr <- a }
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(context.Background())
	defer func() {
		cancel()
		wg.Wait()
	}()
	var logs bytes.Buffer
	var logMu sync.Mutex
	go func() {
		var a string
		select {
		case a = <-addr:
		case <-ctx.Done():
			return
		}
		for i, s := range skews {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := agent.Run(ctx, agent.Config{Join: a, Token: testToken, Index: i, Skew: s.skew, Drift: s.drift, JoinTimeout: 10 * time.Second})
				if err != nil && ctx.Err() == nil {
					logMu.Lock()
					logs.WriteString(err.Error() + "\n")
					logMu.Unlock()
				}
			}()
		}
	}()
	res, err := harness.Run(context.Background(), cfg)
	testutil.NoRedisChildren(t)
	logMu.Lock()
	if logs.Len() > 0 {
		t.Logf("agents said: %s", logs.String())
	}
	logMu.Unlock()
	return res, err
}

// agentWorkload is 3 agents × 200 clients on 30 keys, holds uniform in
// [0, 2 TTL] so that many overrun their TTL and release late, each client
// thinking 1 s between attempts. The think time keeps the offered load
// under what two busy cores serve with the race detector on: without it,
// 600 clients retrying at once (600 on 10 keys, 100 ms leases) queued
// their acquires for 0.5 to 2.4 s while CI ran beside them, every
// acquire's interval then spanned up to 24 leases, and the lease model's
// search on a key of 40 such leases ran past its 2 minutes (unknown, not
// valid).
func agentWorkload(seed int64) workload.Config {
	return workload.Config{Clients: 600, Keys: 30, Duration: 5 * time.Second, TTL: 500 * time.Millisecond,
		Hold: 500 * time.Millisecond, HoldDist: workload.HoldUniform, Retry: workload.RetryNone, Think: time.Second, Seed: seed,
		Margin: 50 * time.Millisecond}
}

func agentConfig(t *testing.T, lock string, w workload.Config) harness.Config {
	return harness.Config{Lock: lock, OutDir: t.TempDir(), Workload: w,
		Check: checker.Options{Timeout: 2 * time.Minute, ClockTolerance: 50 * time.Millisecond}}
}

// TestAgents_ThreeClocks: 3 agents × 200 clients, one clock 300 ms
// ahead and one drifting: setnx is valid and broken-del-release invalid,
// judged as one history; the measured offsets find the skew within their
// bound; and with the correction off, the same skew makes setnx
// invalid, which is what the correction prevents.
func TestAgents_ThreeClocks(t *testing.T) {
	testutil.RequireRedis(t)
	res, err := runAgents(t, agentConfig(t, "setnx", agentWorkload(1)), threeClocks)
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != checker.Valid {
		t.Fatalf("setnx on 3 agents: verdict %s, want valid: %+v", res.Verdict, res.Findings.Checkers)
	}
	if len(res.Agents) != 3 || len(res.AgentsLost) != 0 {
		t.Fatalf("agents %+v lost %v, want 3, none lost", res.Agents, res.AgentsLost)
	}
	procs := map[int]bool{}
	var bounded int
	ops, err := history.ReadFile(res.Dir + "/history.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range ops {
		procs[op.Process] = true
		if op.ClockBound > 0 {
			bounded++
		}
	}
	for _, p := range []int{0, 199, 200, 399, 400, 599} {
		if !procs[p] {
			t.Errorf("no op of process %d: every agent's clients are in the one history", p)
		}
	}
	if bounded == 0 {
		t.Errorf("no op carries a clock_bound")
	}
	// Every measurement finds the agent's clock where it was: its skew,
	// plus its drift so far, within the measurement's bound.
	for i, a := range res.Agents {
		if len(a.Clock) < 10 {
			t.Fatalf("agent %d: %d clock measurements, want one every 250ms", i, len(a.Clock))
		}
		for _, m := range a.Clock {
			want := int64(threeClocks[i].skew) + m.At*threeClocks[i].drift/1_000_000
			if d := m.Offset - want; d > m.Bound || -d > m.Bound {
				t.Errorf("agent %d at %v: measured offset %v ± %v, want %v within the bound", i, time.Duration(m.At), time.Duration(m.Offset), time.Duration(m.Bound), time.Duration(want))
			}
		}
	}

	page, err := os.ReadFile(filepath.Join(res.Dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(page, []byte(`<section id="agents">`)) || !bytes.Contains(page, []byte("agent 1")) || !bytes.Contains(page, []byte(res.Agents[1].Offset)) {
		t.Errorf("report.html has no agents section with agent 1's offset %s", res.Agents[1].Offset)
	}

	res, err = runAgents(t, agentConfig(t, "broken-del-release", agentWorkload(1)), threeClocks)
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != checker.Invalid {
		t.Fatalf("broken-del-release on 3 agents: verdict %s, want invalid", res.Verdict)
	}

	cfg := agentConfig(t, "setnx", agentWorkload(1))
	cfg.NoClockCorrection = true
	res, err = runAgents(t, cfg, threeClocks)
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != checker.Invalid {
		t.Fatalf("setnx on 3 agents, clocks uncorrected: verdict %s, want invalid (the 300 ms skew shows false violations)", res.Verdict)
	}
}

// TestAgents_Refusals: another version, an index past N and a wrong
// token are refused with one line each; agents that never join end the
// run with a configuration error naming them.
func TestAgents_Refusals(t *testing.T) {
	testutil.RequireRedis(t)
	cfg := agentConfig(t, "setnx", agentWorkload(1))
	cfg.Agents, cfg.Token, cfg.JoinTimeout = 2, testToken, 2*time.Second
	addr := make(chan string, 1)
	cfg.Listening = func(a string) { addr <- a }
	var agentErr error
	var refusals []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		a := <-addr
		// Another version, and an index past N, speaking the protocol
		// by hand: each gets one refusal line.
		for _, hello := range []agent.Msg{{T: agent.THello, Version: "0.0.0-other", Token: testToken, Index: -1},
			{T: agent.THello, Version: version.Version, Token: testToken, Index: 5}} {
			c, err := net.Dial("tcp", a)
			if err != nil {
				refusals = append(refusals, err.Error())
				continue
			}
			conn := agent.NewConn(c)
			_ = conn.Send(hello)
			m, err := conn.Recv()
			refusals = append(refusals, m.T+": "+m.Error+errString(err))
			conn.Close()
		}
		agentErr = agent.Run(context.Background(), agent.Config{Join: a, Token: "wrong", Index: -1, JoinTimeout: 5 * time.Second})
	}()
	_, err := harness.Run(context.Background(), cfg)
	<-done
	if !errors.Is(err, harness.ErrConfig) || !strings.Contains(err.Error(), "0 of 2 joined") || !strings.Contains(err.Error(), "missing: agent 0, 1") {
		t.Errorf("coordinator: %v, want a configuration error naming the missing agents", err)
	}
	if !errors.Is(agentErr, agent.ErrRefused) || !strings.Contains(agentErr.Error(), "wrong agent token") {
		t.Errorf("agent: %v, want refused for its token", agentErr)
	}
	if len(refusals) != 2 || !strings.Contains(refusals[0], "refuse: agent is lockcheck 0.0.0-other") || !strings.Contains(refusals[1], "refuse: agent index 5: the run has agents 0 to 1") {
		t.Errorf("refusals %q, want another version and an index past N refused", refusals)
	}
	testutil.NoRedisChildren(t)
}

// TestAgents_PauseClient: pause-client played by the agent that owns the
// client, scheduled by the coordinator: a paused holder's stale write on
// one machine overlaps the next holder's on another, so setnx shows a
// double holder, while fenced stays valid, its stale writes rejected by
// the one resource the coordinator serves to every agent.
func TestAgents_PauseClient(t *testing.T) {
	testutil.RequireRedis(t)
	s := faultrun.Case{Workload: faultrun.ShortLeases, Scenario: scenario.Scenario{Nemesis: nemesis.Config{Faults: []string{"pause-client"}, Interval: time.Second, Duration: time.Second},
		Requires: checker.Coverage{checker.StaleHolder: 1}}}
	s.Workload.Clients = 60
	expectAgents(t, s, "setnx", func(r *harness.Result) (bool, string) {
		return faultrun.DoubleHolders(r) > 0 && r.Summary.Paused > 0, "double holders: " + strconv.Itoa(faultrun.DoubleHolders(r))
	})
	expectAgents(t, s, "fenced", func(r *harness.Result) (bool, string) {
		f, _ := r.Findings.Checker("fencing")
		return r.Verdict == checker.Valid && f.Figures["stale_rejected"] > 0, "stale writes rejected: " + strconv.Itoa(int(f.Figures["stale_rejected"]))
	})
}

// TestAgents_LostReply: lost-reply played by each agent's own proxies in
// front of the nodes (the coordinator's fault mirrored onto them): the
// agents' commands are applied and their replies lost. setnx records
// them as indeterminate and stays valid; broken-resend, whose client
// resends them, is caught, as on one machine (TestFault_LostReply).
func TestAgents_LostReply(t *testing.T) {
	testutil.RequireRedis(t)
	w := workload.Config{Clients: 30, Keys: 5, Duration: 6 * time.Second, TTL: time.Second, Hold: 50 * time.Millisecond, OpTimeout: time.Second}
	s := faultrun.Case{Workload: w, Scenario: scenario.Scenario{Nemesis: nemesis.Config{Faults: []string{"lost-reply"}, Interval: time.Second, Duration: 500 * time.Millisecond}}}
	expectAgents(t, s, "setnx", func(r *harness.Result) (bool, string) {
		info := r.Summary.Ops.Get(history.Acquire, history.Info) + r.Summary.Ops.Get(history.Release, history.Info)
		return r.Verdict == checker.Valid && info > 0, "indeterminate acquires and releases: " + strconv.Itoa(int(info))
	})
	expectAgents(t, s, "broken-resend", func(r *harness.Result) (bool, string) {
		l, _ := r.Findings.Checker("linearizable")
		return l.Verdict == checker.Invalid, "linearizable: " + string(l.Verdict)
	})
}

// expectAgents runs s on three agents with seeds 1, 2, ... until ok holds
// on a run that counts, as faultrun.Case.Expect does on one machine.
func expectAgents(t *testing.T, s faultrun.Case, lock string, ok func(*harness.Result) (bool, string)) {
	t.Helper()
	counted := 0
	for seed := int64(1); seed <= 10 && counted < 3; seed++ {
		w := s.Workload
		w.Seed = seed
		cfg := agentConfig(t, lock, w)
		cfg.Nemesis = s.Nemesis
		res, err := runAgents(t, cfg, threeClocks)
		if err != nil {
			t.Fatalf("%s on agents: %v", lock, err)
		}
		good, msg := ok(res)
		t.Logf("%s on agents, seed %d: verdict %s; %s; coverage %v", lock, seed, res.Verdict, msg, res.Findings.Coverage)
		hit := s.Hit(res)
		if good && hit {
			return
		}
		if hit {
			counted++
		}
	}
	t.Fatalf("%s on agents: expectation not met in %d runs that count", lock, counted)
}

// selfSigned is a certificate for 127.0.0.1 and a pool that trusts it.
func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "coordinator"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pool
}

// TestAgents_TLS: over TLS the agents join and the run is judged; an
// agent that does not speak TLS to a coordinator that does never joins.
func TestAgents_TLS(t *testing.T) {
	testutil.RequireRedis(t)
	cert, pool := selfSigned(t)
	w := agentWorkload(1)
	w.Clients, w.Duration = 60, 2*time.Second
	cfg := agentConfig(t, "setnx", w)
	cfg.Agents, cfg.Token = 2, testToken
	cfg.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	addr := make(chan string, 1)
	cfg.Listening = func(a string) { addr <- a }
	errs := make(chan error, 3)
	go func() {
		a := <-addr
		// One without TLS first: refused at the handshake, it is not an
		// agent; then the two with TLS.
		errs <- agent.Run(context.Background(), agent.Config{Join: a, Token: testToken, Index: -1, JoinTimeout: 5 * time.Second})
		for i := range 2 {
			go func() {
				errs <- agent.Run(context.Background(), agent.Config{Join: a, Token: testToken, Index: i, JoinTimeout: 5 * time.Second,
					TLS: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}})
			}()
		}
	}()
	res, err := harness.Run(context.Background(), cfg)
	if err != nil || res.Verdict != checker.Valid {
		t.Fatalf("run over TLS: %v, verdict %v", err, res)
	}
	plain := <-errs
	if plain == nil {
		t.Errorf("an agent without TLS joined a TLS coordinator")
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Errorf("agent over TLS: %v", err)
		}
	}
	testutil.NoRedisChildren(t)
}

func TestMain(m *testing.M) {
	testutil.QuietRedis() // go-redis's own log of refused dials
	os.Exit(m.Run())
}

// TestAgents_ClientFaultTally: a client fault's figures, counted inside
// the clients (cancel's ops cancelled while their reply was held, and
// commands sent behind one), come back from the agents that played it:
// setnx on three agents under cancel meets cancel's figures, which read
// 0 before the agents were asked for them.
func TestAgents_ClientFaultTally(t *testing.T) {
	testutil.RequireRedis(t)
	w := workload.Config{Clients: 30, Keys: 3, Duration: 5 * time.Second, TTL: time.Second, Hold: 50 * time.Millisecond, OpTimeout: time.Second}
	s := faultrun.Case{Workload: w, Scenario: scenario.Scenario{Nemesis: nemesis.Config{Faults: []string{"cancel"}, Interval: time.Second, Duration: 500 * time.Millisecond}}}
	expectAgents(t, s, "setnx", func(r *harness.Result) (bool, string) {
		c := r.Findings.Coverage
		return r.Verdict == checker.Valid && c[history.CancelledApplied] > 0 && c[history.SentBehindCancel] > 0,
			fmt.Sprintf("cancelled_applied %d, sent_behind_cancel %d", c[history.CancelledApplied], c[history.SentBehindCancel])
	})
}
