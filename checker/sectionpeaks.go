package checker

import (
	"cmp"
	"slices"

	"github.com/lockcheck/lockcheck/history"
)

// KeyPeak is one key of a shape beyond the mutex as the resource saw it:
// the most leases in their sections at once (each surely inside, as the
// mutex checker reads them) against the key's permits, and, on a
// read-write lock's key, the longest a writer's section overlapped
// another lease's (ns).
type KeyPeak struct {
	Key     string `json:"key"`
	Holders int64  `json:"peak_holders"`
	Permits int    `json:"permits"`
	// WriterOverlapNs is the longest overlap of a write lease's section
	// with another lease's, a read-write lock's history only.
	WriterOverlapNs int64 `json:"longest_writer_overlap_ns,omitempty"`
}

// KeyPeaks is each key's KeyPeak, by key, on a semaphore's history or a
// read-write lock's; none on a mutex's (its peaks are the mutex
// checker's double holders).
func KeyPeaks(ops []history.Op) []KeyPeak {
	if sh, _ := shapeOf(ops, Options{}); !sh.peaks {
		return nil
	}
	rw := HistoryReadWrite(ops)
	byKey := map[string]*KeyPeak{}
	sectionCheck("", ops, func(key string, in *sections, w *history.Op, k int) string {
		p := byKey[key]
		if p == nil {
			p = &KeyPeak{Key: key, Permits: k}
			byKey[key] = p
		}
		p.Holders = max(p.Holders, int64(in.leases))
		if rw {
			p.WriterOverlapNs = max(p.WriterOverlapNs, writerOverlap(in, w))
		}
		return ""
	})
	out := make([]KeyPeak, 0, len(byKey))
	for _, p := range byKey {
		out = append(out, *p)
	}
	slices.SortFunc(out, func(a, b KeyPeak) int { return cmp.Compare(a.Key, b.Key) })
	return out
}

// writerOverlap is the longest overlap of w, entering, with a write
// inside of another lease where one of the two is a write lease's: the
// others entered no later than w, so the overlap runs from w's entry to
// the first of the two exits.
func writerOverlap(in *sections, w *history.Op) int64 {
	var longest int64
	mine := leaseOf(w)
	for _, x := range in.in {
		if l := leaseOf(x); l != mine && (in.write[l] || in.write[mine]) {
			longest = max(longest, min(x.Return, w.Return)-w.Call)
		}
	}
	return longest
}
