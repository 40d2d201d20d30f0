package history

// Counts are ops by f, then type: every op count lockcheck shows (the live
// progress line, the stats checker, results.json, the report) comes from
// here, read off the history.
type Counts map[Func]map[Type]int64

// Count counts a history's ops.
func Count(ops []Op) Counts {
	var t Tally
	for i := range ops {
		t.Add(&ops[i])
	}
	return t.Counts()
}

// Get returns the count of f ops of type t; t "" counts every type.
func (c Counts) Get(f Func, t Type) int64 {
	if t == "" {
		var n int64
		for _, v := range c[f] {
			n += v
		}
		return n
	}
	return c[f][t]
}

// Total returns the number of ops of every f and type.
func (c Counts) Total() int64 {
	var n int64
	for _, m := range c {
		for _, v := range m {
			n += v
		}
	}
	return n
}

var (
	funcs = [...]Func{Acquire, Release, Extend, Write, Nemesis}
	types = [...]Type{OK, Fail, Info}
)

// Tally counts ops into an array, indexed by a switch rather than a map:
// it is on the history writer's hot path.
type Tally [len(funcs)][len(types)]int64

func (t *Tally) Add(op *Op) {
	fi, ti := -1, -1
	switch op.F {
	case Acquire:
		fi = 0
	case Release:
		fi = 1
	case Extend:
		fi = 2
	case Write:
		fi = 3
	case Nemesis:
		fi = 4
	}
	switch op.Type {
	case OK:
		ti = 0
	case Fail:
		ti = 1
	case Info:
		ti = 2
	}
	if fi >= 0 && ti >= 0 {
		t[fi][ti]++
	}
}

// Counts returns t as Counts; nemesis ops appear only when there are some.
func (t *Tally) Counts() Counts {
	c := Counts{}
	for fi, f := range funcs {
		m := map[Type]int64{}
		var n int64
		for ti, ty := range types {
			m[ty] = t[fi][ti]
			n += t[fi][ti]
		}
		if f != Nemesis || n > 0 {
			c[f] = m
		}
	}
	return c
}

// Unrecorded are what the clients counted that the history does not
// record: results.json keeps them beside the counts read off the history.
type Unrecorded struct {
	// Lost counts leases the lock reported lost (watchdog).
	Lost int64 `json:"lost"`
	// GiveUps counts acquisitions abandoned after the last retry.
	GiveUps int64 `json:"give_ups"`
	// NotSent counts operations that never reached Redis (connection
	// refused): they did not happen.
	NotSent int64 `json:"not_sent"`
	// Undone counts acquisitions that reached no majority either way and
	// gave back what they took (Redlock split votes).
	Undone int64 `json:"undone,omitempty"`
	// Crashed counts clients that died (crash-client); Paused, clients
	// stopped by pause-client or pause-holder.
	Crashed int64 `json:"crashed"`
	Paused  int64 `json:"paused"`
	// CutOff counts commands that timed out because their client was cut
	// off from Redis (client-partition); they were never sent.
	CutOff int64 `json:"cut_off,omitempty"`
	// Skipped counts critical sections that ended without a release
	// (--skip-release).
	Skipped int64 `json:"skipped_releases,omitempty"`
	// Scheduled, Started and Dropped are an open-model run's attempts
	// (--rate): due on the schedule, started by a worker, and dropped
	// because the backlog was full. Scheduled - Started is the shortfall.
	Scheduled int64 `json:"scheduled,omitempty"`
	Started   int64 `json:"started,omitempty"`
	Dropped   int64 `json:"dropped,omitempty"`
}

// Add adds o's counts to u (clients on many machines, summed).
func (u *Unrecorded) Add(o Unrecorded) {
	u.Lost += o.Lost
	u.GiveUps += o.GiveUps
	u.NotSent += o.NotSent
	u.Undone += o.Undone
	u.Crashed += o.Crashed
	u.Paused += o.Paused
	u.CutOff += o.CutOff
	u.Skipped += o.Skipped
	u.Scheduled += o.Scheduled
	u.Started += o.Started
	u.Dropped += o.Dropped
}
