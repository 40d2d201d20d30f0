package demoredis

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
)

// Action is what a Proxy does with one command.
type Action struct {
	// Hold, if not nil, keeps the command from Redis until it is closed
	// (the client may give up and close its connection meanwhile: the
	// command still reaches Redis, late).
	Hold <-chan struct{}
	// DropReply forwards the command and, when its reply comes, asks
	// Drop (if set; nil drops): on true, closes both sides of the
	// connection instead of forwarding the reply (a reply lost on the
	// wire), on false forwards it.
	DropReply bool
	Drop      func() bool
}

// Proxy is a minimal TCP proxy in front of one redis-server that reads
// each command a client sends (RESP arrays, as go-redis and rueidis send
// them) and asks OnCommand what to do with it.
type Proxy struct {
	Target    string
	OnCommand func(args []string) Action

	l    net.Listener
	mu   sync.Mutex
	conn map[net.Conn]bool
}

// StartProxy listens on a free 127.0.0.1 port and forwards to target.
func StartProxy(target string, on func(args []string) Action) (*Proxy, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{Target: target, OnCommand: on, l: l, conn: map[net.Conn]bool{}}
	OnExit(p.Close)
	go p.serve()
	return p, nil
}

// Addr is where clients connect.
func (p *Proxy) Addr() string { return p.l.Addr().String() }

// Close stops listening and closes every connection.
func (p *Proxy) Close() {
	p.l.Close()
	p.mu.Lock()
	for c := range p.conn {
		c.Close()
	}
	p.mu.Unlock()
}

func (p *Proxy) track(c net.Conn) {
	p.mu.Lock()
	p.conn[c] = true
	p.mu.Unlock()
}

func (p *Proxy) serve() {
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.Target)
		if err != nil {
			c.Close()
			continue
		}
		p.track(c)
		p.track(s)
		go p.pipe(c, s)
	}
}

// pipe forwards one client connection c to its server connection s.
func (p *Proxy) pipe(c, s net.Conn) {
	pc := &pipeConn{p: p, c: c, s: s}
	go pc.replies()
	pc.commands()
}

// pipeConn is one proxied connection: its two sides and the drop its commands arm for the next reply.
type pipeConn struct {
	p        *Proxy
	c, s     net.Conn
	mu       sync.Mutex
	drop     func() bool
	dropping bool
}

// closeBoth closes both sides, so that neither loop outlives the other.
func (pc *pipeConn) closeBoth() { pc.c.Close(); pc.s.Close() }

// replies forwards the server's bytes to the client, dropping the reply an Action asked to drop.
func (pc *pipeConn) replies() {
	buf := make([]byte, 32<<10)
	for {
		n, err := pc.s.Read(buf)
		if n > 0 {
			pc.mu.Lock()
			d, f := pc.dropping, pc.drop
			pc.dropping, pc.drop = false, nil
			pc.mu.Unlock()
			// go-redis and rueidis wait for a command's reply
			// before they send the next on a connection (no
			// pipeline here), so these bytes are its reply.
			if d && (f == nil || f()) {
				pc.closeBoth()
				return
			}
			if _, err := pc.c.Write(buf[:n]); err != nil {
				pc.closeBoth()
				return
			}
		}
		if err != nil {
			pc.closeBoth()
			return
		}
	}
}

// commands forwards the client's commands to the server, each as OnCommand's Action says.
func (pc *pipeConn) commands() {
	r := bufio.NewReader(pc.c)
	held := false
	for {
		raw, args, err := readCommand(r)
		if err != nil {
			if held {
				// a held command's reply may be on its way: the
				// server side closes when it cannot be forwarded
				pc.c.Close()
			} else {
				pc.closeBoth()
			}
			return
		}
		act := Action{}
		if pc.p.OnCommand != nil && len(args) > 0 {
			act = pc.p.OnCommand(args)
		}
		if act.Hold != nil {
			held = true
			<-act.Hold
		}
		if act.DropReply {
			pc.mu.Lock()
			pc.dropping, pc.drop = true, act.Drop
			pc.mu.Unlock()
		}
		if _, err := pc.s.Write(raw); err != nil {
			pc.closeBoth()
			return
		}
	}
}

// readCommand reads one RESP array of bulk strings and returns its
// bytes as read and its arguments.
func readCommand(r *bufio.Reader) ([]byte, []string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, nil, err
	}
	raw := []byte(line)
	if !strings.HasPrefix(line, "*") {
		return raw, strings.Fields(line), nil // an inline command
	}
	n, err := strconv.Atoi(strings.TrimSpace(line[1:]))
	if err != nil {
		return raw, nil, fmt.Errorf("bad array header %q", line)
	}
	args := make([]string, 0, n)
	for range n {
		h, err := r.ReadString('\n')
		if err != nil {
			return raw, args, err
		}
		raw = append(raw, h...)
		l, err := strconv.Atoi(strings.TrimSpace(h[1:]))
		if err != nil || !strings.HasPrefix(h, "$") {
			return raw, args, fmt.Errorf("bad bulk header %q", h)
		}
		b := make([]byte, l+2)
		if _, err := io.ReadFull(r, b); err != nil {
			return raw, args, err
		}
		raw = append(raw, b...)
		args = append(args, string(b[:l]))
	}
	return raw, args, nil
}
