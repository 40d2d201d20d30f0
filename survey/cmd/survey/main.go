// Command survey runs the survey (docs/survey.md) and writes its page:
// every library of survey.Libraries through lockcheck verify with --seed
// 1 --keep-going, the scenarios each passed again with --seed 2, the
// clock-skew sweep of those that compute expiry from their own clock,
// one bench sweep of all of them, and (--reproduce) each break's command
// run again. A step whose outputs are already under --out is not run
// again (delete them to measure again); the page is written from the
// outputs alone. --archive copies what the page is written from (a few
// hundred KB of JSON, no history) to a directory kept in the repository,
// from which --no-run writes the page again on any machine.
//
//	cd survey && go run ./cmd/survey --bin ../bin/lockcheck-survey --out ../results/survey --reproduce --archive data --write ../docs/survey.md
//	cd survey && go run ./cmd/survey --no-run --out data --write ../docs/survey.md
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/report"
	"github.com/lockcheck/lockcheck/survey"
)

// Skews are the clock-skew sweep's points: a few ms to a few s.
var skews = []string{"5ms", "50ms", "200ms", "500ms", "700ms", "2s", "5s"}

// skewArgs is the sweep's run, without the lock and the skew: holds of
// 400 ms fixed under a 1 s TTL (shorter than a renewal at TTL/2).
var skewArgs = []string{"run", "--clients", "20", "--keys", "5", "--ttl", "1s", "--hold", "400ms", "--hold-dist", "fixed", "--duration", "8s", "--seed", "1", "-q"}

// benchArgs is the bench sweep, without the locks.
var benchArgs = []string{"bench", "--clients", "50,500", "--keys", "10,10000", "--duration", "5s", "--warmup", "1s", "--baseline"}

func main() {
	bin := flag.String("bin", "../bin/lockcheck-survey", "lockcheck with the survey's Go locks (survey/cmd/lockcheck-survey)")
	out := flag.String("out", "../results/survey", "where the outputs go")
	write := flag.String("write", "", "write the page here (docs/survey.md)")
	only := flag.String("libs", "", "only these libraries (comma-separated; default all; the bench, which sweeps them all, is left out)")
	noRun := flag.Bool("no-run", false, "run nothing: write the page from the outputs there are")
	repro := flag.Bool("reproduce", false, "run each break's command again (its exit and time go on the page)")
	archive := flag.String("archive", "", "copy what the page is written from to this directory (survey/data)")
	root := flag.String("root", "..", "the repository's root: commands run there, as the page writes them")
	demos := flag.Bool("demos", false, "run every demonstration again (survey.Demos), even with --no-run")
	flag.Parse()
	for _, p := range []*string{bin, out, write, root, archive} {
		if *p != "" {
			*p, _ = filepath.Abs(*p)
		}
	}
	rootDir = *root
	demosAgain = *demos
	if err := run(*bin, *out, *write, *only, *noRun, *repro, *archive); err != nil {
		fmt.Fprintln(os.Stderr, "survey:", err)
		os.Exit(1)
	}
}

// rootDir is where the commands run (the repository's root);
// demosAgain, whether the demonstrations run again whatever is recorded.
var (
	rootDir    string
	demosAgain bool
)

func run(bin, out, write, only string, noRun, repro bool, archive string) error {
	step := stepper{bin: bin, noRun: noRun}.step
	var results []survey.Result
	for _, lib := range survey.Libraries {
		if only != "" && !slices.Contains(strings.Split(only, ","), lib.Name) {
			continue
		}
		r, err := surveyLib(step, out, lib)
		if err != nil {
			return err
		}
		results = append(results, r)
	}
	// The bench sweeps every library at once: a survey of some (--libs)
	// neither runs it nor reads it, so that a page of the whole survey
	// never shows a sweep of a few.
	var base []report.BenchRow
	if only == "" {
		var err error
		if base, err = benchAll(step, out, results); err != nil {
			return err
		}
	}
	if err := repros(step, out, results, repro); err != nil {
		return err
	}
	demos, err := runDemos(out, noRun && !demosAgain)
	if err != nil {
		return err
	}
	if archive != "" {
		if err := archiveTo(out, archive, results); err != nil {
			return err
		}
	}
	if write == "" {
		return nil
	}
	return writePage(write, out, results, base, demos)
}

// demoTimeout bounds one demonstration (each says it ends within 20 s;
// a Go one compiles first).
const demoTimeout = 3 * time.Minute

// runDemos runs every demonstration not yet recorded under out/demos
// (each again with --demos; none with noRun), and reads their records.
func runDemos(out string, noRun bool) (map[string]survey.DemoRun, error) {
	runs := map[string]survey.DemoRun{}
	// The tree's revision before any record is written (each one written
	// would make the tree dirty for the next).
	rev := gitRevision()
	for _, d := range survey.Demos {
		path := filepath.Join(out, "demos", d.Name, "demo.json")
		var run survey.DemoRun
		if err := readJSON(path, &run); err == nil && !demosAgain || noRun {
			if err == nil {
				runs[d.Name] = run
			}
			continue
		}
		run, err := runDemo(d, rev)
		if err != nil {
			return nil, fmt.Errorf("demonstration %s: %w", d.Name, err)
		}
		fmt.Fprintf(os.Stderr, "survey: demonstration %s: exit %d in %s\n", d.Name, run.Exit, run.Elapsed)
		b, _ := json.MarshalIndent(run, "", "  ")
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			return nil, err
		}
		runs[d.Name] = run
	}
	return runs, nil
}

// runDemo runs d from the repository's root, within demoTimeout; rev is
// the tree's revision.
func runDemo(d survey.Demo, rev string) (survey.DemoRun, error) {
	ctx, cancel := context.WithTimeout(context.Background(), demoTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, d.Cmd[0], d.Cmd[1:]...)
	cmd.Dir = filepath.Join(rootDir, d.Dir)
	// Output keeps both streams in the order they came; Said is the
	// last line of stdout alone (go run says "exit status 1" on stderr).
	var both, stdout strings.Builder
	cmd.Stdout, cmd.Stderr = io.MultiWriter(&both, &stdout), &both
	start := time.Now()
	err := cmd.Run()
	out := both.String()
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	run := survey.DemoRun{Elapsed: time.Since(start).Round(100 * time.Millisecond).String(), Said: strings.TrimSpace(lines[len(lines)-1]), Output: out, Revision: rev}
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return run, fmt.Errorf("did not end within %v (output: %s)", demoTimeout, out)
	case errors.As(err, &exit):
		run.Exit = exit.ExitCode()
	case err != nil:
		return run, err
	}
	return run, nil
}

// gitRevision is the tree's commit (git describe --always --dirty), or
// "?".
func gitRevision() string {
	cmd := exec.Command("git", "describe", "--always", "--dirty")
	cmd.Dir = rootDir
	b, err := cmd.Output()
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(b))
}

// stepper runs one step of the survey: lockcheck-survey (bin) with args
// into dir, unless noRun or dir holds a finished step already.
type stepper struct {
	bin   string
	noRun bool
}

func (st stepper) step(dir string, args ...string) error {
	if st.noRun {
		return nil
	}
	if _, err := os.Stat(filepath.Join(dir, "done")); err == nil {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "survey: %s %s\n", st.bin, strings.Join(args, " "))
	cmd := exec.Command(st.bin, append(args, "--out", dir)...)
	cmd.Dir = rootDir
	log, err := os.Create(filepath.Join(dir, "output.txt"))
	if err != nil {
		return err
	}
	defer log.Close()
	cmd.Stdout, cmd.Stderr = log, log
	start := time.Now()
	err = cmd.Run()
	if werr := os.WriteFile(filepath.Join(dir, "elapsed"), []byte(time.Since(start).Round(time.Second).String()+"\n"), 0o644); werr != nil {
		return werr
	}
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "revision"), []byte(binRevision(st.bin)+"\n"), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "done"), []byte(fmt.Sprintln(cmd.ProcessState.ExitCode())), 0o644)
}

// surveyLib runs lib's battery at seed 1, again at seed 2 on what passed,
// and its clock skews, and reads them.
func surveyLib(step func(string, ...string) error, out string, lib survey.Library) (survey.Result, error) {
	r := survey.Result{Lib: lib}
	d1 := filepath.Join(out, lib.Name, "seed-1")
	if err := step(d1, append(append([]string{"verify"}, lib.Flags...), "--seed", "1", "--keep-going", "-q")...); err != nil {
		return r, err
	}
	r.Seed1, r.Dir1 = readVerify(d1)
	if passed := passedOf(r.Seed1); len(passed) > 0 {
		d2 := filepath.Join(out, lib.Name, "seed-2")
		if err := step(d2, append(append([]string{"verify"}, lib.Flags...), "--seed", "2", "--keep-going", "-q", "--scenario", strings.Join(passed, ","))...); err != nil {
			return r, err
		}
		r.Seed2, r.Dir2 = readVerify(d2)
	}
	if lib.Skew {
		for _, s := range skews {
			d := filepath.Join(out, lib.Name, "skew-"+s)
			if err := step(d, append(append(append([]string{}, skewArgs...), lib.InProcess()...), "--redis-clock-skew", s)...); err != nil {
				return r, err
			}
			r.Skew = append(r.Skew, survey.SkewPoint{Skew: s, Verdict: readVerdict(d)})
		}
	}
	return r, nil
}

// repros reruns each break of results with its command (if repro) and
// reads the reruns found.
func repros(step func(string, ...string) error, out string, results []survey.Result, repro bool) error {
	for i, r := range results {
		if r.Lib.Baseline {
			continue
		}
		for _, br := range survey.Breaks(r) {
			d := filepath.Join(out, r.Lib.Name, "repro-"+br.Scenario)
			if repro {
				if err := step(d, append(survey.VerifyArgs(r.Lib, br.Scenario, br.Seed), "-q")...); err != nil {
					return err
				}
			}
			if rr, ok := readRerun(d); ok {
				if results[i].Repro == nil {
					results[i].Repro = map[string]survey.Rerun{}
				}
				results[i].Repro[br.Scenario] = rr
			}
		}
	}
	return nil
}

// writePage writes the survey's page to path.
func writePage(path, out string, results []survey.Result, base []report.BenchRow, demos map[string]survey.DemoRun) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	m := survey.Meta{Date: time.Now().UTC().Format("2006-01-02"), Machine: machine(), Redis: redisVersion(), Lockcheck: revisions(out),
		Bin: "bin/lockcheck-survey", SkewRun: "bin/lockcheck-survey " + strings.Join(skewArgs, " ") + " LOCK --redis-clock-skew SKEW",
		BenchRun: "bin/lockcheck-survey " + strings.Join(benchArgs, " ") + " --lock LOCKS", Baseline: base, Demos: demos}
	if err := survey.Write(f, m, results); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// benchAll runs one bench sweep of the Go locks (and the lock processes
// of one process) and one of the PHP locks (a process per client), and
// gives each result its cells; it returns the baseline's.
func benchAll(step func(string, ...string) error, out string, results []survey.Result) ([]report.BenchRow, error) {
	groups := map[bool][]int{} // per client? -> results
	for i, r := range results {
		if r.Lib.Kind != survey.Mutex { // the bench's workload is a mutex's
			continue
		}
		groups[slices.Contains(r.Lib.Flags, "--lock-cmd-per-client")] = append(groups[slices.Contains(r.Lib.Flags, "--lock-cmd-per-client")], i)
	}
	var base []report.BenchRow
	for _, perClient := range []bool{false, true} {
		idx := groups[perClient]
		if len(idx) == 0 {
			continue
		}
		args := append([]string{}, benchArgs...)
		var locks []string
		names := map[string]int{} // bench's row name -> result
		cmds := 0
		for _, i := range idx {
			f := results[i].Lib.InProcess()
			if f[0] == "--lock" {
				locks = append(locks, f[1])
				names[f[1]] = i
				continue
			}
			cmds++
			args = append(args, "--lock-cmd", f[1])
			names[fmt.Sprintf("cmd%d", cmds)] = i
		}
		if len(locks) > 0 {
			args = append(args, "--lock", strings.Join(locks, ","))
		}
		if perClient {
			args = append(args, "--lock-cmd-per-client")
		}
		d := filepath.Join(out, map[bool]string{false: "bench", true: "bench-per-client"}[perClient])
		if err := step(d, args...); err != nil {
			return nil, err
		}
		rows := readBench(d)
		for _, row := range rows {
			if i, ok := names[row.Lock]; ok {
				results[i].Bench = append(results[i].Bench, row)
			}
			if !perClient && names[row.Lock] == idx[0] {
				base = append(base, row)
			}
		}
	}
	return base, nil
}

// readVerify reads the verify under dir (its latest).
func readVerify(dir string) (*report.Verify, string) {
	d := filepath.Join(dir, "verify", "latest")
	var v report.Verify
	if err := readJSON(filepath.Join(d, "verify.json"), &v); err != nil {
		return nil, ""
	}
	return &v, d
}

// passedOf are the scenarios v passed.
func passedOf(v *report.Verify) []string {
	var out []string
	if v == nil {
		return nil
	}
	for _, r := range v.Rows {
		if r.Status == report.StatusPassed {
			out = append(out, r.Scenario)
		}
	}
	return out
}

// readVerdict is the verdict of the run under dir.
func readVerdict(dir string) checker.Verdict {
	res, err := report.ReadResults(filepath.Join(dir, "latest"))
	if err != nil {
		return "not run"
	}
	return res.Verdict
}

func readBench(dir string) []report.BenchRow {
	var rows []report.BenchRow
	if f := benchFile(dir); f != "" {
		_ = readJSON(f, &rows)
	}
	return rows
}

// benchFile is the bench.json of the latest bench under dir ("" if none).
func benchFile(dir string) string {
	matches, _ := filepath.Glob(filepath.Join(dir, "bench", "*", "bench.json"))
	if len(matches) == 0 {
		return ""
	}
	return matches[len(matches)-1]
}

// stepFiles are the files named name of the steps under out (out/STEP
// and out/LIB/STEP).
func stepFiles(out, name string) []string {
	files, _ := filepath.Glob(filepath.Join(out, "*", name))
	more, _ := filepath.Glob(filepath.Join(out, "*", "*", name))
	return append(files, more...)
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

func machine() string {
	return fmt.Sprintf("%s/%s, %d cores", runtime.GOOS, runtime.GOARCH, runtime.NumCPU())
}

func redisVersion() string {
	out, err := exec.Command("redis-server", "--version").Output()
	if err != nil {
		return "?"
	}
	for _, f := range strings.Fields(string(out)) {
		if strings.HasPrefix(f, "v=") {
			return strings.TrimPrefix(f, "v=")
		}
	}
	return "?"
}

// lockcheckVersion is the commit the survey's lockcheck was built from.
// binRevision is the commit bin was built from, as make survey wrote it
// beside the binary (BIN.rev: git describe --always --dirty at the build),
// or "?".
func binRevision(bin string) string {
	b, err := os.ReadFile(bin + ".rev")
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(b))
}

// revisions names the commits the outputs under out came from (each
// step's revision file), the most used first: a survey resumed after a
// commit ran its later steps on another binary, and the page says so.
func revisions(out string) string {
	count := map[string]int{}
	files := stepFiles(out, "revision")
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil {
			count[strings.TrimSpace(string(b))]++
		}
	}
	if len(count) == 0 {
		return "commit ?"
	}
	revs := slices.SortedFunc(maps.Keys(count), func(a, b string) int {
		if c := count[b] - count[a]; c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(revs))
	for i, r := range revs {
		parts[i] = fmt.Sprintf("%s (%d of %d steps)", r, count[r], len(files))
	}
	if len(parts) == 1 {
		return "commit " + revs[0]
	}
	return "commits " + strings.Join(parts, ", ")
}

// readRerun reads a break's command run again under dir: its exit status
// (the done file) and its time.
func readRerun(dir string) (survey.Rerun, bool) {
	done, err := os.ReadFile(filepath.Join(dir, "done"))
	if err != nil {
		return survey.Rerun{}, false
	}
	var rr survey.Rerun
	if _, err := fmt.Sscan(string(done), &rr.Exit); err != nil {
		return survey.Rerun{}, false
	}
	el, _ := os.ReadFile(filepath.Join(dir, "elapsed"))
	rr.Elapsed = cmp.Or(strings.TrimSpace(string(el)), "?")
	return rr, true
}

// archiveTo copies to dst what the page is written from, under the same
// paths: each step's done, revision and elapsed; each verify's verify.json
// and, for the scenarios not passed, the results.json of their last run;
// each skew point's results.json; each bench's bench.json. The latest
// links become directories.
func archiveTo(out, dst string, results []survey.Result) error {
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	copyFile := func(rel, to string) error {
		b, err := os.ReadFile(filepath.Join(out, rel))
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dst, to)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, to), b, 0o644)
	}
	records, _ := filepath.Glob(filepath.Join(out, "demos", "*", "demo.json"))
	for _, f := range records {
		rel, _ := filepath.Rel(out, f)
		if err := copyFile(rel, rel); err != nil {
			return err
		}
	}
	for _, done := range stepFiles(out, "done") {
		step, _ := filepath.Rel(out, filepath.Dir(done))
		for _, f := range []string{"done", "revision", "elapsed"} {
			if err := copyFile(filepath.Join(step, f), filepath.Join(step, f)); err != nil {
				return err
			}
		}
		if err := copyFile(filepath.Join(step, "latest", "results.json"), filepath.Join(step, "latest", "results.json")); err != nil {
			return err
		}
		if f := benchFile(filepath.Join(out, step)); f != "" {
			rel, _ := filepath.Rel(out, f)
			if err := copyFile(rel, rel); err != nil {
				return err
			}
		}
		v, vdir := readVerify(filepath.Join(out, step))
		if v == nil || strings.HasPrefix(filepath.Base(step), "repro-") { // a rerun's page line is its exit and time
			continue
		}
		vrel, _ := filepath.Rel(out, vdir)
		to := filepath.Join(step, "verify", "latest")
		if err := copyFile(filepath.Join(vrel, "verify.json"), filepath.Join(to, "verify.json")); err != nil {
			return err
		}
		for _, row := range v.Rows {
			if row.Status != report.StatusPassed && row.Dir != "" {
				if err := copyFile(filepath.Join(vrel, row.Dir, "results.json"), filepath.Join(to, row.Dir, "results.json")); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
