package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/lockcheck/lockcheck/cluster"
)

// lostReplyShare is the share of the node's client connections whose
// next reply is lost while the fault is on: enough that many commands
// lose theirs, few enough that a client that resends on a new connection
// is often answered.
const lostReplyShare = 0.5

// lostReply lets commands reach a node and be applied, then drops the
// reply and resets the connection (a reset_peer toxic on the replies of
// the client proxy): the client cannot tell whether its command ran.
type lostReply struct {
	env Env
	target
}

func (l *lostReply) Start(ctx context.Context, rng *rand.Rand) ([]string, error) {
	return l.start(ctx, l.env, rng, func(n *cluster.Node) error {
		if n.Client == nil {
			return fmt.Errorf("%s has no client proxy", n.Name)
		}
		return n.Client.AddToxicShare("lost-reply", "reset_peer", "downstream", lostReplyShare, `{"timeout":0}`)
	})
}

func (l *lostReply) Stop(context.Context) error {
	return l.stop(func(n *cluster.Node) error { return n.Client.RemoveToxics("lost-reply") })
}

// lostReplyKind is the "lost-reply" fault.
var lostReplyKind = Kind{Needs: Needs{ClientProxies: true}, Name: "lost-reply",
	Description: "a node applies commands but half its client connections lose the reply and are reset (toxiproxy reset_peer on replies): the ops are indeterminate, and a client that resends shows it",
	New:         func(e Env) (Fault, error) { return &lostReply{env: e}, nil }}
