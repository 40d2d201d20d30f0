package checker

import (
	"context"
	"slices"
	"strconv"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// The fewest ops that cannot all be true. A key is invalid when no
// timeline explains all its ops; the explanation a reader needs is the
// smallest set of them whose recorded outcomes no timeline explains,
// whatever the other ops did: the acquire that found the key held and the
// lease that held it. The other ops are not deleted but made
// indeterminate (each took effect as ok within its interval, or never):
// deleting the lease that held the key would leave its refusals with no
// holder, a contradiction the history does not contain; an indeterminate
// op only adds timelines (never taking effect is deleting it, taking
// effect is what it recorded or more). minimal shrinks the set of ops
// kept as recorded by the ddmin scheme (drop chunks, halving their size,
// while the key stays invalid), each candidate decided by the same
// checker, reductions and all: every set it returns was found invalid by
// the model, so it is a proof, not a guess. It is 1-minimal where it had
// the time (no op can be made indeterminate); a candidate not decided in
// time counts as valid, so the set may be larger, never wrong.

// minimalFor bounds the shrinking of one violation, and minimalStep the
// check of each candidate.
const (
	minimalFor  = time.Second
	minimalStep = 200 * time.Millisecond
)

// minimal returns the ops of lops (an invalid key's ops, in order) that
// the model finds invalid as recorded with every other op indeterminate,
// as few as it found within minimalFor; nil if lops is not found invalid
// again. It starts from the ops whose indexes are in the first of hints
// that is a contradiction already.
func (c *keyCheck) minimal(lops []*lockOp, hints ...[]int64) []*lockOp {
	ctx, cancel := context.WithTimeout(c.ctx, minimalFor)
	defer cancel()
	invalid := func(kept []int) bool {
		if ctx.Err() != nil {
			return false
		}
		step, cancel := context.WithTimeout(ctx, minimalStep)
		defer cancel()
		d := keyCheck{ctx: step, m: c.m, pm: c.pm, skip: c.skip, decideOnly: true}
		v, _, _ := d.check("", relaxed(lops, kept))
		return v == Invalid
	}
	// First the ops the violation names, then those in its window too:
	// most contradictions lie there, and a few ops shrink in a few
	// checks (each candidate that is not a contradiction costs up to
	// minimalStep, the search that cannot refute it running out).
	var cur []int
	for _, h := range hints {
		for i, lo := range lops {
			if slices.Contains(h, lo.index) {
				cur = append(cur, i)
			}
		}
		if len(cur) > 0 && invalid(cur) {
			break
		}
		cur = nil
	}
	if cur == nil {
		cur = make([]int, len(lops))
		for i := range cur {
			cur[i] = i
		}
		if !invalid(cur) {
			return nil
		}
	}
	for chunk := max(len(cur)/2, 1); ; {
		dropped := false
		// From the end: the earliest contradiction is the one kept.
		for end := len(cur); end > 0 && len(cur) > 1; {
			at := max(end-chunk, 0)
			rest := append(slices.Clone(cur[:at]), cur[end:]...)
			if invalid(rest) {
				cur, dropped = rest, true
			}
			end = at
		}
		if ctx.Err() != nil || chunk == 1 && !dropped {
			break
		}
		if !dropped {
			chunk = max(chunk/2, 1)
		}
	}
	out := make([]*lockOp, len(cur))
	for k, i := range cur {
		out[k] = lops[i]
	}
	return out
}

// The lines of an explanation that head the fewest ops, and the ops
// around the failure point after them.
const (
	fewestLine = "the fewest ops that cannot all be true:"
	aroundLine = "around where the search stopped:"
)

// relaxed returns lops with every op but those at the indexes kept made
// indeterminate: it took effect as ok within its interval, or never (an
// op with no token, a refusal, gets one of its own).
func relaxed(lops []*lockOp, kept []int) []*lockOp {
	out := make([]*lockOp, len(lops))
	for i, lo := range lops {
		l := *lo
		if l.typ != history.Info {
			l.typ = history.Info
			if l.f == history.Acquire && lo.typ == history.Fail || l.token == "" {
				l.token = "?" + strconv.FormatInt(l.index, 10)
			}
		}
		out[i] = &l
	}
	for _, i := range kept {
		out[i] = lops[i]
	}
	return out
}

// minimalOps is the most lock ops a key may have for its fewest ops to be
// sought: every op but a few is made indeterminate, and a key of
// thousands of indeterminate ops costs each candidate's check more than
// the whole search may take (a bench cell's broken keys of 5,000 ops
// held its results back by a minute).
const minimalOps = 400

// minimalKeys is how many invalid keys of a check get their fewest ops
// (the first, in key order: those the report shows).
const minimalKeys = 10

// withMinimal puts into v the indexes of the fewest ops found that cannot
// all be true, and their descriptions first in its explanation.
func (c *keyCheck) withMinimal(v *Violation, lops []*lockOp) {
	if v == nil {
		return
	}
	var window []int64
	for _, lo := range lops {
		if slices.Contains(v.Ops, lo.index) || lo.call <= v.Window[1] && lo.orig >= v.Window[0] {
			window = append(window, lo.index)
		}
	}
	set := c.minimal(lops, v.Ops, window)
	if set == nil {
		return
	}
	lines := []string{fewestLine}
	for _, lo := range set {
		v.Minimal = append(v.Minimal, lo.index)
		lines = append(lines, "!! "+describeOp(lo))
	}
	if len(v.Explanation) > 0 {
		lines = append(lines, aroundLine)
	}
	v.Explanation = append(lines, v.Explanation...)
}
