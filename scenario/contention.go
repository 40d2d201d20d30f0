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
var contention = Scenario{Name: "contention", Description: "200 clients on 5 keys (20 for a lock of a process per client, 100 for a semaphore: its model's time), holds of 0-20 ms under a 1 s TTL: races between acquires",
	Workload: func(w *workload.Config) {
		w.Clients, w.TTL, w.Hold, w.HoldDist, w.Retry, w.Margin = 200, time.Second, 10*time.Millisecond, workload.HoldUniform, workload.RetryNone, 0
	},
	ProcessWorkload: func(w *workload.Config) { w.Clients = min(w.Clients, 20) }, PermitClients: 100, Requires: checker.Coverage{checker.Contended: 2000}, Needs: []Need{fillsPermits, triesOverModes}}

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
