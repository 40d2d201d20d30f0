package gotest

import (
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/lockchecktest"
	"github.com/lockcheck/lockcheck/workload"
)

// contention is a short, heavily contended workload whose holds often
// outlive the TTL (so late releases and extends are exercised).
var contention = workload.Config{Clients: 50, Keys: 3, TTL: 200 * time.Millisecond, Hold: 100 * time.Millisecond,
	HoldDist: workload.HoldUniform, Retry: workload.RetryNone, ExtendEvery: 60 * time.Millisecond, Duration: 4 * time.Second}

// TestMyLock fails if lockcheck finds a double holder, a release or extend
// of someone else's lease, or a stuck lock.
func TestMyLock(t *testing.T) {
	lockchecktest.Run(t, "mylock", New, lockchecktest.Options{Workload: contention})
}

// To prove that a fault breaks your lock, run it under that fault and
// want checker.Invalid:
//
//	lockchecktest.Run(t, "mylock", New, lockchecktest.Options{Workload: contention, Want: checker.Invalid,
//		Nemesis: nemesis.Config{Faults: []string{"pause-client"}, Interval: time.Second, Duration: time.Second}})
//
// (Without fencing tokens no lock survives a holder paused past its TTL
// between its check and its write; whether a given short run pauses a
// holder at that moment is up to timing, so such a test wants retries.)

// TestMyLock_ShrunkOverrun replays a plan file lockcheck shrink wrote
// (here, of broken-del-release overrunning its TTL: 20 clients, one key,
// 2 s) with this lock in its place: the regression test to keep once
// the break it found is fixed. Every run must be valid.
func TestMyLock_ShrunkOverrun(t *testing.T) {
	lockchecktest.Replay(t, "mylock", New, lockchecktest.ReplayOptions{Plan: "testdata/plan.json", Runs: 2})
}
