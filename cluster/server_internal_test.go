package cluster

import (
	"os"
	"testing"
)

// needServer is testutil.RequireRedis for this package's own tests
// (testutil imports cluster): skip without redis-server, or fail where
// LOCKCHECK_REQUIRE_REDIS says it must be there.
func needServer(t *testing.T) {
	t.Helper()
	if _, err := findServer(""); err != nil {
		if os.Getenv("LOCKCHECK_REQUIRE_REDIS") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
}
