package report

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
)

// shapeHistory is a history of leases on keys, each lease's acquire and
// its section [from, to] ms: permits on each acquire (a semaphore's k),
// access set for a read-write lock's.
func shapeHistory(permits int, leases []shapeLease) []history.Op {
	const ms = int64(time.Millisecond)
	var ops []history.Op
	for i, l := range leases {
		ops = append(ops,
			history.Op{Process: i, F: history.Acquire, Type: history.OK, Key: l.key, Token: l.key + "-t", TTLms: 1000, Permits: permits, Access: l.access, Call: 0, Return: ms},
			history.Op{Process: i, F: history.Write, Type: history.OK, Key: l.key, Token: l.key + "-t", Call: l.from * ms, Return: l.to * ms},
			history.Op{Process: i, F: history.Release, Type: history.OK, Key: l.key, Token: l.key + "-t", Call: 100 * ms, Return: 101 * ms})
	}
	for i := range ops {
		ops[i].Index = int64(i)
	}
	return ops
}

type shapeLease struct {
	key, access string
	from, to    int64
}

// writeShape renders ops's report with its keys at the resource as the
// harness fills them (checker.KeyPeaks), and returns the page.
func writeShape(t *testing.T, ops []history.Op) (string, checker.Findings, []checker.KeyPeak) {
	t.Helper()
	dir := t.TempDir()
	rep := checker.Check(t.Context(), ops, checker.Options{OutDir: dir})
	peaks := checker.KeyPeaks(ops)
	if err := Write(dir, ops, rep, Meta{Lock: "semaphore", KeysAtResource: peaks}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b), rep, peaks
}

// TestWrite_ResourceSection: a semaphore of 2 whose key a had three
// leases in their sections at once and b two shows a 3 against 2 marked
// a violation and b 2 against 2 within k, in its run's summary too; a
// read-write lock's writer overlapping a reader by 10 ms shows 10 ms,
// marked, readers overlapping each other none; a mutex's page has no
// such table.
func TestWrite_ResourceSection(t *testing.T) {
	sem := shapeHistory(2, []shapeLease{{"a", "", 10, 40}, {"a", "", 20, 50}, {"a", "", 30, 60}, {"b", "", 10, 40}, {"b", "", 20, 50}})
	page, rep, peaks := writeShape(t, sem)
	for _, want := range []string{`<h2>At the resource</h2>`, `<th>permits k</th>`,
		`<tr><td>a</td><td class="num">3</td><td class="num">2</td><td><b>violation: 3 holders past 2 permits</b></td></tr>`,
		`<tr><td>b</td><td class="num">2</td><td class="num">2</td><td>within k</td></tr>`} {
		if !strings.Contains(page, want) {
			t.Errorf("semaphore: report lacks %s", want)
		}
	}
	var b bytes.Buffer
	textKeysAtResource(&b, peaks, readWrite(rep), "d")
	want := "  at the resource (most leases in their sections at once, of k permits):\n" +
		"    a                   3 of 2  VIOLATION\n" +
		"    b                   2 of 2\n"
	if b.String() != want {
		t.Errorf("semaphore summary: got\n%s\nwant\n%s", b.String(), want)
	}

	// Past shownKeys, the summary puts a key past its permits first.
	many := make([]checker.KeyPeak, shownKeys+2)
	for i := range many {
		many[i] = checker.KeyPeak{Key: fmt.Sprintf("k%02d", i), Holders: 1, Permits: 2}
	}
	many[shownKeys+1].Holders = 3
	b.Reset()
	textKeysAtResource(&b, many, false, "d")
	lines := strings.Split(b.String(), "\n")
	if len(lines) != shownKeys+3 || lines[1] != "    k11                 3 of 2  VIOLATION" || lines[shownKeys+1] != "    ... 2 more keys in d/results.json" {
		t.Errorf("summary of %d keys: got\n%s\nwant k11 first and 2 more keys", len(many), b.String())
	}

	rw := shapeHistory(0, []shapeLease{{"a", history.AccessWrite, 10, 30}, {"a", history.AccessRead, 20, 50},
		{"b", history.AccessRead, 10, 30}, {"b", history.AccessRead, 20, 50}})
	page, _, _ = writeShape(t, rw)
	for _, want := range []string{`<th>longest writer overlap (ms)</th>`,
		`<tr><td>a</td><td class="num">2</td><td class="num">10.000</td><td><b>violation: a writer overlapped</b></td></tr>`,
		`<tr><td>b</td><td class="num">2</td><td class="num">0.000</td><td>no writer overlapped</td></tr>`} {
		if !strings.Contains(page, want) {
			t.Errorf("read-write: report lacks %s", want)
		}
	}
	if strings.Contains(page, "permits k") {
		t.Errorf("read-write: the table stands holders against permits")
	}

	_, page = write(t)
	if strings.Contains(page, "At the resource") || !strings.Contains(page, `<section id="resource"></section>`) {
		t.Errorf("mutex: the resource section is not empty")
	}
	b.Reset()
	textKeysAtResource(&b, nil, false, "d")
	if b.Len() != 0 {
		t.Errorf("mutex summary: got %q, want no line", b.String())
	}
}
