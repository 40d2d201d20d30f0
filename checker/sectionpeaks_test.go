package checker

import (
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// TestKeyPeaks_PerKey: a semaphore of 3 whose key a had two leases in
// their sections at once and key b one shows peak 2 and 1 against 3; a
// read-write lock's writer whose section overlapped a reader's by 10 ms
// shows 10 ms, two readers overlapping each other none; a mutex's
// history has no such table.
func TestKeyPeaks_PerKey(t *testing.T) {
	const ms = int64(time.Millisecond)
	acq := func(p int, key, tok string, permits int, access string) history.Op {
		return history.Op{Process: p, F: history.Acquire, Type: history.OK, Key: key, Token: tok, TTLms: 1000, Permits: permits, Access: access, Call: 0, Return: ms}
	}
	write := func(p int, key, tok string, from, to int64) history.Op {
		return history.Op{Process: p, F: history.Write, Type: history.OK, Key: key, Token: tok, Call: from * ms, Return: to * ms}
	}
	sem := []history.Op{acq(1, "a", "x", 3, ""), acq(2, "a", "y", 3, ""), acq(3, "b", "z", 3, ""),
		write(1, "a", "x", 10, 30), write(2, "a", "y", 20, 40), write(3, "b", "z", 10, 20)}
	got := KeyPeaks(sem)
	if len(got) != 2 || got[0] != (KeyPeak{Key: "a", Holders: 2, Permits: 3}) || got[1] != (KeyPeak{Key: "b", Holders: 1, Permits: 3}) {
		t.Errorf("semaphore: %+v, want a 2 of 3, b 1 of 3", got)
	}
	rw := []history.Op{acq(1, "a", "w", 0, history.AccessWrite), acq(2, "a", "r", 0, history.AccessRead), acq(3, "a", "s", 0, history.AccessRead),
		write(1, "a", "w", 10, 30), write(2, "a", "r", 20, 50),
		acq(4, "b", "r2", 0, history.AccessRead), acq(5, "b", "s2", 0, history.AccessRead), write(4, "b", "r2", 10, 30), write(5, "b", "s2", 20, 50)}
	got = KeyPeaks(rw)
	if len(got) != 2 || got[0].WriterOverlapNs != 10*ms || got[0].Holders != 2 || got[1].WriterOverlapNs != 0 || got[1].Holders != 2 {
		t.Errorf("read-write: %+v, want a's writer overlapping 10 ms, b's readers none", got)
	}
	mutex := []history.Op{acq(1, "a", "x", 0, ""), write(1, "a", "x", 10, 30)}
	if got := KeyPeaks(mutex); got != nil {
		t.Errorf("mutex: %+v, want none", got)
	}
}
