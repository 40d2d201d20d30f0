package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

func sampleOps() []Op {
	return []Op{
		{Process: 3, F: Acquire, Type: OK, Key: "lock:1", Token: "ab12", TTLms: 1000, Call: 10, Return: 20},
		{Process: 6, F: Acquire, Type: Fail, Key: "lock:1", TTLms: 1000, Call: 12, Return: 22, Scheduled: 8},
		{Process: 7, F: Acquire, Type: OK, Key: "rw:1", Token: "ef56", TTLms: 1000, Access: AccessRead, Call: 13, Return: 23},
		{Process: 3, F: Write, Type: OK, Key: "lock:1", Token: "ab12", Fence: 7, Call: 21, Return: 40, ClockBound: 3},
		{Process: 5, F: Write, Type: OK, Key: "lock:1", Token: "cd34", Call: 41, Return: 60, CutShort: true, Late: true},
		{Process: 3, F: Extend, Type: OK, Key: "lock:1", Token: "ab12", TTLms: 500, Mode: ExtendAdd, Call: 41, Return: 45},
		{Process: 4, F: Acquire, Type: Info, Key: `<script>"k"\</script>`, Token: "lost-1", TTLms: 5, Call: 1, Return: 99, Error: "i/o timeout\n\t√"},
		{Process: 4, F: Release, Type: Info, Key: "lock:1", Token: "ab12", Call: 46, Return: 48, Error: "no outcome", ClockBound: 2, Answered: true},
		{Process: NemesisProcess, F: Nemesis, Type: Info, Call: 5, Return: 5, Value: &NemesisValue{Fault: "pause-redis", Phase: "start", Targets: []string{"n1"}}},
		{Process: NemesisProcess, F: Nemesis, Type: Info, Call: 50, Return: 60, Value: &NemesisValue{Fault: "failover", Phase: "stop", Targets: []string{"n1"},
			Events: map[string]int64{"lost_retaken": 1}, Retaken: []Retake{{Key: "lock:1", Token: "ab12", At: 55}}, Healed: 52}},
	}
}

// semaphoreOps are a semaphore's: a history has one shape (permits on
// every acquire or on none), so they are not among sampleOps.
func semaphoreOps() []Op {
	return []Op{
		{Process: 8, F: Acquire, Type: OK, Key: "sem:1", Token: "gh78", TTLms: 1000, Permits: 3, Call: 14, Return: 24},
		{Process: 9, F: Acquire, Type: Fail, Key: "sem:1", TTLms: 1000, Permits: 3, Call: 15, Return: 25},
		{Process: 8, F: Release, Type: OK, Key: "sem:1", Token: "gh78", Call: 30, Return: 31},
	}
}

// waiterOps are a blocking lock's: a history has one wake-up bound
// (wake_ms on every blocking acquire), so they are not among sampleOps.
func waiterOps() []Op {
	return []Op{
		{Process: 1, F: Acquire, Type: OK, Key: "w:1", Token: "ij90", TTLms: 1000, WaitMs: 2000, WakeMs: 100, Tried: 40, Call: 14, Return: 44},
		{Process: 2, F: Acquire, Type: Fail, Key: "w:1", TTLms: 1000, WaitMs: 2000, WakeMs: 100, Call: 15, Return: 2000000025},
	}
}

func TestWriter_RoundTrip(t *testing.T) {
	for _, ops := range [][]Op{sampleOps(), semaphoreOps(), waiterOps()} {
		roundTrip(t, ops)
	}
}

func roundTrip(t *testing.T, want []Op) {
	t.Helper()
	var buf bytes.Buffer
	w := NewWriter(&buf, 0)
	for i := range want {
		idx, err := w.Write(want[i])
		if err != nil {
			t.Fatal(err)
		}
		want[i].Index = idx
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := Read(&buf)
	if err != nil {
		t.Fatalf("read back: %v", err)
	}
	sameOps(t, got, want)
}

// sameOps fails the test unless got and want encode identically, op by op.
func sameOps(t *testing.T, got, want []Op) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d ops, want %d", len(got), len(want))
	}
	for i := range want {
		g, _ := json.Marshal(got[i])
		w, _ := json.Marshal(want[i])
		if !bytes.Equal(g, w) {
			t.Fatalf("op %d: got %s, want %s", i, g, w)
		}
	}
}

// TestAppendBody_MatchesEncodingJSON: the hand-rolled encoder on the hot
// path must say exactly what encoding/json says.
func TestAppendBody_MatchesEncodingJSON(t *testing.T) {
	for _, op := range append(append(sampleOps(), semaphoreOps()...), waiterOps()...) {
		op.Index = 42
		line := append([]byte(`{"index":42`), AppendBody(nil, &op)...)
		want, _ := json.Marshal(op)
		if got := bytes.TrimSpace(line); !bytes.Equal(got, want) {
			t.Errorf("got  %s\nwant %s", got, want)
		}
	}
}

func TestWriter_ConcurrentIndexesDense(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf, 0)
	var wg sync.WaitGroup
	for p := 0; p < 50; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				_, _ = w.Write(Op{Process: p, F: Release, Type: Fail, Key: "k", Call: int64(i), Return: int64(i)})
			}
		}()
	}
	wg.Wait()
	w.Close()
	ops, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(ops) != 50*200 {
		t.Fatalf("got %d ops, want %d", len(ops), 50*200)
	}
}

func TestRead_BadInput(t *testing.T) {
	good := `{"index":0,"process":1,"f":"acquire","type":"ok","key":"k","token":"a","ttl_ms":5,"call":1,"return":2}`
	second := strings.Replace(good, `"index":0`, `"index":1`, 1)
	without := func(field string) string {
		i := strings.Index(good, `"`+field+`":`)
		j := i + strings.IndexAny(good[i:], ",}")
		if good[j] == ',' {
			j++
		} else {
			i-- // the last field: drop the comma before it
		}
		return good[:i] + good[j:]
	}
	tests := []struct {
		name, input string
		line        int
		want        string
	}{
		{"not json", good + "\n{oops\n", 2, "not a history op"},
		{"index gap", good + "\n" + strings.Replace(good, `"index":0`, `"index":5`, 1), 2, "index 5, want 1"},
		{"unknown f", strings.Replace(good, "acquire", "grab", 1), 1, `unknown f "grab"`},
		{"unknown type", strings.Replace(good, `"ok"`, `"maybe"`, 1), 1, `unknown type "maybe"`},
		{"return before call", strings.Replace(good, `"return":2`, `"return":0`, 1), 1, "want 0 <= call <= return"},
		{"negative call", strings.Replace(good, `"call":1`, `"call":-5`, 1), 1, "want 0 <= call <= return"},
		{"time past the largest", strings.Replace(good, `"return":2`, `"return":9223372036854775807`, 1), 1, "want 0 <= call <= return"},
		{"no key", strings.Replace(good, `"key":"k",`, "", 1), 1, "no key"},
		{"no ttl", strings.Replace(good, `"ttl_ms":5,`, "", 1), 1, "no ttl_ms"},
		{"ttl zero", strings.Replace(good, `"ttl_ms":5`, `"ttl_ms":0`, 1), 1, "ttl_ms 0: want 1 to"},
		{"ttl too long", strings.Replace(good, `"ttl_ms":5`, `"ttl_ms":2147483649`, 1), 1, "ttl_ms 2147483649: want 1 to"},
		{"no token on ok acquire", without("token"), 1, "acquire ok op has no token"},
		{"no token on info release", strings.NewReplacer(`"acquire"`, `"release"`, `"ok"`, `"info"`).Replace(without("token")), 1, "release info op has no token"},
		{"cut_short on acquire", strings.Replace(good, `"return":2`, `"return":2,"cut_short":true`, 1), 1, "cut_short or late on acquire op"},
		{"late on acquire", strings.Replace(good, `"return":2`, `"return":2,"late":true`, 1), 1, "cut_short or late on acquire op"},
		{"scheduled after call", strings.Replace(good, `"return":2`, `"return":2,"scheduled":2`, 1), 1, "scheduled 2 on acquire op called at 1"},
		{"mode on acquire", strings.Replace(good, `"ttl_ms":5,`, `"ttl_ms":5,"mode":"add",`, 1), 1, `mode "add" on acquire op`},
		{"access on release", strings.NewReplacer(`"acquire"`, `"release"`, `"ttl_ms":5,`, `"access":"read",`).Replace(good), 1, `access "read" on release op`},
		{"unknown access", strings.Replace(good, `"ttl_ms":5,`, `"ttl_ms":5,"access":"shared",`, 1), 1, `access "shared" on acquire op`},
		{"permits mixed", good + "\n" + strings.Replace(second, `"ttl_ms":5,`, `"ttl_ms":5,"permits":3,`, 1), 2, "acquire of 3 permits in a history whose acquires have 1"},
		{"permits mixed, none after some", strings.Replace(good, `"ttl_ms":5,`, `"ttl_ms":5,"permits":3,`, 1) + "\n" + second, 2, "acquire of 1 permits in a history whose acquires have 3"},
		{"permits negative", strings.Replace(good, `"ttl_ms":5,`, `"ttl_ms":5,"permits":-2,`, 1), 1, "permits -2 on acquire op"},
		{"wait without wake", strings.Replace(good, `"ttl_ms":5,`, `"ttl_ms":5,"wait_ms":100,`, 1), 1, "wait_ms 100, wake_ms 0 on acquire op"},
		{"wait on release", strings.NewReplacer(`"acquire"`, `"release"`, `"ttl_ms":5,`, `"wait_ms":100,"wake_ms":10,`).Replace(good), 1, "wait_ms 100, wake_ms 10 on release op"},
		{"tried without wait", strings.Replace(good, `"ttl_ms":5,`, `"ttl_ms":5,"tried":1,`, 1), 1, "tried 1 on acquire ok op"},
		{"tried past return", strings.Replace(good, `"ttl_ms":5,`, `"ttl_ms":5,"wait_ms":100,"wake_ms":10,"tried":3,`, 1), 1, "tried 3 on acquire ok op called at 1, returned at 2"},
		{"wake mixed", strings.Replace(good, `"ttl_ms":5,`, `"ttl_ms":5,"wait_ms":100,"wake_ms":10,`, 1) + "\n" + strings.Replace(second, `"ttl_ms":5,`, `"ttl_ms":5,"wait_ms":100,"wake_ms":20,`, 1), 2, "wake_ms 20 in a history whose first declared 10"},
		{"nemesis event not declared", `{"index":0,"process":-1,"f":"nemesis","type":"info","call":1,"return":2,"value":{"fault":"kill-redis","phase":"stop","events":{"lost_at_restart":1,"lost_at_rstart":2}}}`, 1, `nemesis event "lost_at_rstart" is not one lockcheck reads`},
		{"answered on an ok op", strings.Replace(good, `"return":2`, `"return":2,"answered":true`, 1), 1, "answered on acquire ok op"},
		{"healed_ns on a start op", `{"index":0,"process":-1,"f":"nemesis","type":"info","call":1,"return":2,"value":{"fault":"kill-redis","phase":"start","healed_ns":2}}`, 1, "nemesis start op healed_ns 2: only a stop op takes it"},
		{"healed_ns past the stop's return", `{"index":0,"process":-1,"f":"nemesis","type":"info","call":1,"return":2,"value":{"fault":"kill-redis","phase":"stop","healed_ns":3}}`, 1, "between its call 1 and return 2"},
		{"negative clock bound", strings.Replace(good, `"return":2`, `"return":2,"clock_bound":-1`, 1), 1, "clock_bound -1: want 0 to"},
		{"clock bound too wide", strings.Replace(good, `"return":2`, `"return":2,"clock_bound":1099511627777`, 1), 1, "clock_bound 1099511627777: want 0 to"},
		{"blank line inside", good + "\n\n" + second, 2, "empty line"},
		{"no call", without("call"), 1, `missing field "call"`},
		{"no return", without("return"), 1, `missing field "return"`},
		{"no index", without("index"), 1, `missing field "index"`},
		{"no process", without("process"), 1, `missing field "process"`},
		{"no type", without("type"), 1, `missing field "type"`},
		{"no f", without("f"), 1, `missing field "f"`},
		{"duplicate field", strings.Replace(good, `"call":1`, `"call":1,"call":0`, 1), 1, "duplicate"},
		{"upper-case field", strings.Replace(good, `"call"`, `"Call"`, 1), 1, "not a history op"},
		{"unknown field", strings.Replace(good, `"call"`, `"cal":3,"call"`, 1), 1, "unknown"},
		{"not utf-8", strings.Replace(good, `"k"`, "\"k\xff\"", 1), 1, "not UTF-8"},
		{"string for a number", strings.Replace(good, `"call":1`, `"call":"1"`, 1), 1, "not a history op"},
		{"nemesis without value", `{"index":0,"process":-1,"f":"nemesis","type":"info","call":1,"return":1}`, 1, "nemesis op without a value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Read(strings.NewReader(tt.input))
			var le *LineError
			if !errors.As(err, &le) {
				t.Fatalf("got %v, want a LineError", err)
			}
			if le.Line != tt.line || !strings.Contains(le.Error(), tt.want) {
				t.Errorf("got %q at line %d, want %q at line %d", le.Error(), le.Line, tt.want, tt.line)
			}
		})
	}
}

func TestRead_EmptyIsAnError(t *testing.T) {
	for _, in := range []string{"", "\n", "\n\n  \n"} {
		if _, err := Read(strings.NewReader(in)); !errors.Is(err, ErrEmpty) {
			t.Errorf("Read(%q): got %v, want ErrEmpty", in, err)
		}
	}
}

func TestRead_TrailingNewlineAndMissingOptionalFields(t *testing.T) {
	in := `{"index":0,"process":1,"f":"release","type":"fail","key":"k","call":1,"return":2}` + "\n\n"
	ops, err := Read(strings.NewReader(in))
	if err != nil || len(ops) != 1 || ops[0].Token != "" || ops[0].Fence != 0 {
		t.Fatalf("got %v, %v; want one op with zero optional fields", ops, err)
	}
}

// FuzzRead: the reader never panics, and anything it accepts re-encodes
// to a history it accepts again, equal op for op.
func FuzzRead(f *testing.F) {
	var buf bytes.Buffer
	w := NewWriter(&buf, 0)
	for _, op := range sampleOps() {
		_, _ = w.Write(op)
	}
	w.Close()
	f.Add(buf.String())
	f.Add(`{"index":0,"process":1,"f":"write","type":"ok","key":"k","call":1,"return":1}`)
	f.Fuzz(func(t *testing.T, in string) {
		ops, err := Read(strings.NewReader(in))
		if err != nil {
			return
		}
		var out bytes.Buffer
		w := NewWriter(&out, 0)
		for _, op := range ops {
			if _, err := w.Write(op); err != nil {
				t.Fatal(err)
			}
		}
		w.Close()
		again, err := Read(&out)
		if err != nil {
			t.Fatalf("re-read of an accepted history: %v", err)
		}
		sameOps(t, again, ops)
	})
}

// TestCounts: the writer's live counts and Count over what it wrote agree,
// and Get and Total add up.
func TestCounts(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf, 0)
	for _, op := range sampleOps() {
		_, _ = w.Write(op)
	}
	live := w.Counts()
	_ = w.Close()
	ops, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	c := Count(ops)
	if !reflect.DeepEqual(live, c) {
		t.Errorf("live %v, read %v", live, c)
	}
	if c.Get(Write, OK) != 2 || c.Get(Acquire, "") != 4 || c.Get(Nemesis, Info) != 2 || c.Total() != int64(len(ops)) {
		t.Errorf("counts %v: want 2 ok writes, 4 acquires, 2 nemesis ops, %d in all", c, len(ops))
	}
	if _, ok := Count(ops[:1])[Nemesis]; ok {
		t.Error("a history without nemesis ops counts nemesis ops")
	}
}

// TestScan_CutOff: a last line that stops in mid-op without a newline (a
// run killed mid-write, a rune cut in two included) leaves the ops before
// it read and a *CutOff naming it; a whole last line that breaks a rule,
// or a cut line followed by another, is still a LineError.
func TestScan_CutOff(t *testing.T) {
	good := `{"index":0,"process":1,"f":"acquire","type":"ok","key":"k","token":"a","ttl_ms":5,"call":1,"return":2}`
	second := strings.Replace(good, `"index":0`, `"index":1`, 1)
	accented := strings.Replace(second, `"k"`, `"ké"`, 1)
	midRune := accented[:strings.Index(accented, "é")+1] // the first byte of é's two
	for _, cut := range []string{second[:30], second[:len(second)-1], midRune} {
		ops, err := Read(strings.NewReader(good + "\n" + cut))
		var c *CutOff
		if !errors.As(err, &c) || c.Line != 2 || c.Whole != 1 || len(ops) != 1 || !strings.Contains(err.Error(), "line 2 is cut off") {
			t.Errorf("%q: got %d ops, %v; want 1 op and line 2 cut off", cut, len(ops), err)
		}
	}
	var le *LineError
	if _, err := Read(strings.NewReader(good + "\n" + strings.Replace(second, `"ok"`, `"maybe"`, 1))); !errors.As(err, &le) {
		t.Errorf("a whole bad last line: got %v, want a LineError", err)
	}
	if _, err := Read(strings.NewReader(good + "\n" + second[:30] + "\n" + second)); !errors.As(err, &le) || le.Line != 2 {
		t.Errorf("a cut line inside: got %v, want a LineError at line 2", err)
	}
}

// fullDisk fails every write after the first n bytes.
type fullDisk struct{ n int }

func (d *fullDisk) Write(p []byte) (int, error) {
	if len(p) > d.n {
		return 0, errors.New("no space left on device")
	}
	d.n -= len(p)
	return len(p), nil
}

// TestWriter_WriteError: a write to the file that fails is returned by
// the Flush (and Close) that made it, and by every Write after it: a run
// never reports over a history it could not write in full.
func TestWriter_WriteError(t *testing.T) {
	w := NewWriter(&fullDisk{n: 100}, time.Hour)
	if _, err := w.Write(Op{Process: 1, F: Acquire, Type: OK, Key: "k", Token: "t", Call: 1, Return: 2}); err != nil {
		t.Fatalf("first write (buffered): %v", err)
	}
	if err := w.Flush(); err != nil {
		t.Fatalf("flush of one op within the space: %v", err)
	}
	for i := 0; i < 5; i++ {
		_, _ = w.Write(Op{Process: 1, F: Acquire, Type: OK, Key: "k", Token: "t", Call: 3, Return: 4})
	}
	if err := w.Flush(); err == nil {
		t.Fatal("flush past the space: no error")
	}
	if _, err := w.Write(Op{Process: 1, F: Release, Type: OK, Key: "k", Token: "t", Call: 5, Return: 6}); err == nil {
		t.Error("a write after the failed flush: no error")
	}
	if err := w.Close(); err == nil {
		t.Error("close after the failed flush: no error")
	}
}
