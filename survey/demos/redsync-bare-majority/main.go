// redsync-bare-majority shows what breaks redsync at kill-quorum and
// clock-quorum (docs/survey.md): a lease taken on a bare majority of 5
// masters (3) is lost when one of those 3 loses the key, and a second
// mutex wins a majority while the first's Until() is still ahead. This is
// the sequence of redsync issue #186
// (https://github.com/go-redsync/redsync/issues/186).
//
//	cd survey && go run ./demos/redsync-bare-majority
//
// Library: github.com/go-redsync/redsync/v4 v4.18.1 over go-redis v9.23.0
// (redis/goredis/v9). The lines it rests on, at v4.18.1:
//   - redsync.go:40: quorum: len(r.pools)/2 + 1, 3 of 5.
//   - mutex.go:114-119: the lock is taken when n >= m.quorum and
//     until = now + expiry - elapsed - expiry*driftFactor (the client's
//     clock) is ahead; Until() (mutex.go:50-52) returns it.
//   - mutex.go:175-194: Valid/ValidContext ask the masters again (n >=
//     quorum); both are deprecated in favour of Until (redsync #72).
//
// Two parts, each over 5 redis-servers it starts (the second under
// lockcheck's clock shim, cluster/clockshim/clockshim.c, built here with
// cc as the fault tool; no lockcheck package is imported), mutexes at
// redsync's defaults (expiry 8 s, 32 tries), taken with Lock (the
// README's call) or LockContext for a bounded wait:
//  1. kill-quorum: masters 4 and 5 are SIGKILLed, A locks (on 1-3), 4
//     and 5 restart empty, master 3 is SIGKILLed and restarted empty on
//     its port; B, another Redsync with its own clients, locks on 3-5.
//  2. clock-quorum: the same with master 3's clock jumped forward 10 s
//     (past the 8 s expiry) instead of its restart: one node of the bare
//     majority, not a majority of masters.
//
// Exit 1 when B locks while A's Until() is ahead in both parts, 0 when
// it does not, 2 when it could not run; every redis-server is stopped by
// PID in every case. Departs from the README in LockContext for B (a
// deadline on its retries).
package main

import (
	"context"
	"fmt"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredislib "github.com/redis/go-redis/v9"

	"github.com/lockcheck/lockcheck/survey/demos/demoredis"
)

// quiet drops go-redis's log of the dials to the masters that are down.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

func main() {
	goredislib.SetLogger(quiet{})
	demoredis.Main(19*time.Second, run)
}

func run(ctx context.Context) (int, error) {
	shown := 0
	for _, clock := range []bool{false, true} {
		ok, err := part(ctx, clock)
		if err != nil {
			return 0, err
		}
		if ok {
			shown++
		}
	}
	if shown == 2 {
		fmt.Println("a lease on a bare majority is lost with one of its masters, and another mutex wins a majority while the first's Until() is ahead (redsync v4.18.1, #186)")
		return demoredis.Shown, nil
	}
	return demoredis.NotShown, nil
}

func pools(srvs []*demoredis.Server) ([]redis.Pool, func()) {
	var ps []redis.Pool
	var cs []*goredislib.Client
	for _, s := range srvs {
		c := goredislib.NewClient(&goredislib.Options{Addr: s.Addr()})
		cs = append(cs, c)
		ps = append(ps, goredis.NewPool(c))
	}
	return ps, func() {
		for _, c := range cs {
			c.Close()
		}
	}
}

// part runs one form of the sequence (kill-quorum, or clock-quorum when clockForm) and says whether B locked while A's Until() was ahead.
func part(ctx context.Context, clockForm bool) (bool, error) {
	label := "kill-quorum"
	name := "bare-majority-kill"
	if clockForm {
		label, name = "clock-quorum", "bare-majority-clock"
	}
	srvs, clocks, err := startMasters(ctx, label, clockForm)
	if err != nil {
		return false, err
	}
	defer stopMasters(srvs)
	a, on, closeA, err := lockOnBareMajority(ctx, srvs, label, name)
	if err != nil {
		return false, err
	}
	defer closeA()
	fault, err := loseOne(ctx, srvs, clocks, clockForm)
	if err != nil {
		return false, err
	}
	pb, closeB := pools(srvs)
	defer closeB()
	b := redsync.New(pb...).NewMutex(name)
	lctx, cancel := demoredis.Within(ctx, 5*time.Second)
	berr := b.LockContext(lctx)
	cancel()
	bAt := time.Now()
	left := a.Until().Sub(bAt)
	vctx, cancel := demoredis.Within(ctx, 3*time.Second)
	valid, verr := a.ValidContext(vctx)
	cancel()
	fmt.Printf("%s: with masters 4, 5 down A locked (expiry 8 s), its key on masters %v; 4, 5 restarted empty; %s\n", label, on, fault)
	if berr != nil {
		fmt.Printf("%s: B's lock: %v\n", label, berr)
		return false, nil
	}
	fmt.Printf("%s: B locked while A's Until() was %.2f s ahead; A's ValidContext (deprecated, asks the masters; its nodes count from 0): %v %v\n", label, left.Seconds(), valid, errText(verr))
	if ok, err := b.UnlockContext(ctx); !ok || err != nil {
		fmt.Printf("%s: B's unlock: %v %v\n", label, ok, err)
	}
	return left > 0 && len(on) == 3, nil
}

// startMasters starts the part's 5 redis-servers, each under its own clock shim in the clock form, to fault one later.
func startMasters(ctx context.Context, label string, clockForm bool) ([]*demoredis.Server, []*demoredis.Clock, error) {
	srvs := make([]*demoredis.Server, 5)
	clocks := make([]*demoredis.Clock, 5)
	for i := range srvs {
		s, err := demoredis.NewServer(fmt.Sprintf("%s-n%d", label, i+1))
		if err != nil {
			return nil, nil, err
		}
		if clockForm {
			if clocks[i], err = demoredis.NewClock(s.Name); err != nil {
				return nil, nil, err
			}
			s.Env = clocks[i].Env
		}
		if err := s.Start(ctx); err != nil {
			return nil, nil, err
		}
		srvs[i] = s
	}
	return srvs, clocks, nil
}

// stopMasters kills every master still running, by PID, so that no part leaves one behind.
func stopMasters(srvs []*demoredis.Server) {
	for _, s := range srvs {
		if s.PID() != 0 {
			_ = s.Kill()
		}
	}
}

// lockOnBareMajority has A lock with masters 4 and 5 down, so that its lease rests on exactly 1-3 (on says where its key is).
func lockOnBareMajority(ctx context.Context, srvs []*demoredis.Server, label, name string) (*redsync.Mutex, []int, func(), error) {
	for _, i := range []int{3, 4} {
		if err := srvs[i].Kill(); err != nil {
			return nil, nil, nil, err
		}
	}
	pa, closeA := pools(srvs)
	a := redsync.New(pa...).NewMutex(name)
	lctx, cancel := demoredis.Within(ctx, 5*time.Second)
	err := a.LockContext(lctx)
	cancel()
	if err != nil {
		closeA()
		return nil, nil, nil, fmt.Errorf("%s: A's lock with masters 4 and 5 down: %w", label, err)
	}
	var on []int
	for i := range 3 {
		if e, err := demoredis.Exists(ctx, srvs[i].Addr(), name); err == nil && e {
			on = append(on, i+1)
		}
	}
	return a, on, closeA, nil
}

// loseOne restarts masters 4 and 5 empty and takes A's key from master 3 (restarted empty, or its clock jumped 10 s), describing the fault.
func loseOne(ctx context.Context, srvs []*demoredis.Server, clocks []*demoredis.Clock, clockForm bool) (string, error) {
	for _, i := range []int{3, 4} {
		if err := srvs[i].Start(ctx); err != nil {
			return "", err
		}
	}
	fault := "master 3 SIGKILLed and restarted empty on its port"
	if clockForm {
		clocks[2].Set(10 * time.Second)
		st, err := demoredis.ServerTime(ctx, srvs[2].Addr())
		if err != nil {
			return "", err
		}
		fault = fmt.Sprintf("master 3's clock jumped %.1f s ahead (TIME)", time.Until(st).Seconds())
	} else if err := srvs[2].Restart(ctx); err != nil {
		return "", err
	}
	return fault, nil
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return "(" + err.Error() + ")"
}
