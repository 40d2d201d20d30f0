package cluster

import (
	"bytes"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/Shopify/toxiproxy/v2/toxics"
)

// LostReplyToxic is the toxiproxy type of the toxic that loses replies:
// on the replies of a connection (downstream) it drops the first chunk
// Redis sends, the reply of a command Redis has applied, and closes the
// connection, so the client cannot tell whether its command ran. Unlike
// reset_peer, it counts what it dropped: the fault's chance, read from
// the wire rather than from what the client made of it (a client that
// resends on a new connection is answered there, and ends no op
// indeterminate).
const LostReplyToxic = "lost_reply"

// lostReply is LostReplyToxic; Tally names the count it adds to.
type lostReply struct {
	Tally string `json:"tally"`
}

// tallies are the lost-reply counts by tally name, for the life of the
// process (a proxy's, unique in it, and the toxic's name).
var tallies sync.Map // string -> *atomic.Int64

func tally(name string) *atomic.Int64 {
	c, _ := tallies.LoadOrStore(name, new(atomic.Int64))
	return c.(*atomic.Int64)
}

func (t *lostReply) Pipe(stub *toxics.ToxicStub) {
	for {
		select {
		case <-stub.Interrupt:
			return
		case c := <-stub.Input:
			if c == nil || Effect(c.Data) {
				if c != nil {
					tally(t.Tally).Add(1)
				}
				stub.Close()
				return
			}
			stub.Output <- c
		}
	}
}

// Effect says whether the reply that reply begins reports an effect of
// the command it answers: not an error, a null ($-1, *-1, _: a SET NX
// refused), a zero (:0: a release or extend script that changed
// nothing), nor a connection's handshake (HELLO's map, PING's +PONG),
// which a client reconnecting in the window sends first. (A lock whose
// acquire answers null on success and the key's PTTL on refusal, as
// Redisson's scripts do, is counted the other way round; none surveyed
// is.)
func Effect(reply []byte) bool {
	if len(reply) == 0 {
		return false
	}
	for _, none := range []string{"-", "$-1\r", "*-1\r", "_\r", ":0\r", "%", "+PONG\r"} {
		if bytes.HasPrefix(reply, []byte(none)) {
			return false
		}
	}
	return true
}

func init() { toxics.Register(LostReplyToxic, new(lostReply)) }

// AddLostReply puts a lost-reply toxic named name on a share of p's
// connections' replies; LostReplies reads how many replies it dropped.
func (p *Proxy) AddLostReply(name string, share float64) error {
	return p.AddToxicShare(name, LostReplyToxic, "downstream", share, `{"tally":"`+p.tally(name)+`"}`)
}

// LostReplies is how many replies the lost-reply toxic name has dropped
// on p's connections since p started (not those of agents' mirrors).
func (p *Proxy) LostReplies(name string) int64 { return tally(p.tally(name)).Load() }

func (p *Proxy) tally(name string) string { return fmt.Sprintf("%s@%p/%s", p.p.Name, p, name) }
