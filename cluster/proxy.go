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
	mu   sync.Mutex
	on   map[string]bool // toxic names in place
}

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
	}
	return nil
}

func (p *Proxy) stop() { p.p.Stop() }
