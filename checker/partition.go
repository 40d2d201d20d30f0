package checker

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// BucketBytes is about how much history (as JSON lines) a Partition puts
// in one bucket, so that two buckets checked at once stay well under a
// gigabyte: about 400,000 ops.
const BucketBytes = 64 << 20

// BucketsFor returns how many buckets a history of size bytes is split
// into: one up to BucketBytes, and at most 4,096.
func BucketsFor(size int64) int {
	return int(min(max(1, (size+BucketBytes-1)/BucketBytes), 4096))
}

// A Partition checks a history in bounded memory. Ops are added in
// history order, as they are read; each goes to a spill file, its bucket,
// chosen by a hash of its key, and every nemesis op is kept for every
// bucket. Check then checks the buckets GOMAXPROCS at a time with the per-key
// checkers, and merges what they found: every key's ops are in one
// bucket, so the verdicts, figures and violations are those of the whole
// history (TestPartition_SameAsWhole). What it holds is a bucket or two
// and the faults, plus the largest key's ops when one key dominates.
type Partition struct {
	dir     string
	files   []*os.File
	bufs    []*bufio.Writer
	sizes   []int64 // ops per bucket
	nemesis []history.Op
	counts  history.Tally
	scratch []byte
}

// NewPartition makes a partition of the given number of buckets, its
// spill files in a new directory inside dir ("" for the system's
// temporary directory). Close removes them.
func NewPartition(dir string, buckets int) (*Partition, error) {
	d, err := os.MkdirTemp(dir, ".lockcheck-spill-")
	if err != nil {
		return nil, fmt.Errorf("check: spill dir: %w", err)
	}
	p := &Partition{dir: d, sizes: make([]int64, max(1, buckets))}
	liveSpills.Lock()
	liveSpills.dirs[d] = struct{}{}
	liveSpills.Unlock()
	for i := range p.sizes {
		f, err := os.Create(filepath.Join(d, strconv.Itoa(i)))
		if err != nil {
			_ = p.Close()
			return nil, fmt.Errorf("check: spill file: %w", err)
		}
		p.files = append(p.files, f)
		p.bufs = append(p.bufs, bufio.NewWriterSize(f, 64<<10))
	}
	return p, nil
}

// Close removes the spill files.
func (p *Partition) Close() error {
	for _, f := range p.files {
		_ = f.Close()
	}
	p.files, p.bufs = nil, nil
	liveSpills.Lock()
	delete(liveSpills.dirs, p.dir)
	liveSpills.Unlock()
	return os.RemoveAll(p.dir)
}

// liveSpills are the spill dirs of the partitions not yet closed.
var liveSpills = struct {
	sync.Mutex
	dirs map[string]struct{}
}{dirs: map[string]struct{}{}}

// RemoveSpills removes the spill files of every partition not yet
// closed, without waiting for their checks: for a process about to exit
// (a second Ctrl-C).
func RemoveSpills() {
	liveSpills.Lock()
	defer liveSpills.Unlock()
	for d := range liveSpills.dirs {
		_ = os.RemoveAll(d)
		delete(liveSpills.dirs, d)
	}
}

// Ops is how many ops were added.
func (p *Partition) Ops() int64 { return p.counts.Counts().Total() }

// Counts are the ops added, by f and type.
func (p *Partition) Counts() history.Counts { return p.counts.Counts() }

// Nemesis are the nemesis ops added, in history order.
func (p *Partition) Nemesis() []history.Op { return p.nemesis }

// bucketOf is key's bucket: FNV-1a of the key (inline: it is on every
// op's path).
func (p *Partition) bucketOf(key string) int {
	h := uint32(2166136261)
	for i := 0; i < len(key); i++ {
		h = (h ^ uint32(key[i])) * 16777619
	}
	return int(h % uint32(len(p.sizes)))
}

// Add adds ops, the next of the history in its order.
func (p *Partition) Add(ops []history.Op) error {
	for i := range ops {
		op := &ops[i]
		p.counts.Add(op)
		if op.F == history.Nemesis {
			p.nemesis = append(p.nemesis, *op)
			continue
		}
		b := p.bucketOf(op.Key)
		p.scratch = appendSpill(p.scratch[:0], op)
		if _, err := p.bufs[b].Write(p.scratch); err != nil {
			return fmt.Errorf("check: spill: %w", err)
		}
		p.sizes[b]++
	}
	return nil
}

// Bucket returns bucket i's ops with every nemesis op, in history order.
func (p *Partition) Bucket(i int) ([]history.Op, error) {
	if err := p.bufs[i].Flush(); err != nil {
		return nil, fmt.Errorf("check: spill: %w", err)
	}
	data, err := os.ReadFile(p.files[i].Name())
	if err != nil {
		return nil, fmt.Errorf("check: spill: %w", err)
	}
	ops := make([]history.Op, 0, p.sizes[i]+int64(len(p.nemesis)))
	nem := p.nemesis
	d := spillDecoder{interned: map[string]string{}}
	for len(data) > 0 {
		var op history.Op
		if data, err = d.decode(data, &op); err != nil {
			return nil, fmt.Errorf("check: spill file %d: %w", i, err)
		}
		for len(nem) > 0 && nem[0].Index < op.Index {
			ops, nem = append(ops, nem[0]), nem[1:]
		}
		ops = append(ops, op)
	}
	return append(ops, nem...), nil
}

// OpsOf returns the ops on the given keys that keep admits, with every
// nemesis op, in history order: what a report draws around violations.
func (p *Partition) OpsOf(keys []string, keep func(*history.Op) bool) ([]history.Op, error) {
	want := map[int]bool{}
	for _, k := range keys {
		want[p.bucketOf(k)] = true
	}
	out := slices.Clone(p.nemesis)
	for b := range want {
		ops, err := p.Bucket(b)
		if err != nil {
			return nil, err
		}
		for i := range ops {
			if ops[i].F != history.Nemesis && keep(&ops[i]) {
				out = append(out, ops[i])
			}
		}
	}
	slices.SortFunc(out, func(a, b history.Op) int { return cmpInt(a.Index, b.Index) })
	return out, nil
}

// Check checks the partition's history with the registered checkers:
// those that judge counts (stats) over the whole's, the others bucket by
// bucket, GOMAXPROCS buckets at a time, then merged. each, if not nil, sees every bucket's ops after
// its check (one call at a time). ctx bounds the whole check, and
// opt.Timeout each bucket's linearizability check (the whole history's,
// when it is one bucket).
func (p *Partition) Check(ctx context.Context, opt Options, each func([]history.Op)) (Findings, error) {
	opt = opt.Resolved()
	opt.whole = int(min(p.Ops(), SmallHistory+1))
	opt.shares = min(runtime.GOMAXPROCS(0), len(p.sizes))
	if opt.minimized == nil {
		opt.minimized = new(atomic.Int64)
	}
	if opt.drawSpent == nil {
		opt.drawSpent = new(atomic.Int64)
	}
	all := opt.judged(All())
	var cs []Spec
	for _, s := range all {
		if s.Counts == nil {
			cs = append(cs, s)
		}
	}
	done, err := p.checkBuckets(ctx, cs, opt, each)
	if err != nil {
		return Findings{}, err
	}
	rep := Merge(FaultWindows(p.nemesis), done)
	rep.NotJudged = opt.NotJudged
	merged := rep.Checkers
	rep.Checkers = make([]Result, 0, len(all))
	vs := make([]Verdict, 0, len(all))
	for _, s := range all {
		var r Result
		if s.Counts != nil {
			r = s.Counts(p.Counts())
			r.Name = s.Name()
		} else {
			r, merged = merged[0], merged[1:]
		}
		rep.Checkers, vs = append(rep.Checkers, r), append(vs, r.Verdict)
	}
	rep.Verdict = Compose(vs...)
	return rep, nil
}

// checkBuckets checks each bucket with the checkers cs, in parallel, and
// returns the findings of those checked; each (if set) is given each
// bucket's ops, one at a time.
func (p *Partition) checkBuckets(ctx context.Context, cs []Spec, opt Options, each func([]history.Op)) ([]Findings, error) {
	parts := make([]Findings, len(p.sizes))
	checked := make([]bool, len(p.sizes))
	var (
		mu   sync.Mutex
		errs []error
	)
	parallel(len(p.sizes), func(i int) {
		if p.sizes[i] == 0 && i > 0 {
			return // no key here; bucket 0 speaks for an empty history
		}
		ops, err := p.Bucket(i)
		if err == nil {
			parts[i], checked[i] = CheckWith(ctx, cs, ops, opt), true
		}
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			errs = append(errs, err)
		} else if each != nil {
			each(ops)
		}
	})
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	var done []Findings
	for i, ok := range checked {
		if ok {
			done = append(done, parts[i])
		}
	}
	return done, nil
}

// Merge composes the findings of parts of one history split by key, each
// with all of its fault windows ws: each checker's verdicts composed, its
// figures merged as its Spec declares, its violations in key
// order up to MaxViolations; the coverage summed, but a fault window is
// hit if it is hit in any part. The parts have the same checkers in the
// same order.
func Merge(ws []FaultWindow, parts []Findings) Findings {
	rep := Findings{Coverage: Coverage{}}
	if len(parts) == 0 {
		return rep
	}
	rep.hits = make([]windowHit, len(ws))
	for _, part := range parts {
		rep.Coverage.addKeyed(part.Coverage)
		for i, h := range part.hits {
			rep.hits[i] = rep.hits[i].or(h)
		}
	}
	for _, name := range windowFigures {
		rep.Coverage[name] = 0 // shown as 0 with no window, as a whole history's
	}
	countWindows(rep.Coverage, ws, rep.hits)
	vs := make([]Verdict, len(parts[0].Checkers))
	for i, c := range parts[0].Checkers {
		rs := make([]Result, len(parts))
		for j, part := range parts {
			rs[j] = part.Checkers[i]
		}
		r := mergeResults(c.Name, rs)
		rep.Checkers, vs[i] = append(rep.Checkers, r), r.Verdict
	}
	rep.Verdict = Compose(vs...)
	return rep
}

func mergeResults(name string, rs []Result) Result {
	out := Result{Name: name, Figures: map[string]int64{}}
	spec, _ := specOf(name)
	vs := make([]Verdict, len(rs))
	var elapsed time.Duration
	for i, r := range rs {
		vs[i] = r.Verdict
		for k, n := range r.Figures {
			if spec.Figures[k] == Max {
				out.Figures[k] = max(out.Figures[k], n)
			} else {
				out.Figures[k] += n
			}
		}
		out.ViolationCount += r.ViolationCount
		out.Violations = append(out.Violations, r.Violations...)
		out.UnknownKeys = append(out.UnknownKeys, r.UnknownKeys...)
		out.Undecided = append(out.Undecided, r.Undecided...)
		if d, err := time.ParseDuration(r.Elapsed); err == nil {
			elapsed += d
		}
		if out.Note == "" {
			out.Note = r.Note
		}
		if out.WriteError == "" {
			out.WriteError = r.WriteError
		}
	}
	// Each part's violations are in key order, a part's first
	// MaxViolations: sorted stably by key, the first MaxViolations are the
	// whole history's.
	slices.SortStableFunc(out.Violations, func(a, b Violation) int { return strings.Compare(a.Key, b.Key) })
	if len(out.Violations) > MaxViolations {
		out.Violations = out.Violations[:MaxViolations]
	}
	slices.Sort(out.UnknownKeys)
	slices.SortFunc(out.Undecided, func(a, b Undecided) int { return strings.Compare(a.Key, b.Key) })
	if len(out.Undecided) > 0 {
		out.Note = undecidedNote(out.Undecided)
	}
	out.Verdict = Compose(vs...)
	out.Elapsed = elapsed.String()
	return out
}

// The spill format: one op after another, each its fields in order as
// varints and length-prefixed strings. It is lockcheck's own scratch
// format, written and read by one process, never kept: the history's
// JSON (validated as it was read) is the record. encoding/gob would do
// it at several times the cost, on the path every op of a long run takes
// twice.
const (
	spillCutShort = 1 << 4
	spillLate     = 1 << 5
	spillAdd      = 1 << 6
	spillDepth    = 1 << 7 // a reentrant lock's acquire: its depth follows the strings
)

var (
	spillFuncs = [...]history.Func{history.Acquire, history.Release, history.Extend, history.Write}
	spillTypes = [...]history.Type{history.OK, history.Fail, history.Info}
	// spillAccess are an acquire's access modes (the shapes' fields are
	// carried as the rest are: a part judged without them is a mutex's).
	spillAccess = [...]string{"", history.AccessRead, history.AccessWrite}
)

func appendSpill(b []byte, op *history.Op) []byte {
	flags := byte(slices.Index(spillFuncs[:], op.F)<<2 | slices.Index(spillTypes[:], op.Type))
	if op.CutShort {
		flags |= spillCutShort
	}
	if op.Late {
		flags |= spillLate
	}
	if op.Mode == history.ExtendAdd {
		flags |= spillAdd
	}
	if op.Depth != 0 {
		flags |= spillDepth
	}
	b = append(b, flags)
	b = binary.AppendUvarint(b, uint64(op.Index))
	b = binary.AppendVarint(b, int64(op.Process))
	b = binary.AppendVarint(b, op.Fence)
	b = binary.AppendUvarint(b, uint64(op.TTLms))
	b = binary.AppendUvarint(b, uint64(op.Call))
	b = binary.AppendUvarint(b, uint64(op.Return-op.Call))
	b = binary.AppendUvarint(b, uint64(op.Scheduled))
	b = binary.AppendUvarint(b, uint64(op.ClockBound))
	b = binary.AppendUvarint(b, uint64(op.Permits))
	b = binary.AppendUvarint(b, uint64(slices.Index(spillAccess[:], op.Access)))
	b = binary.AppendUvarint(b, uint64(op.WaitMs))
	b = binary.AppendUvarint(b, uint64(op.WakeMs))
	b = binary.AppendUvarint(b, uint64(op.Tried))
	for _, s := range [...]string{op.Key, op.Token, op.Error} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	if op.Depth != 0 {
		b = binary.AppendUvarint(b, uint64(op.Depth))
	}
	return b
}

// spillDecoder reads the spill format; keys and errors, which repeat,
// are interned (up to a bound).
type spillDecoder struct {
	interned map[string]string
}

var errSpill = errors.New("corrupt spill record")

// texts reads a record's key, token and error, each a length and its
// bytes; keys and errors interned, tokens each their own.
func (d *spillDecoder) texts(b []byte) (s [3]string, _ []byte, _ error) {
	for i := range s {
		n, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < n {
			return s, nil, errSpill
		}
		raw := b[k : k+int(n)]
		b = b[k+int(n):]
		if i == 1 {
			s[i] = string(raw)
			continue
		}
		v, ok := d.interned[string(raw)]
		if !ok {
			v = string(raw)
			if len(d.interned) < 1<<16 {
				d.interned[v] = v
			}
		}
		s[i] = v
	}
	return s, b, nil
}

func (d *spillDecoder) decode(b []byte, op *history.Op) ([]byte, error) {
	if len(b) == 0 {
		return nil, errSpill
	}
	flags := b[0]
	b = b[1:]
	fi, ti := int(flags>>2&3), int(flags&3)
	if ti >= len(spillTypes) {
		return nil, errSpill
	}
	var u [13]uint64
	for i := range u {
		var n int
		if i == 1 || i == 2 {
			var v int64
			v, n = binary.Varint(b)
			u[i] = uint64(v)
		} else {
			u[i], n = binary.Uvarint(b)
		}
		if n <= 0 {
			return nil, errSpill
		}
		b = b[n:]
	}
	s, b, err := d.texts(b)
	if err != nil {
		return nil, err
	}
	*op = history.Op{F: spillFuncs[fi], Type: spillTypes[ti], Index: int64(u[0]), Process: int(int64(u[1])), Fence: int64(u[2]),
		TTLms: int64(u[3]), Call: int64(u[4]), Return: int64(u[4] + u[5]), Scheduled: int64(u[6]), ClockBound: int64(u[7]),
		Key: s[0], Token: s[1], Error: s[2], CutShort: flags&spillCutShort != 0, Late: flags&spillLate != 0}
	if u[8] > history.MaxPermits || u[9] >= uint64(len(spillAccess)) {
		return nil, errSpill
	}
	op.Permits, op.Access = int(u[8]), spillAccess[u[9]]
	op.WaitMs, op.WakeMs, op.Tried = int64(u[10]), int64(u[11]), int64(u[12]) // a blocking acquire's (starved waiters)
	if flags&spillAdd != 0 {
		op.Mode = history.ExtendAdd
	}
	if flags&spillDepth != 0 {
		depth, n := binary.Uvarint(b)
		if n <= 0 || depth == 0 || depth > history.MaxDepth {
			return nil, errSpill
		}
		op.Depth, b = int(depth), b[n:]
	}
	return b, nil
}
