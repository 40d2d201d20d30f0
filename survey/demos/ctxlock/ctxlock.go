// Package ctxlock is the scenario the rueidislock and valkeylock demos
// share (valkeylock is rueidislock's fork, with the same code at the same
// lines): each demo's main builds its library's Locker and hands it here.
// It imports no lockcheck package.
package ctxlock

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/lockcheck/lockcheck/survey/demos/demoredis"
)

// Locker is what rueidislock.Locker and valkeylock.Locker both offer
// (their Client methods differ in type and are not used).
type Locker interface {
	WithContext(ctx context.Context, name string) (context.Context, context.CancelFunc, error)
	TryWithContext(ctx context.Context, name string) (context.Context, context.CancelFunc, error)
	Close()
}

// Options are the LockerOption fields the demos set: KeyMajority 1 and
// NoLoopTracking, as the README sets the lock up for one Redis, and
// these.
type Options struct {
	Addr          string
	KeyValidity   time.Duration
	FallbackSETPX bool
}

// New builds a Locker of the library under demonstration.
type New func(Options) (Locker, error)

// Lib is one library: its name, its key prefix (LockerOption.KeyPrefix's
// default) and its constructor.
type Lib struct {
	Name   string
	Prefix string
	New    New
}

// keyname is the library's key for name with KeyMajority 1: prefix:0:name
// (lock.go:142-152).
func (l Lib) keyname(name string) string { return l.Prefix + ":0:" + name }

const holderArg = "-ctxlock-holder"

// Pause is the pause demo: the program re-executes itself as the holder
// (a child process) when os.Args carries holderArg, else runs the parent.
func Pause(lib Lib) {
	if len(os.Args) == 4 && os.Args[1] == holderArg {
		os.Exit(holder(lib, os.Args[2], os.Args[3]))
	}
	demoredis.Main(40*time.Second, func(ctx context.Context) (int, error) { return pauseParent(ctx, lib) })
}

const (
	validity = time.Second
	pauseFor = 2 * time.Second
	rounds   = 12
)

// holder acquires the lock as the README does (WithContext on
// context.Background()) with KeyValidity 1 s, prints "held <ns>", then
// runs as a holder busy in its critical section: it checks the lock's
// context without pause and prints "wrote <ns>" every 5 ms while it is
// alive (at once on waking from a stop), "cancelled <ns> <err>" once it
// is not. It ends when stdin closes (the parent went away) or after 16 s.
func holder(lib Lib, addr, name string) int {
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); os.Exit(3) }()
	time.AfterFunc(16*time.Second, func() { fmt.Println("gave up after 16 s"); os.Exit(3) })
	l, err := lib.New(Options{Addr: addr, KeyValidity: validity})
	if err != nil {
		fmt.Println("error", err)
		return 2
	}
	defer l.Close()
	ctx, cancel, err := l.WithContext(context.Background(), name)
	if err != nil {
		fmt.Println("error", err)
		return 2
	}
	defer cancel()
	_, dl := ctx.Deadline()
	fmt.Println("held", time.Now().UnixNano(), dl)
	var last time.Time
	for {
		if err := ctx.Err(); err != nil {
			fmt.Println("cancelled", time.Now().UnixNano(), err)
			return 0
		}
		if now := time.Now(); now.Sub(last) >= 5*time.Millisecond {
			fmt.Println("wrote", now.UnixNano())
			last = now
		}
	}
}

type line struct {
	verb string
	at   time.Time
	rest string
}

// pauseParent runs up to 12 rounds (as many as fit in the demo's 40 s),
// each a fresh holder on a fresh lock, and stops at the first that
// shows: on waking, the holder and the library's goroutines race, and
// the library wins about half the time here.
func pauseParent(ctx context.Context, lib Lib) (int, error) {
	srv, err := demoredis.StartServer(ctx, "redis")
	if err != nil {
		return 0, err
	}
	for r := 1; r <= rounds; r++ {
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < pauseFor+2*time.Second {
			fmt.Printf("no time left for round %d\n", r)
			break
		}
		shown, err := pauseRound(ctx, lib, srv.Addr(), r)
		if err != nil {
			return 0, err
		}
		if shown {
			fmt.Printf("two holders (round %d of up to %d): a context with no deadline cannot tell a holder woken past KeyValidity that its lock is gone (%s)\n", r, rounds, lib.Name)
			return demoredis.Shown, nil
		}
	}
	return demoredis.NotShown, nil
}

// pauseRound is one round: a holder is stopped past KeyValidity, a second client takes the key, and the holder is woken to see whether it writes with its context alive.
func pauseRound(ctx context.Context, lib Lib, addr string, round int) (bool, error) {
	lockName := fmt.Sprintf("pause-%d", round)
	h, err := startHolder(ctx, addr, lockName)
	if err != nil {
		return false, err
	}
	var o pauseObs
	o.hasDeadline, err = h.awaitHeld()
	if err == nil {
		o.stopped, err = h.stop()
	}
	if errors.Is(err, errLostBeforeStop) {
		fmt.Printf("round %d: %s holder's context was cancelled before the stop (a renewal failed on a busy machine): the round shows nothing\n", round, lib.Name)
		return false, nil
	} else if err != nil {
		return false, err
	}
	other, err := lib.New(Options{Addr: addr, KeyValidity: validity})
	if err != nil {
		return false, err
	}
	defer other.Close()
	octx, ocancel, err := takeFreedKey(ctx, lib, other, addr, lockName)
	if err != nil {
		return false, err
	}
	defer ocancel()
	o.acquired = time.Now()
	if wait := time.Until(o.stopped.Add(pauseFor)); wait > 0 {
		select {
		case <-time.After(wait): // the pause itself: the fault's length
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
	o.resumed = time.Now()
	if o.wrote, o.cancelled, err = h.resume(o.acquired); err != nil {
		return false, err
	}
	o.stillHeld = octx.Err() == nil
	o.report(lib, round)
	return len(o.wrote) > 0 && o.stillHeld, nil
}

// holderProc is a running holder child and its parsed output, for the round's steps to read.
type holderProc struct {
	ctx    context.Context
	child  *exec.Cmd
	lines  chan line
	exited chan struct{}
}

// startHolder starts the holder child on lockName and reads its lines, killing it when the demo exits.
func startHolder(ctx context.Context, addr, lockName string) (*holderProc, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	child := exec.Command(exe, holderArg, addr, lockName)
	child.Stderr = os.Stderr
	child.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdin, err := child.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := child.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := child.Start(); err != nil {
		return nil, err
	}
	h := &holderProc{ctx: ctx, child: child, lines: make(chan line, 4096), exited: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			h.lines <- parseLine(sc.Text())
		}
		close(h.lines)
	}()
	go func() { _ = child.Wait(); close(h.exited) }()
	demoredis.OnExit(func() {
		stdin.Close()
		_ = syscall.Kill(child.Process.Pid, syscall.SIGCONT)
		_ = child.Process.Kill()
		select {
		case <-h.exited:
		case <-time.After(5 * time.Second):
			fmt.Fprintf(os.Stderr, "the holder (pid %d) did not exit 5 s after SIGKILL\n", child.Process.Pid)
		}
	})
	return h, nil
}

// parseLine splits a holder's line into its verb, its time (a first field in ns) and the rest.
func parseLine(text string) line {
	f := strings.SplitN(text, " ", 3)
	l := line{verb: f[0]}
	if len(f) > 1 {
		if ns, err := strconv.ParseInt(f[1], 10, 64); err == nil {
			l.at = time.Unix(0, ns)
		} else {
			l.rest = f[1]
		}
	}
	if len(f) > 2 {
		l.rest = f[2]
	}
	return l
}

// next waits up to d for the holder's next line, failing on its error lines or the end of its output.
func (h *holderProc) next(what string, d time.Duration) (line, error) {
	w, cancel := demoredis.Within(h.ctx, d)
	defer cancel()
	select {
	case l, ok := <-h.lines:
		if !ok {
			select {
			case <-h.exited:
			case <-time.After(time.Second):
			}
			return line{}, fmt.Errorf("waiting for %s: the holder's output ended (%v)", what, h.child.ProcessState)
		}
		if l.verb == "error" || l.verb == "gave" {
			return line{}, fmt.Errorf("the holder: %s %s", l.verb, l.rest)
		}
		return l, nil
	case <-w.Done():
		return line{}, fmt.Errorf("waiting for %s: %w", what, w.Err())
	}
}

// awaitHeld waits for the holder's "held" line and its first write, so that it is in its loop when stopped.
func (h *holderProc) awaitHeld() (hasDeadline bool, err error) {
	held, err := h.next("the holder to acquire (its \"held\" line)", 8*time.Second)
	if err != nil {
		return false, err
	}
	if held.verb != "held" {
		return false, fmt.Errorf("the holder said %q before \"held\"", held.verb)
	}
	hasDeadline = held.rest == "true"
	// one write before the pause, so that the holder runs its loop
	first, err := h.next("the holder's first write", 4*time.Second)
	if err != nil {
		return false, err
	}
	if first.verb == "cancelled" {
		return hasDeadline, errLostBeforeStop
	}
	return hasDeadline, nil
}

// errLostBeforeStop: the holder saw its context cancelled before the
// SIGSTOP took it (its renewal failed first): a round with no chance.
var errLostBeforeStop = errors.New("the holder's context was cancelled before the stop")

// stop SIGSTOPs the holder (the fault) and drains what it wrote before, so that later lines are after the wake.
func (h *holderProc) stop() (time.Time, error) {
	if err := syscall.Kill(h.child.Process.Pid, syscall.SIGSTOP); err != nil {
		return time.Time{}, err
	}
	stopped := time.Now()
	// drain what it wrote before the stop
	for {
		select {
		case l, ok := <-h.lines:
			if !ok || l.verb == "cancelled" {
				return stopped, errLostBeforeStop
			}
		case <-time.After(50 * time.Millisecond):
			return stopped, nil
		}
	}
}

// takeFreedKey waits for the stopped holder's key to expire and has other acquire it: the second holder.
func takeFreedKey(ctx context.Context, lib Lib, other Locker, addr, lockName string) (context.Context, context.CancelFunc, error) {
	key := lib.keyname(lockName)
	w, cancel := demoredis.Within(ctx, 4*time.Second)
	err := demoredis.WaitFor(w, "the stopped holder's key to expire (KeyValidity 1 s)", func() bool {
		e, err := demoredis.Exists(w, addr, key)
		return err == nil && !e
	})
	cancel()
	if err != nil {
		return nil, nil, err
	}
	var octx context.Context
	var ocancel context.CancelFunc
	w, cancel = demoredis.Within(ctx, 4*time.Second)
	err = demoredis.WaitFor(w, "the second client to acquire the free key", func() bool {
		var err error
		octx, ocancel, err = other.TryWithContext(context.Background(), lockName)
		return err == nil
	})
	cancel()
	if err != nil {
		return nil, nil, err
	}
	return octx, ocancel, nil
}

// resume SIGCONTs the holder and collects its writes after the second acquire until it sees its context cancelled.
func (h *holderProc) resume(acquired time.Time) ([]time.Time, line, error) {
	if err := syscall.Kill(h.child.Process.Pid, syscall.SIGCONT); err != nil {
		return nil, line{}, err
	}
	var wrote []time.Time
	var cancelled line
	for cancelled.verb == "" {
		l, err := h.next("the holder to see its lock cancelled after SIGCONT", 6*time.Second)
		if err != nil {
			return nil, line{}, err
		}
		switch l.verb {
		case "wrote":
			if l.at.After(acquired) {
				wrote = append(wrote, l.at)
			}
		case "cancelled":
			cancelled = l
		}
	}
	return wrote, cancelled, nil
}

// pauseObs is what a pause round observed, kept for its report line.
type pauseObs struct {
	hasDeadline, stillHeld     bool
	stopped, acquired, resumed time.Time
	wrote                      []time.Time
	cancelled                  line
}

// report prints the round's line: the stop, the second acquire, and what the woken holder did.
func (o pauseObs) report(lib Lib, round int) {
	woke := "did not write before its context was cancelled"
	if len(o.wrote) > 0 {
		woke = fmt.Sprintf("wrote %s after SIGCONT with its lock's context alive while the second client held the lock (its context alive: %v)", ms(o.wrote[0].Sub(o.resumed)), o.stillHeld)
	}
	fmt.Printf("round %d: %s holder (KeyValidity 1 s, its context's Deadline() ok: %v) held, writing every 5 ms, SIGSTOPped %v; its key expired and a second client acquired it %s after the stop; the holder %s; its context was cancelled %s after SIGCONT\n",
		round, lib.Name, o.hasDeadline, pauseFor, ms(o.acquired.Sub(o.stopped)), woke, ms(o.cancelled.at.Sub(o.resumed)))
}

// ms formats d in milliseconds to 0.1 ms, as the demos' lines give their times.
func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

// Skew is the clock demo: one redis-server under the clock shim, its
// clock set ahead by 2 s (>= KeyValidity 1 s); first with SET NX PXAT
// (the default), then with FallbackSETPX.
func Skew(lib Lib) {
	demoredis.Main(18*time.Second, func(ctx context.Context) (int, error) { return skew(ctx, lib) })
}

const ahead = 2 * time.Second

func skew(ctx context.Context, lib Lib) (int, error) {
	clock, err := demoredis.NewClock("redis")
	if err != nil {
		return 0, err
	}
	srv, err := demoredis.NewServer("redis")
	if err != nil {
		return 0, err
	}
	srv.Env = clock.Env
	if err := srv.Start(ctx); err != nil {
		return 0, err
	}
	clock.Set(ahead)
	st, err := demoredis.ServerTime(ctx, srv.Addr())
	if err != nil {
		return 0, err
	}
	off := time.Until(st)
	fmt.Printf("redis-server's clock (TIME) is %.2f s ahead of the client's (clock shim)\n", off.Seconds())
	if off < ahead-200*time.Millisecond {
		return 0, fmt.Errorf("the clock shim did not take: redis-server is %v ahead, not %v", off, ahead)
	}
	shown := 0
	for _, fallback := range []bool{false, true} {
		ok, err := skewRun(ctx, lib, srv.Addr(), fallback)
		if err != nil {
			return 0, err
		}
		if ok {
			shown++
		}
	}
	if shown == 2 {
		fmt.Printf("with Redis's clock ahead by >= KeyValidity, a second client acquires while the first's context is alive, with PXAT and with FallbackSETPX (%s)\n", lib.Name)
		return demoredis.Shown, nil
	}
	return demoredis.NotShown, nil
}

// skewRun: A acquires, B tries; with PXAT A's key is gone at once, with
// FallbackSETPX at A's first renewal (PEXPIREAT, after ExtendInterval,
// 500 ms). It reports whether B acquired while A's context was alive.
func skewRun(ctx context.Context, lib Lib, addr string, fallback bool) (bool, error) {
	o := skewObs{mode: "SET NX PXAT (default)"}
	name := "skew-pxat"
	if fallback {
		o.mode, name = "FallbackSETPX", "skew-px"
	}
	opt := Options{Addr: addr, KeyValidity: validity, FallbackSETPX: fallback}
	a, err := lib.New(opt)
	if err != nil {
		return false, err
	}
	defer a.Close()
	b, err := lib.New(opt)
	if err != nil {
		return false, err
	}
	defer b.Close()
	actx, acancel, err := a.WithContext(ctx, name)
	if err != nil {
		return false, fmt.Errorf("A's acquire: %w", err)
	}
	o.acquired = time.Now()
	defer acancel()
	aCancelled := make(chan time.Time, 1)
	context.AfterFunc(actx, func() { aCancelled <- time.Now() })
	key := lib.keyname(name)
	if o.exists, err = demoredis.Exists(ctx, addr, key); err != nil {
		return false, err
	}
	if o.exists {
		if err := refusedUntilRenewal(ctx, b, addr, name, key, o.mode); err != nil {
			return false, err
		}
		o.refused = true
	}
	o.gone = time.Now()
	o.aliveBefore = actx.Err() == nil
	o.bAsked = time.Now()
	bctx, bcancel, berr := b.TryWithContext(context.Background(), name)
	o.bAt, o.berr = time.Now(), berr
	if berr == nil {
		defer bcancel()
	}
	w, cancel := demoredis.Within(ctx, 4*time.Second)
	select {
	case o.cancelledAt = <-aCancelled:
	case <-w.Done():
	}
	cancel()
	_ = bctx
	return o.report()
}

// refusedUntilRenewal checks that B is refused while A's key exists (FallbackSETPX) and waits for A's first renewal to drop it.
func refusedUntilRenewal(ctx context.Context, b Locker, addr, name, key, mode string) error {
	// the key is there (FallbackSETPX): B is refused until A's
	// first renewal, which sets PEXPIREAT in Redis's past
	if _, c, err := b.TryWithContext(context.Background(), name); err == nil {
		c()
		return fmt.Errorf("%s: B acquired while A's key existed", mode)
	}
	w, cancel := demoredis.Within(ctx, 4*time.Second)
	defer cancel()
	return demoredis.WaitFor(w, "A's key to go at its first renewal (PEXPIREAT)", func() bool {
		e, err := demoredis.Exists(w, addr, key)
		return err == nil && !e
	})
}

// skewObs is what a skew run observed, kept for its report and verdict.
type skewObs struct {
	mode                                     string
	exists, refused, aliveBefore             bool
	acquired, gone, bAsked, bAt, cancelledAt time.Time
	berr                                     error
}

// report prints the run's lines and says whether B acquired while A's context was alive, unless the machine was too slow to tell.
func (o skewObs) report() (bool, error) {
	if !o.exists {
		fmt.Printf("%s: A acquired (KeyValidity 1 s); its key did not exist on Redis right after\n", o.mode)
	} else {
		fmt.Printf("%s: A acquired, its key existed and B was refused: %v; the key went %s after A's acquire (its first renewal)\n", o.mode, o.refused, ms(o.gone.Sub(o.acquired)))
	}
	what := "A's context was never cancelled"
	if !o.cancelledAt.IsZero() {
		what = fmt.Sprintf("A's context was cancelled %s after B's acquire returned (%s after B asked)", ms(o.cancelledAt.Sub(o.bAt)), ms(o.cancelledAt.Sub(o.bAsked)))
	}
	fmt.Printf("%s: B's acquire: %v; A's context alive when B asked: %v; %s\n", o.mode, errString(o.berr), o.aliveBefore, what)
	// Between B's ask and Redis granting B's SET NX, nothing could cancel
	// A: its next renewal is ExtendInterval (500 ms) after the last (the
	// ask comes sooner, checked here), and the invalidation that cancels
	// it is the one B's SET sends. So A was alive at B's grant when it
	// was alive at B's ask and cancelled after it.
	sinceRenewal := o.bAsked.Sub(o.acquired)
	if o.exists {
		sinceRenewal = o.bAsked.Sub(o.gone)
	}
	if sinceRenewal >= validity/2 {
		return false, fmt.Errorf("%s: B asked %v after A's last renewal, not within ExtendInterval (500 ms): the machine is too slow for this demo", o.mode, sinceRenewal)
	}
	return o.berr == nil && o.aliveBefore && (o.cancelledAt.IsZero() || o.cancelledAt.After(o.bAsked)), nil
}

func errString(err error) string {
	if err == nil {
		return "acquired"
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "timed out"
	}
	return err.Error()
}
