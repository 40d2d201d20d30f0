package history

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// A LineError is bad input at one line of a history.
type LineError struct {
	Path string // may be empty
	Line int    // from 1
	Err  error
}

func (e *LineError) Error() string {
	where := "history"
	if e.Path != "" {
		where = e.Path
	}
	return fmt.Sprintf("%s line %d: %v", where, e.Line, e.Err)
}

func (e *LineError) Unwrap() error { return e.Err }

// ErrEmpty is a history with no op at all: nothing to judge, so never
// "valid".
var ErrEmpty = errors.New("history has no ops: a run that recorded nothing cannot be checked")

// maxLine bounds one history line; a longer one is reported, not buffered.
const maxLine = 1 << 20

// Read decodes a whole history. Lines are decoded in parallel; the first bad
// line (lowest line number) is reported with its number. Indexes must be
// dense and in order, as the Writer makes them.
func Read(r io.Reader) ([]Op, error) {
	var ops []Op
	err := Scan(r, func(batch []Op) error {
		ops = append(ops, batch...)
		return nil
	})
	return ops, err
}

// ScanBatch is how many lines Scan decodes at a time: the bound on what a
// scan holds, whatever the history's length.
const ScanBatch = 1 << 16

// Scan decodes a history batch by batch, each batch's lines in parallel,
// and hands each to fn in order; fn must not keep the slice (its ops may
// be kept). It is Read without holding the history: the first bad line is
// reported with its number and ends the scan, and a history with no op is
// ErrEmpty.
func Scan(r io.Reader, fn func([]Op) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	unterminated := false // the last line has no newline
	sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
		adv, tok, err := bufio.ScanLines(data, atEOF)
		if atEOF && tok != nil && adv == len(data) && bytes.IndexByte(data, '\n') < 0 {
			unterminated = true
		}
		return adv, tok, err
	})
	b := batcher{fn: fn, ops: make([]Op, ScanBatch), errs: make([]error, ScanBatch)}
	for sc.Scan() {
		if err := b.add(sc.Bytes()); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return &LineError{Line: b.seen + len(b.lines) + len(b.blanks) + 1, Err: fmt.Errorf("line longer than %d bytes", maxLine)}
		}
		return fmt.Errorf("read history: %w", err)
	}
	// A last line cut off (no newline, not an op) is what a run killed
	// mid-write leaves: the ops before it are whole, and are checked.
	var cut error
	if n := len(b.lines); n > 0 && unterminated && len(b.blanks) == 0 && cutShort(b.lines[n-1]) {
		b.lines = b.lines[:n-1]
		cut = &CutOff{Line: b.seen + n, Whole: b.seen + n - 1}
	}
	// A trailing blank line is tolerated (an editor's final newline).
	if err := b.flush(); err != nil {
		return err
	}
	if b.seen == 0 {
		return ErrEmpty
	}
	return cut
}

// batcher gathers Scan's lines into batches, decodes each and hands its
// ops to fn.
type batcher struct {
	// depths is whether the history's first acquire declared a depth
	// (a reentrant lock's: 1 no, 2 yes, 0 none seen yet), which every
	// acquire after must match.
	depths int8
	fn     func([]Op) error
	lines  [][]byte
	arena  []byte
	blanks [][]byte // blank lines held back: only trailing ones are tolerated
	seen   int      // lines handed to decode so far
	ops    []Op
	errs   []error
	// permits is the permits the history's first acquire declared (0:
	// none seen yet; 1: a mutex's), which every acquire after must
	// declare too.
	permits int
	// wake is the wake-up bound the history's first blocking acquire
	// declared (0: none seen yet), which every one after must declare.
	wake int64
}

// add takes the next line, and decodes a full batch.
func (b *batcher) add(line []byte) error {
	if len(bytes.TrimSpace(line)) == 0 {
		b.blanks = append(b.blanks, nil)
		return nil
	}
	for range b.blanks { // a blank line inside the history: decodeLine reports it
		b.lines = append(b.lines, nil)
	}
	b.blanks = b.blanks[:0]
	// Copy into a shared arena: one allocation per ~1 MiB, not per line.
	if len(b.arena)+len(line) > cap(b.arena) {
		b.arena = make([]byte, 0, max(1<<20, len(line)))
	}
	start := len(b.arena)
	b.arena = append(b.arena, line...)
	b.lines = append(b.lines, b.arena[start:len(b.arena):len(b.arena)])
	if len(b.lines) >= ScanBatch {
		return b.flush()
	}
	return nil
}

// flush decodes the lines gathered and hands their ops to fn.
func (b *batcher) flush() error {
	if len(b.lines) == 0 {
		return nil
	}
	batch := b.ops[:len(b.lines)]
	if err := decodeBatch(b.lines, batch, b.errs, int64(b.seen)); err != nil {
		return err
	}
	if err := b.onePermits(batch); err != nil {
		return err
	}
	if err := b.oneWake(batch); err != nil {
		return err
	}
	b.seen += len(b.lines)
	b.lines, b.arena = b.lines[:0], b.arena[:0]
	return b.fn(batch)
}

// onePermits checks that batch's acquires declare the permits the
// history's first did, and a depth if it did: a history has one shape (a
// run one k), and a checker given two would judge every key by one of
// them.
func (b *batcher) onePermits(batch []Op) error {
	for i := range batch {
		op := &batch[i]
		if op.F != Acquire {
			continue
		}
		k := max(op.Permits, 1)
		if b.permits == 0 {
			b.permits = k
		}
		r := int8(1)
		if op.Depth > 0 {
			r = 2
		}
		if b.depths == 0 {
			b.depths = r
		} else if r != b.depths {
			return &LineError{Line: b.seen + i + 1, Err: fmt.Errorf("acquire with depth %d in a history whose first acquire had %s: a history is of one lock, one shape (a reentrant lock's acquires all declare a depth)", op.Depth, map[bool]string{true: "one", false: "none"}[b.depths == 2])}
		}
		if k != b.permits {
			return &LineError{Line: b.seen + i + 1, Err: fmt.Errorf("acquire of %d permits in a history whose acquires have %d: a history is of one lock, one shape", k, b.permits)}
		}
	}
	return nil
}

// oneWake checks that batch's blocking acquires declare the wake-up
// bound the history's first did: a history is of one lock, which
// declares one.
func (b *batcher) oneWake(batch []Op) error {
	for i := range batch {
		w := batch[i].WakeMs
		if w == 0 {
			continue
		}
		if b.wake == 0 {
			b.wake = w
		}
		if w != b.wake {
			return &LineError{Line: b.seen + i + 1, Err: fmt.Errorf("blocking acquire with wake_ms %d in a history whose first declared %d: a history is of one lock, one wake-up bound", w, b.wake)}
		}
	}
	return nil
}

// cutShort reports whether line is the start of a line that stopped
// early: JSON that ends before its object does (a rune cut in two at its
// end aside). A whole line that breaks a rule is not one.
func cutShort(line []byte) bool {
	for k := 0; k < utf8.UTFMax && len(line) > 0 && !utf8.Valid(line); k++ {
		line = line[:len(line)-1]
	}
	var w wireOp
	return errors.Is(json.Unmarshal(line, &w, strict), io.ErrUnexpectedEOF)
}

// CutOff is what Scan returns, once every whole op before it was handed
// to fn, when the history's last line ends without a newline and is not
// an op: the write of a run killed outright stopped in mid-line.
type CutOff struct {
	Path  string
	Line  int // the cut-off line, from 1
	Whole int // the ops before it
}

func (e *CutOff) Error() string {
	where := "history"
	if e.Path != "" {
		where = e.Path
	}
	return fmt.Sprintf("%s line %d is cut off (no newline, not a whole op: a run killed mid-write): checked the %d whole ops before it", where, e.Line, e.Whole)
}

// decodeBatch decodes lines into ops in parallel, the first line being
// number first (from 0); it returns the lowest bad line's error.
func decodeBatch(lines [][]byte, ops []Op, errs []error, first int64) error {
	workers := runtime.GOMAXPROCS(0)
	chunk := (len(lines) + workers - 1) / workers
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		lo, hi := w*chunk, min((w+1)*chunk, len(lines))
		if lo >= hi {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := lo; i < hi; i++ {
				errs[i] = decodeLine(lines[i], &ops[i], first+int64(i))
				if errs[i] != nil {
					for i++; i < hi; i++ {
						errs[i] = nil
					}
					return // this chunk stops at its first error; earlier chunks still report theirs
				}
			}
		}()
	}
	wg.Wait()
	for i := range lines {
		if errs[i] != nil {
			return &LineError{Line: int(first) + i + 1, Err: errs[i]}
		}
	}
	return nil
}

// wireOp is a line as read: required fields are pointers, so that a
// missing one is told apart from a zero.
type wireOp struct {
	Index     *int64        `json:"index"`
	Process   *int          `json:"process"`
	F         *Func         `json:"f"`
	Type      *Type         `json:"type"`
	Key       string        `json:"key"`
	Token     string        `json:"token"`
	Fence     int64         `json:"fence"`
	TTLms     *int64        `json:"ttl_ms"`
	Mode      string        `json:"mode"`
	Access    string        `json:"access"`
	Permits   int           `json:"permits"`
	WaitMs    int64         `json:"wait_ms"`
	WakeMs    int64         `json:"wake_ms"`
	Tried     int64         `json:"tried"`
	Call      *int64        `json:"call"`
	Return    *int64        `json:"return"`
	Scheduled int64         `json:"scheduled"`
	CutShort  bool          `json:"cut_short"`
	Late      bool          `json:"late"`
	Error     string        `json:"error"`
	Value     *NemesisValue `json:"value"`
	Bound     int64         `json:"clock_bound"`
	Answered  bool          `json:"answered"`
	Depth     int           `json:"depth"`
}

// strict is how a line is decoded: the history is a contract, and a line
// misread silently can turn a violation into "valid". encoding/json/v2
// semantics (github.com/go-json-experiment/json, its mirror until Go
// 1.27): field names match exactly, each at most once, strings are valid
// UTF-8; and here no field lockcheck does not know.
var strict = json.JoinOptions(json.RejectUnknownMembers(true), jsontext.AllowDuplicateNames(false),
	jsontext.AllowInvalidUTF8(false), json.MatchCaseInsensitiveNames(false))

func decodeLine(line []byte, op *Op, want int64) error {
	if len(bytes.TrimSpace(line)) == 0 {
		return errors.New("empty line")
	}
	if !utf8.Valid(line) {
		return errors.New("not UTF-8")
	}
	var w wireOp
	if err := json.Unmarshal(line, &w, strict); err != nil {
		return fmt.Errorf("not a history op: %v", err)
	}
	for _, f := range []struct {
		name string
		set  bool
	}{{"index", w.Index != nil}, {"process", w.Process != nil}, {"f", w.F != nil}, {"type", w.Type != nil},
		{"call", w.Call != nil}, {"return", w.Return != nil}} {
		if !f.set {
			return fmt.Errorf("missing field %q (every op has index, process, f, type, call and return)", f.name)
		}
	}
	if *w.Index != want {
		return fmt.Errorf("index %d, want %d (indexes are dense and start at 0)", *w.Index, want)
	}
	*op = Op{Index: *w.Index, Process: *w.Process, F: *w.F, Type: *w.Type, Key: w.Key, Token: w.Token, Fence: w.Fence,
		Mode: w.Mode, Access: w.Access, Permits: w.Permits, WaitMs: w.WaitMs, WakeMs: w.WakeMs, Tried: w.Tried, Call: *w.Call, Return: *w.Return, Scheduled: w.Scheduled, CutShort: w.CutShort, Late: w.Late, Error: w.Error, Value: w.Value, ClockBound: w.Bound, Answered: w.Answered}
	if w.TTLms != nil {
		op.TTLms = *w.TTLms
		if op.TTLms < 1 || op.TTLms > MaxTTLms {
			return fmt.Errorf("ttl_ms %d: want 1 to %d", op.TTLms, MaxTTLms)
		}
	}
	op.Depth = w.Depth
	return op.validate()
}

// ReadFile reads the history at path; errors name the path.
func ReadFile(path string) ([]Op, error) {
	var ops []Op
	err := ScanFile(path, func(batch []Op) error {
		ops = append(ops, batch...)
		return nil
	})
	return ops, err
}

// ScanFile scans the history at path as Scan does; errors name the path.
func ScanFile(path string, fn func([]Op) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	err = Scan(bufio.NewReaderSize(f, 1<<20), fn)
	if errors.Is(err, ErrEmpty) {
		return fmt.Errorf("%s: %w", path, err)
	}
	var le *LineError
	if errors.As(err, &le) {
		le.Path = path
	}
	var cut *CutOff
	if errors.As(err, &cut) {
		cut.Path = path
	}
	return err
}
