package history

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// reentrantOps are a reentrant lock's: one owner's outer acquire and its
// re-entry share the token, each with its depth.
func reentrantOps() []Op {
	return []Op{
		{Process: 1, F: Acquire, Type: OK, Key: "r:1", Token: "own1", TTLms: 1000, Depth: 1, Call: 10, Return: 20},
		{Process: 1, F: Acquire, Type: OK, Key: "r:1", Token: "own1", TTLms: 1000, Depth: 2, Call: 21, Return: 30},
		{Process: 2, F: Acquire, Type: Fail, Key: "r:1", TTLms: 1000, Depth: 1, Call: 22, Return: 31},
		{Process: 1, F: Release, Type: OK, Key: "r:1", Token: "own1", Call: 40, Return: 50},
	}
}

// TestDepth_RoundTrip: a reentrant lock's depths are written as
// encoding/json writes them and read back as written.
func TestDepth_RoundTrip(t *testing.T) {
	for _, op := range reentrantOps() {
		op.Index = 7
		line := append([]byte(`{"index":7`), AppendBody(nil, &op)...)
		want, _ := json.Marshal(op)
		if string(line) != string(want)+"\n" {
			t.Errorf("AppendBody:\n got %s\nwant %s", line, want)
		}
	}
	roundTrip(t, reentrantOps())
}

// TestRead_DepthRules: a depth is an acquire's, 1 up, never with
// permits or access, and a history's acquires all declare one or none
// (one shape a history).
func TestRead_DepthRules(t *testing.T) {
	good := `{"index":0,"process":1,"f":"acquire","type":"ok","key":"k","token":"a","ttl_ms":5,"call":1,"return":2,"depth":1}`
	second := strings.NewReplacer(`"index":0`, `"index":1`, `"depth":1`, `"depth":2`).Replace(good)
	plain := strings.NewReplacer(`"index":0`, `"index":1`, `,"depth":1`, ``).Replace(good)
	release := `{"index":2,"process":1,"f":"release","type":"ok","key":"k","token":"a","call":3,"return":4}`
	if ops, err := Read(strings.NewReader(good + "\n" + second + "\n" + release + "\n")); err != nil || ops[1].Depth != 2 || ops[2].Depth != 0 {
		t.Fatalf("a reentrant history: got %v, %v; want depths 1, 2 and none on the release", ops, err)
	}
	tests := []struct {
		name, input string
		line        int
		want        string
	}{
		{"depth on a release", strings.Replace(release, `"index":2`, `"index":0`, 1)[:len(release)-1] + `,"depth":1}`, 1, "depth 1 on release op"},
		{"depth zero is absent, negative is bad", strings.Replace(good, `"depth":1`, `"depth":-1`, 1), 1, "depth -1 on acquire op"},
		{"depth with permits", strings.Replace(good, `"depth":1`, `"depth":1,"permits":3`, 1), 1, "and no permits or access"},
		{"depth with access", strings.Replace(good, `"depth":1`, `"depth":1,"access":"read"`, 1), 1, "and no permits or access"},
		{"a mutex's acquire after a reentrant's", good + "\n" + plain, 2, "acquire with depth 0 in a history whose first acquire had one"},
		{"a reentrant's acquire after a mutex's", strings.Replace(plain, `"index":1`, `"index":0`, 1) + "\n" + second, 2, "acquire with depth 2 in a history whose first acquire had none"},
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
