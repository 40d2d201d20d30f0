package lockchecktest_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/lockchecktest"
	"github.com/lockcheck/lockcheck/lockimpl"
	"github.com/lockcheck/lockcheck/report"
)

// TestRun_SemaphoreKeysAtResource: a semaphore's results.json has each
// key's peak holders against its permits (keys_at_resource): all 5 keys
// of the workload, each of 3 permits, none past them, and some key with
// more than one holder in its section at once (20 clients on 5 keys with
// no retry pause fill them); its report.html has each key's row at the
// resource with the same figures.
func TestRun_SemaphoreKeysAtResource(t *testing.T) {
	correct, _ := lockimpl.All().Lookup("semaphore")
	res := lockchecktest.Run(t, "semaphore", correct.Factory, lockchecktest.Options{Workload: semaphoreRace})
	r, err := report.ReadResults(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	var most int64
	for _, k := range r.KeysAtResource {
		if k.Permits != 3 || k.Holders < 1 || k.Holders > 3 {
			t.Errorf("%s: %d holders of %d permits, want 1 to 3 of 3", k.Key, k.Holders, k.Permits)
		}
		most = max(most, k.Holders)
	}
	if len(r.KeysAtResource) != semaphoreRace.Keys || most < 2 {
		t.Errorf("keys_at_resource %+v: want %d keys, one with 2 or more holders at once", r.KeysAtResource, semaphoreRace.Keys)
	}
	page, err := os.ReadFile(filepath.Join(res.Dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range r.KeysAtResource {
		row := fmt.Sprintf(`<tr><td>%s</td><td class="num">%d</td><td class="num">3</td><td>within k</td></tr>`, k.Key, k.Holders)
		if !strings.Contains(string(page), row) {
			t.Errorf("report.html lacks the row %s", row)
		}
	}
}
