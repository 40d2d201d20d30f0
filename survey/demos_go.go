package survey

// goDemos are the demonstrations written in Go: main packages under
// survey/demos, run from survey/ (their own module pins the libraries),
// sharing survey/demos/demoredis (redis-server, a proxy, the clock shim)
// and survey/demos/ctxlock (the rueidislock and valkeylock scenarios),
// neither of which imports lockcheck.
var goDemos = []Demo{
	{Name: "gozero-renew", Dir: "survey", Cmd: []string{"go", "run", "./demos/gozero-renew"},
		Shows: []string{"go-zero extend", "go-zero cut-off"},
		Departs: "none: it renews by AcquireCtx as go-zero's Redis lock page implies (\"re-entrant, renews automatically\"); the cut-off part holds a renewal in a proxy of its own until go-redis gives up (its 5 s ReadTimeout: " +
			"the 300 ms context deadline passed to AcquireCtx is ignored, go-zero leaving ContextTimeoutEnabled false), and sets SetExpire(7) there so that the key outlives that wait"},
	{Name: "gozero-resend", Dir: "survey", Cmd: []string{"go", "run", "./demos/gozero-resend"},
		Shows:   []string{"go-zero lost-reply"},
		Departs: "none; the lost reply is a proxy of its own that closes the client's connection instead of forwarding the reply of the release that deleted the key, once"},
	{Name: "rueidislock-pause", Dir: "survey", Cmd: []string{"go", "run", "./demos/rueidislock-pause"},
		Shows:   []string{"rueidislock extend"},
		Departs: "KeyValidity 1 s (the README leaves the default, 5 s: the mechanism needs only a stop longer than KeyValidity); the second client takes the lock with TryWithContext"},
	{Name: "valkeylock-pause", Dir: "survey", Cmd: []string{"go", "run", "./demos/valkeylock-pause"},
		Shows:   []string{"valkeylock extend"},
		Departs: "KeyValidity 1 s (the README leaves the default, 5 s: the mechanism needs only a stop longer than KeyValidity); the second client takes the lock with TryWithContext"},
	{Name: "rueidislock-skew", Dir: "survey", Cmd: []string{"go", "run", "./demos/rueidislock-skew"},
		Shows:   []string{"rueidislock skew"},
		Departs: "KeyValidity 1 s with Redis's clock 2 s ahead (at the default 5 s the same needs 5 s); the second client takes the lock with TryWithContext; the fault is lockcheck's clock shim (cluster/clockshim/clockshim.c), built with cc"},
	{Name: "valkeylock-skew", Dir: "survey", Cmd: []string{"go", "run", "./demos/valkeylock-skew"},
		Shows:   []string{"valkeylock skew"},
		Departs: "KeyValidity 1 s with Redis's clock 2 s ahead (at the default 5 s the same needs 5 s); the second client takes the lock with TryWithContext; the fault is lockcheck's clock shim (cluster/clockshim/clockshim.c), built with cc"},
	{Name: "redsync-bare-majority", Dir: "survey", Cmd: []string{"go", "run", "./demos/redsync-bare-majority"},
		Shows:   []string{"redsync kill-quorum", "redsync clock-quorum"},
		Departs: "none at redsync's defaults (expiry 8 s); LockContext with a deadline instead of Lock; the clock form's fault is lockcheck's clock shim, built with cc"},
}
