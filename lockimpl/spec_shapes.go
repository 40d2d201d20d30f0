package lockimpl

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// ShapeReentrant is a spec's shape = "reentrant": its token names the
// owner, and the owner's re-entry runs [reenter] (or, without one,
// [acquire]) with the owner's token (Reenterer).
const ShapeReentrant = "reentrant"

// SpecWait is a spec's [wait]: its acquires can wait (--wait), the
// caller trying [acquire] (or [read_acquire]) every PollMs under one
// token until it takes the key or the wait runs out, as a polling
// library does; WakeBoundMs is the bound its waiters are judged by (the
// liveness checker's starved waiter), PollMs if not set.
type SpecWait struct {
	PollMs      int64 `toml:"poll_ms"`
	WakeBoundMs int64 `toml:"wake_bound_ms"`
}

// checkSpecShapes checks what the reentrant shape and [wait] take: a
// [reenter] only in a reentrant spec, a poll of 1 ms to a minute and a
// wake-up bound of 1 ms to 10 minutes.
func (s *Spec) checkSpecShapes(src []byte, md toml.MetaData) error {
	if md.IsDefined("reenter") && s.Shape != ShapeReentrant {
		return fmt.Errorf(`%s:%d: [reenter] is a reentrant lock's: add shape = "reentrant" at the top, or drop the section`, s.Path, lineOf(src, "[reenter]"))
	}
	if md.IsDefined("reenter") && strings.TrimSpace(s.Reenter.Script) == "" {
		return fmt.Errorf("%s:%d: [reenter] has no script (drop the section, and a re-entry runs [acquire])", s.Path, lineOf(src, "[reenter]"))
	}
	if !md.IsDefined("wait") {
		return nil
	}
	w := &s.Wait
	if w.PollMs < 1 || w.PollMs > 60_000 {
		return fmt.Errorf("%s:%d: [wait] poll_ms %d: the poll interval of a waiting acquire is 1 to 60000 ms", s.Path, fieldLine(src, "wait", "poll_ms"), w.PollMs)
	}
	if w.WakeBoundMs == 0 {
		w.WakeBoundMs = w.PollMs
	}
	// A bound under the poll is allowed: it is the mistake the starved
	// waiter check exists for (examples/specs/broken-wait-slow-poll.toml).
	if w.WakeBoundMs < 1 || w.WakeBoundMs > 600_000 {
		return fmt.Errorf("%s:%d: [wait] wake_bound_ms %d: a wake-up bound is 1 to 600000 ms", s.Path, fieldLine(src, "wait", "wake_bound_ms"), w.WakeBoundMs)
	}
	return nil
}

// CanWait says the spec has a [wait] (WaiterOf asks).
func (l *specLock) CanWait() bool { return l.spec.Wait.PollMs > 0 }

// WakeBound implements Waiter: the spec's [wait] wake_bound_ms.
func (l *specLock) WakeBound() time.Duration {
	return time.Duration(l.spec.Wait.WakeBoundMs) * time.Millisecond
}

// AcquireWait implements Waiter: the acquire of the mode ctx names
// tried every poll_ms under one token until it takes the key or the wait
// runs out, with a last try at its end. A try that is not a definite
// refusal ends the wait, as SetNXBlock's does.
func (l *specLock) AcquireWait(ctx context.Context, key string, ttl, wait time.Duration) (Lease, error) {
	access := AccessOf(ctx)
	if err := CheckAccess(access); err != nil {
		return Lease{}, err
	}
	token := NewToken()
	return pollAcquire(ctx, l.now, wait, time.Duration(l.spec.Wait.PollMs)*time.Millisecond, func() (Lease, error) {
		return l.try(ctx, key, token, ttl, access)
	})
}

// specReentrant is a reentrant lock's spec (shape = "reentrant").
type specReentrant struct{ *specLock }

// Reenter implements Reenterer: [reenter], or [acquire], with the
// owner's token; the lease's TTL set anew from the re-entry's call.
func (l *specReentrant) Reenter(ctx context.Context, ls Lease, ttl time.Duration) (Lease, error) {
	name, sec := "acquire", &l.spec.Acquire
	if _, ok := l.scripts["reenter"]; ok {
		name, sec = "reenter", &l.spec.Reenter
	}
	ls.Acquired, ls.TTL = time.Duration(l.now()), ttl
	if _, err := l.call(ctx, name, sec, &specVars{key: ls.Key, token: ls.Token, access: accessOf(ls), ttl: ttl, client: ClientFrom(ctx)}, ErrNotAcquired); err != nil {
		return Lease{}, err
	}
	return ls, nil
}
