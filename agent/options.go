package agent

import (
	"crypto/tls"
	"time"
)

// Options are a coordinator's agent settings, declared once: lockcheck's
// flags fill them (--agents, --listen, --join-timeout, --agent-tls-*,
// --spawn-agents, --agent-token-file), a run carries them
// (harness.Config), and the coordinator takes them (CoordinatorConfig).
type Options struct {
	// Agents is how many agents play the clients, each a share, judged as
	// one history; 0: the clients play in this process.
	Agents int
	// Listen is the coordinator's address (default 127.0.0.1:0); agents
	// that give Token are admitted (over TLS if TLS is set) for
	// JoinTimeout (0: DefaultJoinTimeout). Listening, if set, is called
	// with the address.
	Listen      string
	Token       string
	TLS         *tls.Config
	JoinTimeout time.Duration
	Listening   func(addr string)
	// Spawn, if set, is a lockcheck binary: the coordinator starts the
	// agents itself, as processes of this machine (lockcheck run
	// --spawn-agents, bench --agents), with a token of its own if Token
	// is empty.
	Spawn string
	// NoClockCorrection takes the agents' times as the coordinator's
	// without measuring their clocks: only to show what the correction
	// prevents.
	NoClockCorrection bool
}
