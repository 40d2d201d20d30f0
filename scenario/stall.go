package scenario

import (
	"fmt"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/checker"
)

// StallFor is s with its stalls outlasting p's own command timeout
// (Stalled: the timeout and a half second more), and how long each then
// lasts, where s stalls Redis (StallsRedis) for no longer than that
// timeout: a lock whose client waits a stall out (lockimpl.OwnTimeouter)
// meets stalls that outlast it. ok is false where s is kept.
func (s Scenario) StallFor(p Profile) (_ Scenario, stall time.Duration, ok bool) {
	own := p.OwnTimeout
	if own <= 0 || !s.StallsRedis() || s.Nemesis.Duration > own {
		return s, 0, false
	}
	stall = own + 500*time.Millisecond
	return s.Stalled(stall), stall, true
}

// MinWindowAcquires is how many acquires a stall scenario's windows must
// have seen, none of them indeterminate, before WaitsOut says the lock
// waits its stalls out.
const MinWindowAcquires = 20

// WaitsOut is why s is n/a for a lock whose runs (runs of them) reached
// cov where s requires req ("" if it is not): every figure it fell short
// of counts indeterminate acquires, and of the acquires its stalls met
// (checker.WindowAcquires, at least MinWindowAcquires) none ended
// indeterminate. The lock's client waited every stall out (its own
// timeout outlasts it): no budget gives it the chance. Only for a stall
// (pause-redis).
func (s Scenario) WaitsOut(req, cov checker.Coverage, runs int) string {
	if !s.StallsRedis() {
		// A lost reply reaches a client that resends, and is answered:
		// no indeterminate acquire, yet the chance of its bug was given,
		// and lost-reply counts it on the wire (history.LostReply).
		return ""
	}
	for name, want := range req {
		if cov.Count(name) < want && name != checker.InfoContended && name != checker.InfoSettled {
			return ""
		}
	}
	n, info := cov[checker.WindowAcquires], cov[checker.WindowInfo]
	if n < MinWindowAcquires || info > 0 {
		return ""
	}
	return fmt.Sprintf("0 of %d acquires called during its %s windows (%d run(s)) ended indeterminate: the lock's client waits each stall out (its own command timeout outlasts it), and this scenario's bug needs an indeterminate acquire",
		n, strings.Join(s.Nemesis.Faults, "+"), runs)
}
