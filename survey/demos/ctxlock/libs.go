package ctxlock

import (
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"
	"github.com/valkey-io/valkey-go"
	"github.com/valkey-io/valkey-go/valkeylock"
)

// Rueidislock and Valkeylock are the two libraries as their READMEs set
// them up for one Redis (KeyMajority 1, NoLoopTracking), with the
// demonstration's KeyValidity and FallbackSETPX; valkeylock is
// rueidislock's fork, the same options at the same names.
var (
	Rueidislock = Lib{Name: "rueidislock v1.0.79", Prefix: "rueidislock", New: func(o Options) (Locker, error) {
		return rueidislock.NewLocker(rueidislock.LockerOption{ClientOption: rueidis.ClientOption{InitAddress: []string{o.Addr}},
			KeyMajority: 1, NoLoopTracking: true, KeyValidity: o.KeyValidity, FallbackSETPX: o.FallbackSETPX})
	}}
	Valkeylock = Lib{Name: "valkeylock v1.0.79", Prefix: "valkeylock", New: func(o Options) (Locker, error) {
		return valkeylock.NewLocker(valkeylock.LockerOption{ClientOption: valkey.ClientOption{InitAddress: []string{o.Addr}},
			KeyMajority: 1, NoLoopTracking: true, KeyValidity: o.KeyValidity, FallbackSETPX: o.FallbackSETPX})
	}}
)
