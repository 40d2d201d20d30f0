package scenario

import (
	"maps"

	"github.com/lockcheck/lockcheck/checker"
)

// crashesFull: on a semaphore, crash's chance is a permit holder crashed
// while all k permits of its key were surely held, its key tried after
// its lease had surely expired (crashed_full), required beside
// abandoned_tried: a lock that leaks the crashed holder's permit then
// refuses with fewer than k held. One is required: such a lock's
// capacity drops with each permit it leaks, so after its first leak its
// key is never full again, and a run that breaks it has met at most the
// one it broke after. A mutex's requirement is as it was.
func crashesFull(_ Scenario, p Profile, _ string, req checker.Coverage) (string, checker.Coverage) {
	if p.Permits <= 1 {
		return "", req
	}
	req = maps.Clone(req)
	req[checker.CrashedFull] = 1
	return "", req
}
