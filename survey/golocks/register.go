package golocks

import (
	"github.com/zeromicro/go-zero/core/logx"

	"github.com/lockcheck/lockcheck/lockimpl"
)

// Entries are the survey's Go locks, beside lockcheck's own redislock
// and redsync (bsm/redislock v0.9.4, go-redsync v4.18.1).
func Entries() []lockimpl.Entry {
	return []lockimpl.Entry{
		{Name: "rueidislock", Description: "github.com/redis/rueidis/rueidislock " + RueidisVersion + " (SET NX PXAT from the client's clock, renewed every KeyValidity/2; a context cancelled when lost)",
			OwnClient: true, Watchdog: true, Version: RueidisVersion, Factory: NewRueidislock(RueidislockOptions{})},
		{Name: "rueidislock-setpx", Description: "rueidislock " + RueidisVersion + " with FallbackSETPX: acquires by SET NX PX (renewals still PEXPIREAT from the client's clock)",
			OwnClient: true, Watchdog: true, Version: RueidisVersion, Factory: NewRueidislock(RueidislockOptions{FallbackSETPX: true})},
		{Name: "valkeylock", Description: "github.com/valkey-io/valkey-go/valkeylock " + ValkeyVersion + " (rueidislock's fork)",
			OwnClient: true, Watchdog: true, Version: ValkeyVersion, Factory: NewValkeylock(RueidislockOptions{})},
		{Name: "go-zero", Description: "github.com/zeromicro/go-zero " + GoZeroVersion + " core/stores/redis.RedisLock (TTL in whole seconds + 500 ms; renewed by acquiring again)",
			OwnClient: true, Topology: "single", Version: GoZeroVersion, Factory: NewGoZero},
	}
}

// Register adds Entries to lockcheck's registry, and quiets go-zero,
// whose package init starts a logger of CPU and memory stats on stdout.
func Register() {
	logx.Disable()
	logx.DisableStat()
	for _, e := range Entries() {
		lockimpl.Register(e)
	}
}
