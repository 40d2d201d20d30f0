package scenario

import (
	"maps"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/workload"
)

// contention is contention: races between acquires. A lock run as a
// process per client gets 20 clients: 200 processes of redis-py's Lock
// outlasted the run's build deadline (a minute) on a loaded machine,
// where 20 meet its refusals in one run. A semaphore gets 100 (20 a
// key): at 200 its model decided every key in 0.5 s to 8 s of a run, but
// one key of 5 ran past the check's 120 s beside other work; at 100 all
// 5 in 4 s (all_permits_tried 113,267/500).
var contention = Scenario{Name: "contention", Description: "200 clients on 5 keys (20 for a lock of a process per client, 100 for a semaphore or a read-write lock: its model's time; a read-write lock's think between tries: (readers a key - 1) / 2 holds), holds of 0-20 ms under a 1 s TTL: races between acquires",
	Workload: func(w *workload.Config) {
		w.Clients, w.TTL, w.Hold, w.HoldDist, w.Retry, w.Margin = 200, time.Second, 10*time.Millisecond, workload.HoldUniform, workload.RetryNone, 0
	},
	ProcessWorkload: func(w *workload.Config) { w.Clients = min(w.Clients, 20) }, PermitClients: 100, ShapeWorkload: readersLeaveGaps, Requires: checker.Coverage{checker.Contended: 2000}, Needs: []Need{fillsPermits, triesOverModes}}

// readersLeaveGaps: a read-write lock's clients think between tries, so
// that readers leave the key to writers now and then, where the user
// set no think of their own. A correct lock without writer preference
// grants a reader while any reader holds, so 10 readers a key that try
// again at once keep it read-held all run: at 100 clients, seed 1, 4 to
// 18 of about 40,000 write acquires a run were granted, and
// reader_tried_over_writer (a reader trying while a writer held) came 12
// to 76 times a run. With r readers a key, each thinking (r - 1) / 2
// mean holds, each holds about 2 / (r + 1) of the time and the key is
// free of readers about (1 - 2/(r+1))^r of it: 11 % at r = 2, 13 % at 10.
// A key of one reader needs no think.
func readersLeaveGaps(w *workload.Config, p Profile) {
	if p.Shape != ReadWrite || w.Think > 0 || w.Readers <= 0 {
		return
	}
	if r := float64(w.Clients) * w.Readers / float64(max(w.Keys, 1)); r > 1 {
		w.Think = time.Duration((r - 1) / 2 * float64(w.Hold))
	}
}

// fillsPermits: on a semaphore, contention's chance is every permit of a
// key held while another client tries it (all_permits_tried), required
// beside the refusals; a mutex's requirement is as it was.
func fillsPermits(_ Scenario, p Profile, _ string, req checker.Coverage) (string, checker.Coverage) {
	if p.Permits <= 1 {
		return "", req
	}
	req = maps.Clone(req)
	req[checker.AllPermitsTried] = 500
	return "", req
}

// triesOverModes: on a read-write lock, contention's chances are a
// writer trying a key readers hold (writer_tried_over_readers) and a
// reader trying one a writer holds (reader_tried_over_writer), each
// required beside the refusals.
func triesOverModes(_ Scenario, p Profile, _ string, req checker.Coverage) (string, checker.Coverage) {
	if p.Shape != ReadWrite {
		return "", req
	}
	req = maps.Clone(req)
	req[checker.WriterTriedOverReaders], req[checker.ReaderTriedOverWriter] = 100, 100
	return "", req
}
