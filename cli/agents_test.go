package cli

import (
	"bytes"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/testutil"
	"github.com/lockcheck/lockcheck/report"
)

const cliToken = "cli-agent-token"

// freeAddr is a loopback address with a port nothing listens on.
// latestRun is the newest run under out, and its run.json.
func latestRun(t *testing.T, out string) (string, report.RunInfo) {
	t.Helper()
	dir, err := filepath.EvalSymlinks(filepath.Join(out, "latest"))
	if err != nil {
		t.Fatal(err)
	}
	info, _, err := report.ReadRunInfo(dir)
	if err != nil {
		t.Fatal(err)
	}
	return dir, info
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// proc is a lockcheck process a test started: its output, and its end.
type proc struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
	code int
}

func (p *proc) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// start runs bin with args and env; the test kills it (by its pid) if
// it is still running at the end.
func start(t *testing.T, bin string, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(bin, args...), done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = p, p
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := p.cmd.Wait()
		p.code = 0
		if ee, ok := err.(*exec.ExitError); ok {
			p.code = ee.ExitCode()
		}
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

func (p *proc) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
		return p.code
	case <-time.After(d):
		// Its goroutines' stacks say which wait has no bound.
		_ = p.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
		}
		t.Fatalf("%v still running after %v (its stacks at SIGQUIT below):\n%s", p.cmd.Args, d, p.output())
	}
	return -1
}

// waitFor waits until the process has printed s.
func (p *proc) waitFor(t *testing.T, s string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !strings.Contains(p.output(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("%v never printed %q:\n%s", p.cmd.Args, s, p.output())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestCLI_AgentKilled: a coordinator and three agent processes (one
// clock 300 ms ahead); agent 2 is SIGKILLed mid-run. The run ends with a
// verdict (setnx valid), says when agent 2 was lost, writes every op it
// received from it, and writes its ops in flight as info; no process is
// left behind.
func TestCLI_AgentKilled(t *testing.T) {
	testutil.RequireRedis(t)
	bin := lockcheck(t)
	out := t.TempDir()
	addr := freeAddr(t)
	token := []string{"LOCKCHECK_AGENT_TOKEN=" + cliToken}
	coord := start(t, bin, token, "run", "--agents", "3", "--listen", addr, "--lock", "setnx", "--clients", "600", "--keys", "10",
		// No retry pause: each client is always in an op or a hold, so
		// the kill lands with ops in flight.
		"--ttl", "200ms", "--hold", "50ms", "--retry", "none", "--duration", "12s", "--clock-tolerance", "50ms", "--seed", "3", "--out", out, "--join-timeout", "30s")
	skews := []string{"", "LOCKCHECK_AGENT_SKEW=300ms", "LOCKCHECK_AGENT_DRIFT=300"}
	var agents []*proc
	for i, s := range skews {
		env := token
		if s != "" {
			env = append(append([]string(nil), token...), s)
		}
		agents = append(agents, start(t, bin, env, "agent", "--join", addr, "--index", strconv.Itoa(i)))
	}
	coord.waitFor(t, "agent 2 joined", 30*time.Second)
	coord.waitFor(t, "ops/s", 30*time.Second) // the clients are running
	redisPids := testutil.RedisChildrenOf(coord.cmd.Process.Pid)
	if len(redisPids) == 0 {
		t.Fatal("the coordinator runs no redis-server")
	}
	// Its ops streamed for a while, well before the run's 12 s are up
	// (the progress line comes a second after the clients' start, its
	// read here later on a busy machine: 9 s of room).
	time.Sleep(1500 * time.Millisecond)
	if err := agents[2].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	code := coord.wait(t, 2*time.Minute)
	text := coord.output()
	if code != exitValid || !strings.Contains(text, "agent 2 lost at") || !strings.Contains(text, "verdict: VALID") {
		t.Fatalf("coordinator: exit %d, want 0 with agent 2 lost and a valid verdict:\n%s", code, text)
	}
	for i := range 2 {
		if c := agents[i].wait(t, 30*time.Second); c != exitValid {
			t.Errorf("agent %d: exit %d:\n%s", i, c, agents[i].output())
		}
	}
	// Nothing left running: every agent process ended (waited above, the
	// killed one by its SIGKILL), and so did the coordinator's Redis.
	agents[2].wait(t, 10*time.Second)
	for _, pid := range redisPids {
		if testutil.Alive(pid) {
			t.Errorf("redis-server %d outlived its coordinator", pid)
		}
	}
	dir, info := latestRun(t, out)
	if len(info.Agents) != 3 || info.Agents[2].Lost == "" || info.Agents[0].Lost != "" {
		t.Fatalf("run.json agents: %+v", info.Agents)
	}
	ops, err := history.ReadFile(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	a2 := info.Agents[2]
	var received, inflight int64
	for _, op := range ops {
		if op.Process < a2.FirstProc || op.Process >= a2.FirstProc+a2.Clients {
			continue
		}
		if op.Error == "agent lost" {
			inflight++
			if op.Type != history.Info {
				t.Errorf("in-flight op %+v not info", op)
			}
		} else {
			received++
		}
	}
	if received != a2.OpsSent || received == 0 {
		t.Errorf("agent 2: %d ops in the history, %d received: every op it streamed is written", received, a2.OpsSent)
	}
	if inflight == 0 {
		t.Errorf("agent 2 killed with 200 clients busy: no op in flight written as info")
	}
	// The skew within the measurement's own bound (half its round trip,
	// which a busy machine widens), and a millisecond for the rounding.
	a1 := info.Agents[1]
	off, oerr := time.ParseDuration(a1.Offset)
	bound, berr := time.ParseDuration(a1.Bound)
	if d := off - 300*time.Millisecond; oerr != nil || berr != nil || d.Abs() > bound+time.Millisecond {
		t.Errorf("agent 1's offset %q, bound %q (round trip %q): want 300ms within the bound", a1.Offset, a1.Bound, a1.RTT)
	}
	testutil.NoRedisChildren(t)
}

// TestCLI_AgentBadInput: each mistake gets one line on both sides, exit
// 2 and no verdict: a wrong token, a second coordinator on the port, an
// agent that cannot reach Redis, agents that never join.
func TestCLI_AgentBadInput(t *testing.T) {
	testutil.RequireRedis(t)
	bin := lockcheck(t)
	token := []string{"LOCKCHECK_AGENT_TOKEN=" + cliToken}
	coordArgs := func(addr string, extra ...string) []string {
		return append([]string{"run", "--agents", "1", "--listen", addr, "--lock", "setnx", "--clients", "20", "--duration", "2s",
			"--out", t.TempDir(), "--join-timeout", "20s", "-q"}, extra...)
	}
	t.Run("wrong token, then never joined", func(t *testing.T) {
		addr := freeAddr(t)
		coord := start(t, bin, token, coordArgs(addr, "--join-timeout", "4s")...)
		ag := start(t, bin, []string{"LOCKCHECK_AGENT_TOKEN=nope"}, "agent", "--join", addr)
		if c := ag.wait(t, 30*time.Second); c != exitUsage || !strings.Contains(ag.output(), "wrong agent token") {
			t.Errorf("agent: exit %d, want 2 naming the token:\n%s", c, ag.output())
		}
		c := coord.wait(t, 30*time.Second)
		text := coord.output()
		if c != exitUsage || !strings.Contains(text, "0 of 1 joined") || !strings.Contains(text, "missing: agent 0") || strings.Contains(text, "verdict") {
			t.Errorf("coordinator: exit %d, want 2 naming the missing agent, no verdict:\n%s", c, text)
		}
	})
	t.Run("second coordinator on the port", func(t *testing.T) {
		addr := freeAddr(t)
		first := start(t, bin, token, coordArgs(addr)...)
		first.waitFor(t, "coordinator listening on", 30*time.Second)
		second := start(t, bin, token, coordArgs(addr)...)
		if c := second.wait(t, 30*time.Second); c != exitUsage || !strings.Contains(second.output(), "another coordinator on that port") {
			t.Errorf("second coordinator: exit %d, want 2:\n%s", c, second.output())
		}
		_ = first.cmd.Process.Signal(syscall.SIGINT)
		first.wait(t, 30*time.Second)
	})
	t.Run("agent cannot reach redis", func(t *testing.T) {
		addr := freeAddr(t)
		coord := start(t, bin, token, coordArgs(addr)...)
		coord.waitFor(t, "coordinator listening on", 30*time.Second)
		// The coordinator's Redis address is mapped to a port nothing
		// listens on, as for an agent on a host that cannot route to it.
		dead := freeAddr(t)
		ag := start(t, bin, token, "agent", "--join", addr, "--redis-addr-map", "*="+dead)
		c := ag.wait(t, 30*time.Second)
		if c != exitUsage || !strings.Contains(ag.output(), "cannot reach Redis") {
			t.Errorf("agent: exit %d, want 2 saying it cannot reach Redis:\n%s", c, ag.output())
		}
		cc := coord.wait(t, 30*time.Second)
		if text := coord.output(); cc != exitUsage || !strings.Contains(text, "agent 0 cannot play: cannot reach Redis") || strings.Contains(text, "verdict") {
			t.Errorf("coordinator: exit %d, want 2 naming the agent, no verdict:\n%s", cc, text)
		}
	})
	testutil.NoRedisChildren(t)
}

// docker runs the docker CLI and returns its trimmed output.
func docker(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("docker", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("docker %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestCLI_AgentsInContainers: the same binary and protocol as in pods,
// with agents as containers of lockcheck image on a Docker network of the
// test's own, reaching a Redis (external to the run) and the coordinator
// at the network's gateway: setnx valid, broken-del-release invalid.
// 40 clients on 5 keys: with 100, a fresh-clone CI's check of setnx ran
// out of its 30 s on one key of 3,142 lock ops (half the holds past the
// 100 ms TTL on the loaded machine), and the run was unknown.
func TestCLI_AgentsInContainers(t *testing.T) {
	testutil.RequireRedis(t)
	testutil.RequireDocker(t)
	bin := lockcheck(t)
	id := strconv.Itoa(os.Getpid())
	tag := "lockcheck/lockcheck:test-" + id
	if out, code := runBin(t, bin, "image", "--tag", tag); code != 0 {
		t.Fatalf("lockcheck image: exit %d\n%s", code, out)
	}
	t.Cleanup(func() { _ = exec.Command("docker", "rmi", "-f", tag).Run() })
	network := "lockcheck-agents-test-" + id
	docker(t, "network", "create", "--label", "lockcheck.test="+id, network)
	t.Cleanup(func() { _ = exec.Command("docker", "network", "rm", network).Run() })
	gw := docker(t, "network", "inspect", "-f", "{{(index .IPAM.Config 0).Gateway}}", network)

	// The Redis the run uses, external to it, on loopback and the gateway.
	port := strings.Split(freeAddr(t), ":")[1]
	redis := exec.Command("redis-server", "--port", port, "--bind", "127.0.0.1 "+gw, "--requirepass", "pw", "--save", "", "--appendonly", "no")
	if err := redis.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = redis.Process.Kill(); _ = redis.Wait() })
	// Listening: the event, not a sleep a busy machine can outlast.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", "127.0.0.1:"+port); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the external redis-server does not listen within 30 s")
		}
	}

	for _, c := range []struct {
		lock string
		want int
	}{{"setnx", exitValid}, {"broken-del-release", exitInvalid}} {
		coordPort := strings.Split(freeAddr(t), ":")[1]
		env := []string{"LOCKCHECK_AGENT_TOKEN=" + cliToken, "LOCKCHECK_REDIS_PASSWORD=pw"}
		coord := start(t, bin, env, "run", "--agents", "2", "--listen", gw+":"+coordPort, "--backend", "external", "--redis", "127.0.0.1:"+port,
			"--lock", c.lock, "--clients", "40", "--keys", "5", "--ttl", "100ms", "--hold", "100ms", "--hold-dist", "uniform", "--retry", "none",
			"--margin", "30ms", "--duration", "5s", "--clock-tolerance", "50ms", "--seed", "1", "--out", t.TempDir(), "-q", "--join-timeout", "60s", "--check-timeout", "60s")
		coord.waitFor(t, "coordinator listening on", 30*time.Second)
		var names []string
		for i := range 2 {
			name := "lockcheck-agent-" + id + "-" + c.lock + "-" + strconv.Itoa(i)
			names = append(names, name)
			docker(t, "run", "-d", "--name", name, "--label", "lockcheck.test="+id, "--network", network, "-e", "LOCKCHECK_AGENT_TOKEN="+cliToken, tag,
				"agent", "--join", gw+":"+coordPort, "--index", strconv.Itoa(i), "--redis-addr-map", "*="+gw+":"+port)
			t.Cleanup(func() { _ = exec.Command("docker", "rm", "-f", name).Run() })
		}
		// The run's phases are bounded: join 60 s, play 5 s + the op
		// timeout + the drain (45 s), the check 60 s + writing: five
		// minutes holds them all on a loaded machine.
		code := coord.wait(t, 5*time.Minute)
		logs := ""
		for _, n := range names {
			logs += docker(t, "logs", n) + "\n"
		}
		if code != c.want {
			t.Fatalf("%s on 2 agent containers: exit %d, want %d:\n%s\nagents:\n%s", c.lock, code, c.want, coord.output(), logs)
		}
		for _, n := range names {
			if st := docker(t, "wait", n); st != "0" {
				t.Errorf("agent container %s exited %s:\n%s", n, st, logs)
			}
		}
	}
}

// TestCLI_BenchAgents: bench --agents sweeps clients in process and on
// agent processes side by side; every cell ran, was judged valid, and
// says how many agents it had. run --spawn-agents starts its own.
func TestCLI_BenchAgents(t *testing.T) {
	testutil.RequireRedis(t)
	bin := lockcheck(t)
	out := t.TempDir()
	text, code := runBin(t, bin, "bench", "--lock", "setnx", "--clients", "40", "--keys", "1000", "--agents", "0,2", "--duration", "2s", "--warmup", "0s", "--out", out)
	if code != exitValid {
		t.Fatalf("bench --agents 0,2: exit %d\n%s", code, text)
	}
	matches, _ := filepath.Glob(filepath.Join(out, "bench", "*", "bench.json"))
	if len(matches) != 1 {
		t.Fatalf("bench.json: %v", matches)
	}
	b, err := os.ReadFile(matches[0])
	if err != nil {
		t.Fatal(err)
	}
	var rows []report.BenchRow
	if err := json.Unmarshal(b, &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Agents != 0 || rows[1].Agents != 2 {
		t.Fatalf("rows %+v, want one in process and one on 2 agents", rows)
	}
	for _, r := range rows {
		if r.Verdict != "valid" || r.Acquisitions <= 0 {
			t.Errorf("cell with %d agents: verdict %s, %.0f acquisitions/s", r.Agents, r.Verdict, r.Acquisitions)
		}
	}
	runs := t.TempDir()
	text, code = runBin(t, bin, "run", "--agents", "2", "--spawn-agents", "--lock", "setnx", "--clients", "40", "--duration", "2s", "--out", runs, "-q")
	logs, _ := filepath.Glob(filepath.Join(runs, "setnx", "*", "agents", "agent-1.log"))
	if code != exitValid || len(logs) != 1 {
		t.Fatalf("run --spawn-agents: exit %d, agent logs %v\n%s", code, logs, text)
	}
	if b, _ := os.ReadFile(logs[0]); !strings.Contains(string(b), "agent 1: joined") {
		t.Errorf("agent 1's log: %s", b)
	}
	testutil.NoRedisChildren(t)
}

// TestCLI_KillAgent: kill-agent SIGKILLs a spawned agent each window and
// brings it back: the run stays valid, run.json has the lost agent and its
// next generation, whose clients played under new process ids.
func TestCLI_KillAgent(t *testing.T) {
	testutil.RequireRedis(t)
	bin := lockcheck(t)
	out := t.TempDir()
	text, code := runBin(t, bin, "run", "--agents", "3", "--spawn-agents", "--lock", "setnx", "--clients", "150", "--keys", "5",
		"--ttl", "200ms", "--hold", "50ms", "--duration", "8s", "--nemesis", "kill-agent", "--nemesis-interval", "2s", "--nemesis-duration", "1s",
		"--nemesis-targets", "agent:one", "--clock-tolerance", "50ms", "--seed", "1", "--out", out)
	if code != exitValid || !strings.Contains(text, "lost at") {
		t.Fatalf("run with kill-agent: exit %d, want 0 with an agent lost:\n%s", code, text)
	}
	dir, info := latestRun(t, out)
	var lost, reborn int
	for _, a := range info.Agents {
		if a.Lost != "" {
			lost++
		}
		if a.Generation > 0 && a.OpsSent > 0 {
			reborn++
		}
	}
	if lost == 0 || reborn == 0 {
		t.Fatalf("run.json agents: %+v; want one lost and one back that played", info.Agents)
	}
	ops, err := history.ReadFile(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var later int
	acquired := map[string]bool{}
	for _, op := range ops {
		if op.Process >= 1000*150 {
			later++
		}
		if op.F == history.Acquire {
			acquired[op.Token] = true
		}
	}
	if later == 0 {
		t.Errorf("no op under a rejoined agent's process ids")
	}
	// What a lost agent leaves is a prefix of what it recorded: no
	// release or extend without the acquire of its lease.
	for _, op := range ops {
		if (op.F == history.Release || op.F == history.Extend) && !acquired[op.Token] {
			t.Errorf("op %d: %s %s by p%d of a lease no acquire in the history has", op.Index, op.Type, op.F, op.Process)
		}
	}
	testutil.NoRedisChildren(t)
}

// TestCLI_VerifyAgents: verify --agents plays each scenario's clients on
// agent processes: at overrun, setnx passes and broken-del-release is
// caught (exit 1), as in process.
func TestCLI_VerifyAgents(t *testing.T) {
	testutil.RequireRedis(t)
	bin := lockcheck(t)
	for _, c := range []struct {
		lock string
		want int
	}{{"setnx", exitValid}, {"broken-del-release", exitInvalid}} {
		text, code := runBin(t, bin, "verify", "--lock", c.lock, "--agents", "2", "--scenario", "overrun", "--seed", "1", "-q", "--out", t.TempDir())
		if code != c.want {
			t.Errorf("verify --agents 2 %s: exit %d, want %d\n%s", c.lock, code, c.want, text)
		}
	}
	testutil.NoRedisChildren(t)
}
