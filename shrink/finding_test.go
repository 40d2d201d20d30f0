package shrink

import "testing"

// TestKindOf: two violations of one kind on other keys, clients and
// times read alike; of other kinds, apart.
func TestKindOf(t *testing.T) {
	for _, tc := range []struct{ key, msg, want string }{
		{"lock:0", "double holder on lock:0: p3 (lease 9f2c) wrote 1.2s..1.3s while p7 (lease 77aa) wrote 1.25s..1.4s; overlap 50ms", "double holder"},
		{"lock:4", "double holder on lock:4: p1 (lease 0a1b) wrote 3s..3.1s while p2 (lease 1c2d) wrote 3.05s..3.2s; overlap 5ms", "double holder"},
		{"lock:1", "lock:1: p4 acquire ok at 2.5s while p2's lease 3e4f (acquired 2.4s, ttl 100ms) could not yet have expired (earliest expiry 2.6s, tolerance 25ms): two holders at once", "two holders at once"},
		{"lock:1", "lock:1: p4 release ok at 2.5s of lease 3e4f while the lock was held by p2's lease 5a6b (acquired 2.4s, ttl 100ms): it released someone else's lease", "it released someone else's lease"},
		{"lock:2", "stuck lock on lock:2: 14 acquire(s) failed from 1s to 3s, though the lease had expired; unacquirable for 2s past it", "stuck lock"},
	} {
		if got := KindOf(tc.key, tc.msg); got != tc.want {
			t.Errorf("KindOf(%q) = %q, want %q", tc.msg, got, tc.want)
		}
	}
}
