package checker

import (
	"fmt"
	"hash/maphash"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockcheck/lockcheck/history"
)

// leaseState is the state of one key: who holds it ("" = free) and the window
// [eMin, eMax] in which that lease expires, in history ns.
type leaseState struct {
	holder     string
	eMin, eMax int64
}

var free = leaseState{}

// lockOp is the model's input: one acquire, release or extend.
type lockOp struct {
	index   int64
	process int
	f       history.Func
	typ     history.Type
	token   string
	ttl     int64 // ns
	// add marks an extend that adds ttl to what the lease had left.
	add  bool
	call int64
	// ret is when the op returned; for info ops, the latest moment it may
	// still take effect (return + horizon).
	ret int64
	// orig is the op's recorded return.
	orig int64
}

// leaseModel is the table of ../shared/DESIGN.md "The lease-aware lock
// model". eps is the clock tolerance.
type leaseModel struct {
	eps int64
}

// okStep applies op as if it succeeded; ok reports whether that is legal.
func (m leaseModel) okStep(s leaseState, op *lockOp) (leaseState, bool) {
	switch op.f {
	case history.Acquire:
		if s.holder == "" || s.eMin-m.eps <= op.ret {
			return leaseState{holder: op.token, eMin: op.call + op.ttl, eMax: op.ret + op.ttl}, true
		}
	case history.Release:
		if s.holder == op.token && s.eMax+m.eps >= op.call {
			return free, true
		}
	case history.Extend:
		if s.holder == op.token && s.eMax+m.eps >= op.call {
			if op.add {
				// The lease's expiry moves by ttl. It had not passed when
				// the extend took effect (no key, no extend), so that is
				// also no earlier than call + ttl.
				return leaseState{holder: op.token, eMin: max(s.eMin, op.call) + op.ttl, eMax: s.eMax + op.ttl}, true
			}
			return leaseState{holder: op.token, eMin: op.call + op.ttl, eMax: op.ret + op.ttl}, true
		}
	}
	return s, false
}

// failStep applies op as a definite failure; ok reports whether that is legal.
func (m leaseModel) failStep(s leaseState, op *lockOp) (leaseState, bool) {
	switch op.f {
	case history.Acquire:
		if s.holder != "" && s.eMax+m.eps >= op.call {
			return s, true
		}
	case history.Release, history.Extend:
		if s.holder != op.token {
			return s, true
		}
		if s.eMin-m.eps <= op.ret {
			return free, true // our own lease had expired
		}
	}
	return s, false
}

// step returns every state op can lead to from s; none if op is illegal.
// An info op either took effect (as ok, up to its horizon) or did not.
func (m leaseModel) step(s leaseState, op *lockOp) []leaseState {
	switch op.typ {
	case history.OK:
		if n, ok := m.okStep(s, op); ok {
			return []leaseState{n}
		}
	case history.Fail:
		if n, ok := m.failStep(s, op); ok {
			return []leaseState{n}
		}
	case history.Info:
		out := []leaseState{s}
		if n, ok := m.okStep(s, op); ok && n != s {
			out = append(out, n)
		}
		return out
	}
	return nil
}

var hashSeed = maphash.MakeSeed()

// porcupine wraps the model for porcupine, once, with typed inputs.
func (m leaseModel) porcupine() porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Init: func() []any { return []any{free} },
		Step: func(state, input, _ any) []any {
			next := m.step(state.(leaseState), input.(*lockOp))
			out := make([]any, len(next))
			for i := range next {
				out[i] = next[i]
			}
			return out
		},
		Hash: func(state any) uint64 {
			s := state.(leaseState)
			var h maphash.Hash
			h.SetSeed(hashSeed)
			h.WriteString(s.holder)
			return h.Sum64() ^ uint64(s.eMin)*0x9e3779b97f4a7c15 ^ uint64(s.eMax)*0xbf58476d1ce4e5b9
		},
		DescribeOperation: func(input, _ any) string { return describeOpShort(input.(*lockOp)) },
		DescribeState: func(state any) string {
			s := state.(leaseState)
			if s.holder == "" {
				return "free"
			}
			return fmt.Sprintf("held by %s, expires in [%s, %s]", short(s.holder), history.Seconds(s.eMin), history.Seconds(s.eMax))
		},
	}
	return nm.ToModel()
}

func describeOpShort(op *lockOp) string {
	s := fmt.Sprintf("p%d %s %s %s", op.process, op.f, op.typ, short(op.token))
	if op.f != history.Release {
		s += " ttl " + time.Duration(op.ttl).String()
	}
	return s
}

// reaches bounds how long each lease may keep its key, for the coarse
// checks (liveness, expiredFail): an acquire or a replacing extend until
// its return (plus horizon, for info) plus its TTL; an additive extend
// adds its TTL to its lease's previous reach. The model admits an
// extend only while its own lease holds the key, so a lease's ops, in
// call order (one client's, sequential), chain exactly.
type reaches map[string]int64

// next records one op of a lease and returns its reach.
func (r reaches) next(token string, add bool, ret, ttl int64) int64 {
	e := ret + ttl
	if prev, ok := r[token]; ok {
		if add {
			e = prev + ttl
		}
		e = max(e, prev)
	}
	r[token] = e
	return e
}
