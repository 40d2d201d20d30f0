package lockimpl

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redlock is the Redlock algorithm over N independent masters (topology
// redlock): SET NX PX on every node in parallel, each bounded by a per-node
// timeout far below the TTL; held if a majority (N/2+1) said OK and time is
// left: validity = TTL - elapsed - drift, drift = TTL x 0.01 + 2ms. A
// failed attempt releases on every node. Release and extend go to every
// node; extend holds if a majority extended, with a new validity.
//
// Its outcomes are classified per node: a reply or a refused connection
// is definite, a timeout may have applied the command. An acquire that
// too few nodes could have granted is undone (ErrUndone: not recorded). A
// release or extend fails definitely only if a majority replied that the
// key is not ours; short of a majority either way it is indeterminate.
type Redlock struct {
	nodes  []redis.UniversalClient
	quorum int
	// cleanupOnExtendError: broken-redlock-extend-cleanup.
	cleanupOnExtendError bool
	// guarded: redlock-guarded's acquire (guardedSet).
	guarded bool
	timeout time.Duration // per node and command
	now     func() int64
}

// redlockNodeTimeout bounds each node's command: Redlock wants it small
// next to the TTL, so that a dead node costs little validity.
func redlockNodeTimeout(ttl, opTimeout time.Duration) time.Duration {
	t := max(ttl/20, 10*time.Millisecond)
	if opTimeout > 0 {
		t = min(t, opTimeout)
	}
	return t
}

// NewRedlock is the Factory of "redlock".
func NewRedlock(env Env) (Locker, error) {
	if len(env.Addrs) < 1 {
		return nil, errors.New("redlock: no redis address")
	}
	nodes, err := nodeClients(env)
	if err != nil {
		return nil, err
	}
	return &Redlock{nodes: nodes, quorum: len(nodes)/2 + 1, timeout: env.OpTimeout, now: ClockOf(env)}, nil
}

// nodeClients returns one client per node, for the locks that talk to
// each master on its own.
func nodeClients(env Env) ([]redis.UniversalClient, error) {
	var cs []redis.UniversalClient
	for _, a := range env.Addrs {
		e := env
		e.Addrs, e.MasterName, e.master = []string{a}, "", true
		c, err := newClient(e)
		if err != nil {
			for _, c := range cs {
				c.Close()
			}
			return nil, err
		}
		cs = append(cs, c)
	}
	return cs, nil
}

// drift is Redlock's allowance for clock drift between the nodes.
func drift(ttl time.Duration) time.Duration { return ttl/100 + 2*time.Millisecond }

// nodeResult is one node's answer: ok, a reply that says no, a refused
// connection (the node is down: nothing was applied), or unknown (an
// error: the command may or may not have been applied).
type nodeResult struct {
	ok, refused, abstained bool
	unknown                error
}

// tally counts the nodes' answers.
type tally struct {
	ok, no, refused, unknown int
	abstained                int // redlock-guarded's nodes that count neither way
	errs                     []string
}

func (t tally) String() string {
	s := fmt.Sprintf("%d ok, %d no, %d down, %d unknown", t.ok, t.no, t.refused, t.unknown)
	if t.abstained > 0 {
		s += fmt.Sprintf(", %d abstained", t.abstained)
	}
	if len(t.errs) > 0 {
		s += ": " + strings.Join(t.errs, "; ")
	}
	return s
}

// onAll runs f on every node in parallel, each under the per-node timeout,
// and counts the answers.
func (r *Redlock) onAll(ctx context.Context, ttl time.Duration, f func(ctx context.Context, c redis.UniversalClient) (bool, error)) tally {
	d := redlockNodeTimeout(ttl, r.timeout)
	ch := make(chan nodeResult, len(r.nodes))
	for _, c := range r.nodes {
		go func() {
			nctx, cancel := context.WithTimeout(ctx, d)
			defer cancel()
			good, err := f(nctx, c)
			down, abstained := err != nil && refused(err), errors.Is(err, errAbstained)
			if down || abstained {
				err = nil
			}
			ch <- nodeResult{ok: good, refused: down, abstained: abstained, unknown: err}
		}()
	}
	var t tally
	for range r.nodes {
		res := <-ch
		switch {
		case res.unknown != nil:
			t.unknown++
			t.errs = append(t.errs, res.unknown.Error())
		case res.refused:
			t.refused++
		case res.abstained:
			t.abstained++
		case res.ok:
			t.ok++
		default:
			t.no++
		}
	}
	return t
}

func nodeSet(ctx context.Context, c redis.UniversalClient, key, token string, ttl time.Duration) (bool, error) {
	err := c.SetArgs(ctx, key, token, redis.SetArgs{Mode: "NX", TTL: ttl}).Err()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	return err == nil, err
}

func nodeScript(sc *redis.Script, key string, args ...any) func(ctx context.Context, c redis.UniversalClient) (bool, error) {
	return func(ctx context.Context, c redis.UniversalClient) (bool, error) {
		n, err := sc.Run(ctx, c, []string{key}, args...).Int64()
		if err != nil {
			return false, err
		}
		return n == 1, nil
	}
}

// Acquire implements Locker. The lease's deadline is its validity.
func (r *Redlock) Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	start := time.Duration(r.now())
	token := NewToken()
	set := func(ctx context.Context, c redis.UniversalClient) (bool, error) {
		return nodeSet(ctx, c, key, token, ttl)
	}
	if r.guarded {
		set = guarded(guardedAcquireScript, key, token, ttl)
	}
	t := r.onAll(ctx, ttl, set)
	validity := ttl - (time.Duration(r.now()) - start) - drift(ttl)
	if t.ok >= r.quorum && validity > 0 {
		return Lease{Key: key, Token: token, Acquired: start, TTL: ttl - drift(ttl)}, nil
	}
	// Give back whatever was taken, on every node.
	r.onAll(context.WithoutCancel(ctx), ttl, nodeScript(releaseScript, key, token))
	switch {
	case t.ok >= r.quorum:
		// A majority held it, but no validity was left: it was held and
		// given back, which the history cannot show as such.
		return Lease{}, fmt.Errorf("acquire %s: majority reached with no validity left (%v)", key, validity)
	case t.ok+t.unknown >= r.quorum:
		return Lease{}, fmt.Errorf("acquire %s: %v", key, t)
	}
	// Too few could have said OK. Nodes that said "taken" need not hold
	// one lease between them (another attempt may be giving back its
	// minority), so this is not "held by another": it is undone.
	return Lease{}, fmt.Errorf("acquire %s: %w (%v)", key, ErrUndone, t)
}

// Release implements Locker: compare-and-delete on every node. It is done
// if a majority deleted our key, and definitely failed if a majority
// replied that the key is not ours. Otherwise (nodes down or silent) our
// key may still hold a majority until it expires: that is "may or may
// not have happened", not a failure.
func (r *Redlock) Release(ctx context.Context, l Lease) error {
	del := nodeScript(releaseScript, l.Key, l.Token)
	if r.guarded {
		// A node found without its marker abstains for twice the
		// lease's validity: longer than any lease it could have held.
		del = guarded(guardedReleaseScript, l.Key, l.Token, 2*l.TTL)
	}
	t := r.onAll(ctx, l.TTL, del)
	switch {
	case t.ok >= r.quorum:
		return nil
	case t.no >= r.quorum:
		return ErrNotHeld
	}
	return fmt.Errorf("release %s: no majority either way (%v)", l.Key, t)
}

// Extend implements Locker: compare-and-PEXPIRE on every node, held if a
// majority extended with validity left, definitely not if a majority
// replied that the key is not ours.
func (r *Redlock) Extend(ctx context.Context, l Lease, ttl time.Duration) (Lease, error) {
	start := time.Duration(r.now())
	touch := nodeScript(extendScript, l.Key, l.Token, ttl.Milliseconds())
	if r.guarded {
		touch = guarded(guardedExtendScript, l.Key, l.Token, ttl)
	}
	if r.cleanupOnExtendError {
		touch = r.cleanupOnError(touch, l)
	}
	t := r.onAll(ctx, ttl, touch)
	validity := ttl - (time.Duration(r.now()) - start) - drift(ttl)
	switch {
	case t.ok >= r.quorum && validity > 0:
		l.Acquired, l.TTL = start, ttl-drift(ttl)
		return l, nil
	case t.no >= r.quorum:
		return Lease{}, ErrNotHeld
	}
	return Lease{}, fmt.Errorf("extend %s: no majority either way, validity %v (%v)", l.Key, validity, t)
}

// Close implements Closer.
func (r *Redlock) Close() error { return closeAll(r.nodes) }

// closeAll closes a quorum lock's clients, one per master.
func closeAll(cs []redis.UniversalClient) error {
	for _, c := range cs {
		_ = c.Close()
	}
	return nil
}

// redlockEntry registers "redlock".
var redlockEntry = Entry{Name: "redlock", Factory: NewRedlock, Topology: "redlock",
	Description: "Redlock over N masters (topology redlock): SET NX PX on all in parallel, majority and validity = TTL - elapsed - drift; release and extend on all"}
