package cluster

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// Proxy is a TCP proxy in front of a node (Shopify/toxiproxy, in process):
// faults add toxics to it (latency, a partition).
type Proxy struct {
	p    *toxiproxy.Proxy
	Addr string
	// Mirror, if set, is told of every toxic added and removed here, so
	// that the proxies of clients on other machines (agents) play it too.
	Mirror func(Toxic) error
	mu     sync.Mutex
	on     map[string]bool // toxic names in place
}

// Toxic is a toxic added to a proxy (or, with Remove, taken off it by
// name), in toxiproxy's terms: what Mirror passes on.
type Toxic struct {
	Name   string  `json:"name"`
	Type   string  `json:"type,omitempty"`
	Stream string  `json:"stream,omitempty"`
	Share  float64 `json:"share,omitempty"`
	Attrs  string  `json:"attrs,omitempty"`
	Remove bool    `json:"remove,omitempty"`
}

// Apply adds t to p, or removes it.
func (p *Proxy) Apply(t Toxic) error {
	if t.Remove {
		return p.RemoveToxics(t.Name)
	}
	return p.AddToxicShare(t.Name, t.Type, t.Stream, t.Share, t.Attrs)
}

// standalone makes the proxies of a process that runs no cluster (an
// agent's, in front of the nodes its clients dial).
var standalone proxies

// NewProxy listens on a free loopback port and forwards to upstream.
func NewProxy(name, upstream string) (*Proxy, error) { return standalone.newProxy(name, upstream) }

// Close stops the proxy and closes its connections.
func (p *Proxy) Close() { p.stop() }

type proxies struct {
	once sync.Once
	srv  *toxiproxy.ApiServer
}

func (ps *proxies) server() *toxiproxy.ApiServer {
	ps.once.Do(func() {
		ps.srv = toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	})
	return ps.srv
}

// newProxy listens on a free loopback port and forwards to upstream.
func (ps *proxies) newProxy(name, upstream string) (*Proxy, error) {
	return ps.newProxyAt(name, "127.0.0.1:0", upstream)
}

// newProxyAt listens on listen and forwards to upstream.
func (ps *proxies) newProxyAt(name, listen, upstream string) (*Proxy, error) {
	p := toxiproxy.NewProxy(ps.server(), name, listen, upstream)
	if err := p.Start(); err != nil {
		return nil, fmt.Errorf("proxy %s: %w", name, err)
	}
	return &Proxy{p: p, Addr: p.Listen, on: map[string]bool{}}, nil
}

// AddToxic adds a toxic (toxiproxy's JSON form) under its name, on every
// connection.
func (p *Proxy) AddToxic(name, typ, stream string, attrs string) error {
	return p.AddToxicShare(name, typ, stream, 1, attrs)
}

// AddToxicShare adds a toxic to each connection with probability share
// (toxiproxy's toxicity, drawn per connection).
func (p *Proxy) AddToxicShare(name, typ, stream string, share float64, attrs string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	js := fmt.Sprintf(`{"name":%q,"type":%q,"stream":%q,"toxicity":%g,"attributes":%s}`, name, typ, stream, share, attrs)
	if _, err := p.p.Toxics.AddToxicJson(strings.NewReader(js)); err != nil {
		return fmt.Errorf("toxic %s: %w", name, err)
	}
	p.on[name] = true
	if p.Mirror != nil {
		return p.Mirror(Toxic{Name: name, Type: typ, Stream: stream, Share: share, Attrs: attrs})
	}
	return nil
}

// RemoveToxics removes the named toxics, if in place.
func (p *Proxy) RemoveToxics(names ...string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, name := range names {
		if !p.on[name] {
			continue
		}
		if err := p.p.Toxics.RemoveToxic(ctx, name); err != nil {
			return err
		}
		delete(p.on, name)
		if p.Mirror != nil {
			if err := p.Mirror(Toxic{Name: name, Remove: true}); err != nil {
				return err
			}
		}
	}
	return nil
}

func (p *Proxy) stop() { p.p.Stop() }
