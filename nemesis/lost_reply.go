package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"

	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/history"
)

// lostReplyShare is the share of the node's client connections whose
// next reply is lost while the fault is on: enough that many commands
// lose theirs, few enough that a client that resends on a new connection
// is often answered.
const lostReplyShare = 0.5

// lostReply lets commands reach a node and be applied, then drops the
// reply and closes the connection (cluster.LostReplyToxic on the replies
// of the client proxy): the client cannot tell whether its command ran.
// It counts the replies it dropped (history.LostReply), the chance it
// gave a client that resends or guesses, whether or not the client then
// ended an op indeterminate.
type lostReply struct {
	env Env
	target
	mu   sync.Mutex
	base map[*cluster.Node]int64 // each target's count at Start
	lost int64                   // replies dropped in the window
}

func (l *lostReply) Start(ctx context.Context, rng *rand.Rand) ([]string, error) {
	l.mu.Lock()
	l.base = map[*cluster.Node]int64{}
	l.mu.Unlock()
	return l.start(ctx, l.env, rng, func(n *cluster.Node) error {
		if n.Client == nil {
			return fmt.Errorf("%s has no client proxy", n.Name)
		}
		l.mu.Lock()
		l.base[n] = n.Client.LostReplies("lost-reply")
		l.mu.Unlock()
		return n.Client.AddLostReply("lost-reply", lostReplyShare)
	})
}

func (l *lostReply) Stop(context.Context) error {
	return l.stop(func(n *cluster.Node) error {
		err := n.Client.RemoveToxics("lost-reply")
		l.mu.Lock()
		l.lost += n.Client.LostReplies("lost-reply") - l.base[n]
		l.mu.Unlock()
		return err
	})
}

// Events is the last window's count of replies dropped.
func (l *lostReply) Events() map[string]int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.lost
	l.lost = 0
	return map[string]int64{history.LostReply: e}
}

// lostReplyKind is the "lost-reply" fault.
var lostReplyKind = Kind{Needs: Needs{ClientProxies: true}, Name: "lost-reply",
	Description: "a node applies commands but half its client connections lose the reply and are closed (a toxic on the client proxy's replies, counting what it dropped): the ops are indeterminate, and a client that resends shows it",
	New:         func(e Env) (Fault, error) { return &lostReply{env: e}, nil }}
