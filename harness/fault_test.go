package harness_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/harness"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/testutil"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/workload"
)

// scenario is one fault run; the README's lock x fault table comes from the
// same settings.
type scenario struct {
	workload     workload.Config
	nemesis      nemesis.Config
	cluster      cluster.Config
	restartDelay time.Duration
}

// on returns the scenario on another backend.
func (s scenario) on(backend string) scenario {
	s.cluster.Backend = backend
	return s
}

func (s scenario) run(t *testing.T, lock string, seed int64) *harness.Result {
	t.Helper()
	w := s.workload
	w.Seed = seed
	cfg := harness.Config{Lock: lock, OutDir: t.TempDir(), Workload: w,
		Nemesis: s.nemesis, Cluster: s.cluster, RestartDelay: s.restartDelay,
		Check: checker.Options{Timeout: 2 * time.Minute, ClockTolerance: 50 * time.Millisecond}}
	ownLock(t, &cfg)
	res, err := harness.Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("run %s: %v", lock, err)
	}
	testutil.NoRedisChildren(t)
	if s.cluster.Backend == cluster.Docker {
		if left := testutil.DockerLeft(t, os.Getpid()); len(left) > 0 {
			t.Errorf("left behind: %v", left)
		}
	}
	return res
}

// expect runs the scenario until ok holds, at most three times (the
// faults are real and their timing is not fully in our hands).
func (s scenario) expect(t *testing.T, lock string, ok func(*harness.Result) (bool, string)) *harness.Result {
	t.Helper()
	var res *harness.Result
	for seed := int64(1); seed <= 3; seed++ {
		res = s.run(t, lock, seed)
		good, msg := ok(res)
		t.Logf("%s, attempt %d: verdict %s; %s", lock, seed, res.Verdict, msg)
		if good {
			return res
		}
	}
	t.Fatalf("%s: expectation not met in 3 runs", lock)
	return res
}

func doubleHolders(r *harness.Result) int {
	m, _ := r.Findings.Checker("mutex")
	return m.ViolationCount
}

func invalid(r *harness.Result) (bool, string) {
	return r.Verdict == checker.Invalid, ""
}

func valid(r *harness.Result) (bool, string) {
	return r.Verdict == checker.Valid, ""
}

var shortLeases = workload.Config{Clients: 50, Keys: 3, Duration: 8 * time.Second, TTL: 200 * time.Millisecond,
	Hold: 100 * time.Millisecond, OpTimeout: 500 * time.Millisecond, Margin: 30 * time.Millisecond}

func TestFault_PauseClient(t *testing.T) {
	testutil.RequireRedis(t)
	faultPauseClient(t, cluster.Local)
}

func faultPauseClient(t *testing.T, backend string) {
	s := scenario{workload: shortLeases, nemesis: nemesis.Config{Faults: []string{"pause-client"}, Interval: time.Second, Duration: time.Second}}
	for _, lock := range []string{"setnx", "watchdog"} {
		s.on(backend).expect(t, lock, func(r *harness.Result) (bool, string) {
			return doubleHolders(r) > 0, "double holders: " + strconv.Itoa(doubleHolders(r))
		})
	}
	r := s.on(backend).expect(t, "fenced", func(r *harness.Result) (bool, string) {
		f, _ := r.Findings.Checker("fencing")
		return r.Verdict == checker.Valid && f.Figures["stale_rejected"] > 0, "stale writes rejected: " + strconv.Itoa(int(f.Figures["stale_rejected"]))
	})
	if r.Summary.Paused == 0 {
		t.Errorf("no client was paused")
	}
}

func TestFault_CrashClient(t *testing.T) {
	testutil.RequireRedis(t)
	w := shortLeases
	w.Duration, w.Hold = 10*time.Second, 50*time.Millisecond
	s := scenario{workload: w, nemesis: nemesis.Config{Faults: []string{"crash-client"}, Interval: time.Second, Duration: time.Second}}
	for _, lock := range []string{"broken-setnx-expire", "broken-no-ttl"} {
		s.expect(t, lock, func(r *harness.Result) (bool, string) {
			l, _ := r.Findings.Checker("liveness")
			return l.Verdict == checker.Invalid, "stuck acquires: " + strconv.Itoa(int(l.Figures["stuck_acquires"]))
		})
	}
	r := s.expect(t, "setnx", valid)
	if r.Summary.Crashed == 0 {
		t.Errorf("no client crashed")
	}
}

func TestFault_KillRedis(t *testing.T) {
	testutil.RequireRedis(t)
	faultKillRedis(t, cluster.Local)
}

func faultKillRedis(t *testing.T, backend string) {
	s := scenario{workload: shortLeases, nemesis: nemesis.Config{Faults: []string{"kill-redis"}, Interval: 2 * time.Second},
		cluster: cluster.Config{Persistence: "none"}}
	delay := 500 * time.Millisecond // longer than the 200ms TTL
	if backend == cluster.Docker {
		// Starting a killed container again takes longer than a 200ms
		// lease lives (kill, start and first PING: 0.68-0.79s measured), which would make every
		// restart a delayed one: leases must outlive the restart.
		s.workload.TTL, s.workload.Hold, s.workload.Margin = 2*time.Second, time.Second, 100*time.Millisecond
		delay = 2500 * time.Millisecond
	}
	s.on(backend).expect(t, "setnx", invalid)
	s.restartDelay = delay
	r := s.on(backend).expect(t, "setnx", valid)
	if r.Summary.NotSent == 0 {
		t.Errorf("no op was refused while the node was down")
	}
}

func TestFault_PauseRedis(t *testing.T) {
	testutil.RequireRedis(t)
	faultPauseRedis(t, cluster.Local)
}

func faultPauseRedis(t *testing.T, backend string) {
	w := shortLeases
	w.Clients = 20
	s := scenario{workload: w, nemesis: nemesis.Config{Faults: []string{"pause-redis"}, Interval: 2 * time.Second, Duration: time.Second}}
	s.on(backend).expect(t, "setnx", func(r *harness.Result) (bool, string) {
		info := r.Summary.Ops[history.Acquire][history.Info] + r.Summary.Ops[history.Release][history.Info]
		return r.Verdict == checker.Valid && info > 0, "indeterminate ops: " + strconv.Itoa(int(info))
	})
}

// sentinelLeases: leases outlast a failover (about 2-4 s), so a lease the
// new master lost is still held when someone else takes the key.
var sentinelLeases = workload.Config{Clients: 20, Keys: 40, Duration: 12 * time.Second, TTL: 10 * time.Second,
	Hold: 3 * time.Second, OpTimeout: time.Second}

func TestFault_Failover(t *testing.T) {
	testutil.RequireRedis(t)
	faultFailover(t, cluster.Local)
}

func faultFailover(t *testing.T, backend string) {
	s := scenario{workload: sentinelLeases, cluster: cluster.Config{Topology: cluster.Sentinel, ReplicationLag: 500 * time.Millisecond},
		nemesis: nemesis.Config{Faults: []string{"failover"}, Interval: 3 * time.Second, Duration: 6 * time.Second}}
	r := s.on(backend).expect(t, "setnx", invalid)
	named := false
	for _, f := range r.Faults {
		named = named || (f.Fault == "failover" && f.Stop > f.Start)
	}
	if !named {
		t.Errorf("the run's fault windows %v do not name the failover", r.Faults)
	}
}

func TestFault_Partition(t *testing.T) {
	testutil.RequireRedis(t)
	faultPartition(t, cluster.Local)
}

func faultPartition(t *testing.T, backend string) {
	s := scenario{workload: sentinelLeases, cluster: cluster.Config{Topology: cluster.Sentinel},
		nemesis: nemesis.Config{Faults: []string{"partition"}, Interval: 3 * time.Second, Duration: 6 * time.Second}}
	s.on(backend).expect(t, "setnx", func(r *harness.Result) (bool, string) {
		return doubleHolders(r) > 0, "double holders across the split brain: " + strconv.Itoa(doubleHolders(r))
	})
}

func TestFault_UnknownFaultIsConfigError(t *testing.T) {
	_, err := harness.Run(context.Background(), harness.Config{OutDir: t.TempDir(),
		Nemesis: nemesis.Config{Faults: []string{"meteor"}}})
	if err == nil || !strings.Contains(err.Error(), `unknown fault "meteor"`) {
		t.Fatalf("got %v, want an unknown-fault configuration error", err)
	}
}

// TestDocker_FaultTable runs the fault scenarios on the docker backend and
// wants the verdicts the local backend gets (TestFault_*).
func TestDocker_FaultTable(t *testing.T) {
	testutil.RequireDocker(t)
	for _, tc := range []struct {
		name string
		f    func(*testing.T, string)
	}{{"pause-client", faultPauseClient}, {"kill-redis", faultKillRedis}, {"pause-redis", faultPauseRedis},
		{"failover", faultFailover}, {"partition", faultPartition}} {
		t.Run(tc.name, func(t *testing.T) { tc.f(t, cluster.Docker) })
	}
}
