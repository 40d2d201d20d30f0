package cli

import (
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/scenario"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/testutil"
	"github.com/lockcheck/lockcheck/lockimpl"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/report"
	"github.com/lockcheck/lockcheck/workload"
)

// TestCLI_RegisteredChecker: a checker added as the README's "Extending
// lockcheck" says (a checker.Spec, registered) is run by every path a
// user calls: its result is in results.json of `lockcheck run` and of
// `lockcheck check` (the partitioned path, its figure summed over the
// parts), and its verdict in each row of verify's verify.json; an invalid
// verdict of it fails the run.
func TestCLI_RegisteredChecker(t *testing.T) {
	testutil.RequireRedis(t)
	invalid := false
	defer checker.Register(checker.Spec{Check: checker.Func("throwaway", func(_ context.Context, ops []history.Op, _ checker.Options) checker.Result {
		r := checker.Result{Verdict: checker.Valid, Figures: map[string]int64{"throwaway_ops": int64(len(ops))}}
		if invalid {
			r.Verdict = checker.Invalid
		}
		return r
	}), Figures: map[string]checker.FigureMerge{"throwaway_ops": checker.Sum}, Guarantee: checker.LeaseContract})()

	out := t.TempDir()
	if code := run([]string{"run", "--lock", "setnx", "--clients", "5", "--keys", "3", "--duration", "2s", "-q", "--out", out}); code != exitValid {
		t.Fatalf("run: exit %d, want %d", code, exitValid)
	}
	dir, err := filepath.EvalSymlinks(filepath.Join(out, "latest"))
	if err != nil {
		t.Fatal(err)
	}
	ops := throwawayFigure(t, filepath.Join(dir, "results.json"))
	if ops == 0 {
		t.Fatal("run: the registered checker saw no op")
	}
	checked := t.TempDir()
	if code := run([]string{"check", "--out", checked, filepath.Join(dir, "history.jsonl")}); code != exitValid {
		t.Fatalf("check: exit %d, want %d", code, exitValid)
	}
	if got := throwawayFigure(t, filepath.Join(checked, "results.json")); got != ops {
		t.Errorf("check: the registered checker's figure is %d, run's %d: want the same history judged the same", got, ops)
	}
	invalid = true
	if code := run([]string{"check", "--out", t.TempDir(), filepath.Join(dir, "history.jsonl")}); code != exitInvalid {
		t.Errorf("check with the registered checker invalid: exit %d, want %d", code, exitInvalid)
	}
	invalid = false

	rows := verifyRows(t, "--lock", "setnx", "--scenario", "contention")
	if len(rows) != 1 || rows[0].Checkers["throwaway"] != checker.Valid {
		t.Errorf("verify.json rows %+v: want contention with the registered checker valid", rows)
	}
}

// verifyRow is a row of verify.json.
type verifyRow struct {
	Scenario string                     `json:"scenario"`
	Status   string                     `json:"status"`
	NA       string                     `json:"na"`
	Checkers map[string]checker.Verdict `json:"checkers"`
}

// verifyRows runs lockcheck verify with args (seed 1), wants it valid,
// and returns the rows of its verify.json.
func verifyRows(t *testing.T, args ...string) []verifyRow {
	t.Helper()
	out := t.TempDir()
	if code := run(append([]string{"verify", "--seed", "1", "-q", "--out", out}, args...)); code != exitValid {
		t.Fatalf("verify %v: exit %d, want %d", args, code, exitValid)
	}
	dir, err := filepath.EvalSymlinks(filepath.Join(out, "verify", "latest"))
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Rows []verifyRow `json:"scenarios"`
	}
	readJSON(t, filepath.Join(dir, "verify.json"), &v)
	return v.Rows
}

// throwawayFigure reads the registered checker's figure off results.json.
func throwawayFigure(t *testing.T, path string) int64 {
	t.Helper()
	var res struct {
		Findings struct {
			Checkers []checker.Result `json:"checkers"`
		} `json:"findings"`
		Checkers []checker.Result `json:"checkers"`
	}
	readJSON(t, path, &res)
	for _, c := range append(res.Checkers, res.Findings.Checkers...) {
		if c.Name == "throwaway" {
			return c.Figures["throwaway_ops"]
		}
	}
	t.Fatalf("%s: no result of the registered checker", path)
	return 0
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestCLI_CheckWritesUnderResults: `lockcheck check FILE` of a history
// outside a run dir writes under results/check/<time>/ of the working
// directory, with results/check/latest pointing there, and nothing else:
// not beside the history, not loose in the working directory.
func TestCLI_CheckWritesUnderResults(t *testing.T) {
	bin := lockcheck(t)
	repo, cwd := t.TempDir(), t.TempDir()
	hist := filepath.Join(repo, "mine.jsonl")
	line := `{"index":0,"process":1,"f":"acquire","type":"ok","key":"k","token":"a","ttl_ms":5,"call":1,"return":2}` + "\n"
	if err := os.WriteFile(hist, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		cmd := exec.Command(bin, "check", hist)
		cmd.Dir = cwd
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("check %d: %v\n%s", i, err, out)
		}
	}
	if names := dirNames(t, repo); len(names) != 1 {
		t.Errorf("beside the history: %v, want only mine.jsonl", names)
	}
	if names := dirNames(t, cwd); len(names) != 1 || names[0] != "results" {
		t.Errorf("in the working directory: %v, want only results", names)
	}
	runs := dirNames(t, filepath.Join(cwd, "results", "check"))
	if len(runs) != 3 || !slices.Contains(runs, "latest") {
		t.Fatalf("results/check holds %v, want two checks and latest", runs)
	}
	latest, err := filepath.EvalSymlinks(filepath.Join(cwd, "results", "check", "latest"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(latest, "results.json")); err != nil {
		t.Errorf("latest check: %v", err)
	}
}

// sweptLine is the line a command prints when it removes temp dirs that
// runs killed outright left behind.
var sweptLine = regexp.MustCompile(`(?m)^lockcheck: removed \d+ temp dir\(s\) left by runs that were killed\n`)

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// TestCLI_SpecTTLUnit: a spec whose acquire passes {ttl_s} runs only with
// whole-second TTLs. Every command refuses it, with one line and exit 2,
// before anything starts, when a TTL it would use is not: run's --ttl,
// verify's scenario TTLs (100-300 ms), a matrix cell's, bench's --ttl;
// nothing is written under --out.
func TestCLI_SpecTTLUnit(t *testing.T) {
	bin := lockcheck(t)
	spec, err := os.ReadFile("../examples/specs/setnx.toml")
	if err != nil {
		t.Fatal(err)
	}
	secs := strings.Replace(strings.Replace(string(spec), `"NX", "PX", ARGV[2]`, `"NX", "EX", ARGV[2]`, 1), `args = ["{token}", "{ttl_ms}"]`, `args = ["{token}", "{ttl_s}"]`, 1)
	path := filepath.Join(t.TempDir(), "secs.toml")
	if err := os.WriteFile(path, []byte(secs), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"run", "--lock-spec", path, "--ttl", "1500ms"},
		{"verify", "--lock-spec", path, "--scenario", "overrun"},
		{"verify", "--lock-spec", path},
		{"matrix", "--lock-spec", path, "--faults", "pause", "--ttl", "1500ms"},
		{"bench", "--lock-spec", path, "--ttl", "300ms", "--clients", "5", "--keys", "5"},
	} {
		out := t.TempDir()
		stdout, code := runBin(t, bin, append(args, "--out", out)...)
		// Another test's killed run may leave a temp dir that this run
		// sweeps, and says so: housekeeping, not this refusal.
		stdout = strings.TrimSpace(sweptLine.ReplaceAllString(stdout, ""))
		if code != 2 || strings.Count(stdout, "\n") != 0 || !strings.Contains(stdout, "uses {ttl_s}, so the TTL must be whole seconds") {
			t.Errorf("%v: exit %d, %q; want exit 2 and one line naming {ttl_s}", args, code, stdout)
		}
		if names := dirNames(t, out); len(names) != 0 {
			t.Errorf("%v: wrote %v under --out; want nothing before the refusal", args, names)
		}
	}
}

// TestCLI_Extensions: a lock, a fault, a report section and a verify
// scenario added as the README's "Extending lockcheck" says (each
// registered, as a throwaway of the test's own) are used by the commands
// a user runs: `lockcheck run --lock L --nemesis F` builds the lock,
// plays the fault (its windows in the history and the coverage) and draws
// the section in report.html; `lockcheck verify --scenario S` runs the
// scenario, with the same lock and fault, to a verdict in verify.json.
func TestCLI_Extensions(t *testing.T) {
	testutil.RequireRedis(t)
	var built, started atomic.Int32
	defer lockimpl.Register(lockimpl.Entry{Name: "throwaway-lock", Description: "setnx, counted",
		Factory: func(env lockimpl.Env) (lockimpl.Locker, error) { built.Add(1); return lockimpl.NewSetNX(env) }})()
	defer nemesis.Register(nemesis.Kind{Name: "throwaway-fault", Description: "does nothing, counted", Needs: nemesis.Needs{Clients: true},
		New: func(nemesis.Env) (nemesis.Fault, error) { return countedFault{&started}, nil }})()
	defer report.Register(report.Section{Name: "throwaway-section", Template: `<p>{{.}} ops seen by the throwaway section</p>`,
		Data: func(v *report.View) any { return len(v.Ops) }})()
	defer scenario.Register(scenario.Scenario{Name: "throwaway-scenario", Description: "the throwaway fault on a short run",
		Workload: func(w *workload.Config) { w.Clients, w.Keys, w.Duration = 10, 2, 2*time.Second },
		Nemesis:  nemesis.Config{Faults: []string{"throwaway-fault"}, Interval: 300 * time.Millisecond, Duration: 100 * time.Millisecond},
		Requires: checker.Coverage{checker.Contended: 1, "windows:throwaway-fault": 1}})()
	// A scenario with a need of its own (scenario.Need, in its file): n/a
	// with its reason for a lock the profile says lacks it, before
	// anything runs.
	const needsRenewal = "the throwaway scenario needs a lock that renews its leases itself"
	defer scenario.Register(scenario.Scenario{Name: "throwaway-renewed", Description: "the throwaway fault, for locks that renew their leases",
		Nemesis:  nemesis.Config{Faults: []string{"throwaway-fault"}, Interval: 300 * time.Millisecond, Duration: 100 * time.Millisecond},
		Requires: checker.Coverage{checker.Contended: 1},
		Needs: []scenario.Need{func(_ scenario.Scenario, p scenario.Profile, _ string, req checker.Coverage) (string, checker.Coverage) {
			if !p.Renews {
				return needsRenewal, req
			}
			return "", req
		}}})()

	out := t.TempDir()
	if code := run([]string{"run", "--lock", "throwaway-lock", "--nemesis", "throwaway-fault", "--nemesis-interval", "300ms",
		"--nemesis-duration", "100ms", "--clients", "5", "--keys", "2", "--duration", "2s", "-q", "--out", out}); code != exitValid {
		t.Fatalf("run: exit %d, want %d", code, exitValid)
	}
	dir, err := filepath.EvalSymlinks(filepath.Join(out, "latest"))
	if err != nil {
		t.Fatal(err)
	}
	if built.Load() == 0 || started.Load() == 0 {
		t.Fatalf("run: the lock was built %d times and the fault started %d times; want both", built.Load(), started.Load())
	}
	var res struct {
		Coverage checker.Coverage `json:"coverage"`
	}
	readJSON(t, filepath.Join(dir, "results.json"), &res)
	if res.Coverage["windows:throwaway-fault"] == 0 {
		t.Errorf("run: coverage %v has no window of the registered fault", res.Coverage)
	}
	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), `<section id="throwaway-section">`) || !strings.Contains(string(page), "ops seen by the throwaway section") {
		t.Error("report.html: no registered section")
	}

	// A client fault: a nemesis kind that plays a value, and the
	// workload's case for it; two registrations, as docs/extending.md's
	// recipe has two files.
	var played atomic.Int32
	defer nemesis.Register(nemesis.ClientKind(nemesis.Kind{Name: "throwaway-client-fault", Description: "clients count it"},
		func(*rand.Rand, nemesis.Env) (nemesis.ClientFault, string) {
			return nemesis.ClientFault{Kind: "throwaway", N: 2}, "counted"
		}))()
	defer workload.RegisterClientFault("throwaway", func(_ *workload.Runner, rng *rand.Rand, f nemesis.ClientFault) []int {
		played.Add(1)
		return rng.Perm(5)[:f.N]
	})()
	if code := run([]string{"run", "--lock", "throwaway-lock", "--nemesis", "throwaway-client-fault", "--nemesis-interval", "300ms",
		"--nemesis-duration", "100ms", "--clients", "5", "--keys", "2", "--duration", "2s", "-q", "--out", out}); code != exitValid {
		t.Fatalf("run with a client fault: exit %d, want %d", code, exitValid)
	}
	if played.Load() == 0 {
		t.Fatal("run: the registered client fault was never played by the workload")
	}
	dir, err = filepath.EvalSymlinks(filepath.Join(out, "latest"))
	if err != nil {
		t.Fatal(err)
	}
	ops, err := history.ReadFile(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	starts := 0
	for _, op := range ops {
		if v := op.Value; op.F == history.Nemesis && v.Fault == "throwaway-client-fault" && v.Phase == "start" {
			starts++
			if len(v.Targets) != 3 || v.Targets[2] != "counted" || op.Error != "" {
				t.Errorf("client fault start %+v (error %q): want two clients and its note", v.Targets, op.Error)
			}
		}
	}
	if starts != int(played.Load()) {
		t.Errorf("history has %d starts of the client fault, the workload played %d", starts, played.Load())
	}

	rows := verifyRows(t, "--lock", "throwaway-lock", "--scenario", "throwaway-scenario")
	if len(rows) != 1 || rows[0].Scenario != "throwaway-scenario" || rows[0].Status != report.StatusPassed {
		t.Errorf("verify.json rows %+v: want the registered scenario, passed", rows)
	}
	rows = verifyRows(t, "--lock", "throwaway-lock", "--scenario", "throwaway-renewed")
	if len(rows) != 1 || rows[0].Status != report.StatusNA || rows[0].NA != needsRenewal {
		t.Errorf("verify.json rows %+v: want the registered scenario n/a: %s", rows, needsRenewal)
	}
	throwawayShape(t)
}

// throwawayShape: a shape added as docs/extending.md says (a
// checker.Shape, registered, and a lock whose Entry declares it) judges
// the runs of that lock, online and offline: run.json records it, and its
// rule at the resource, not the mutex's, decides the mutex guarantee (the
// throwaway shape takes no write at all, so setnx's clean run breaks it).
// A lock declaring a shape no checker judges is refused before it runs.
func throwawayShape(t *testing.T) {
	const shape, note = "throwaway-shape", "judged as a throwaway shape: no writes at all"
	var judged, atResource atomic.Int32
	defer checker.RegisterShape(checker.Shape{Name: shape,
		Linearizable: func(ctx context.Context, ops []history.Op, opt checker.Options) checker.Result {
			judged.Add(1)
			r := checker.LinearizableMutex(ctx, ops, opt)
			r.Note = note
			return r
		},
		AtResource: func(ops []history.Op) checker.Result {
			atResource.Add(1)
			r := checker.Mutex(ops)
			r.Note = note
			if w := r.Figures["writes"]; w > 0 {
				r.Verdict, r.ViolationCount = checker.Invalid, int(w)
			}
			return r
		}})()
	defer lockimpl.Register(lockimpl.Entry{Name: "throwaway-shaped", Description: "setnx, of the throwaway shape", Shape: shape,
		Factory: lockimpl.NewSetNX})()
	defer lockimpl.Register(lockimpl.Entry{Name: "throwaway-unjudged", Description: "setnx, of a shape nobody registered", Shape: "nobody-judges-it",
		Factory: lockimpl.NewSetNX})()

	out := t.TempDir()
	args := []string{"--clients", "5", "--keys", "2", "--duration", "2s", "-q", "--out", out}
	if code := run(append([]string{"run", "--lock", "throwaway-shaped"}, args...)); code != exitInvalid {
		t.Fatalf("run of the throwaway shape: exit %d, want %d (its rule takes no write)", code, exitInvalid)
	}
	dir, err := filepath.EvalSymlinks(filepath.Join(out, "latest"))
	if err != nil {
		t.Fatal(err)
	}
	var info report.RunInfo
	readJSON(t, filepath.Join(dir, "run.json"), &info)
	if info.Workload.Shape != shape {
		t.Errorf("run.json shape %q, want %q", info.Workload.Shape, shape)
	}
	verdicts := func(path string) map[string]checker.Result {
		var res report.Results
		readJSON(t, path, &res)
		by := map[string]checker.Result{}
		for _, c := range res.Checkers {
			by[c.Name] = c
		}
		return by
	}
	online := verdicts(filepath.Join(dir, "results.json"))
	if m, l := online["mutex"], online["linearizable"]; m.Verdict != checker.Invalid || m.Note != note || l.Verdict != checker.Valid || l.Note != note {
		t.Errorf("results.json: mutex %s (%q), linearizable %s (%q); want the throwaway shape's: mutex invalid, linearizable valid, each noted %q",
			m.Verdict, m.Note, l.Verdict, l.Note, note)
	}
	before := atResource.Load()
	checked := t.TempDir()
	if code := run([]string{"check", "--out", checked, filepath.Join(dir, "history.jsonl")}); code != exitInvalid || atResource.Load() == before || judged.Load() < 2 {
		t.Errorf("check of the run: exit %d, the shape's rule ran %d times before and %d after; want exit %d and the shape judging again",
			code, before, atResource.Load(), exitInvalid)
	}

	refused := t.TempDir()
	stdout := captureStderr(t, func() {
		if code := run([]string{"run", "--lock", "throwaway-unjudged", "--clients", "2", "--keys", "1", "--duration", "1s", "--out", refused}); code != exitUsage {
			t.Errorf("run of a lock of an unregistered shape: exit %d, want %d", code, exitUsage)
		}
	})
	if !strings.Contains(stdout, `declares the shape "nobody-judges-it", which no checker judges`) || len(dirNames(t, refused)) != 0 {
		t.Errorf("run of an unregistered shape said %q and wrote %v; want one line naming the shape and nothing written", stdout, dirNames(t, refused))
	}
}

// captureStderr is what f wrote to os.Stderr.
func captureStderr(t *testing.T, f func()) string {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stderr
	os.Stderr = w
	done := make(chan []byte)
	go func() { b, _ := io.ReadAll(r); done <- b }()
	func() {
		defer func() { os.Stderr = saved }()
		f()
	}()
	w.Close()
	return string(<-done)
}

// countedFault is a fault that does nothing but count its starts.
type countedFault struct{ starts *atomic.Int32 }

func (f countedFault) Start(context.Context, *rand.Rand) ([]string, error) {
	f.starts.Add(1)
	return []string{"nobody"}, nil
}
func (countedFault) Stop(context.Context) error { return nil }
