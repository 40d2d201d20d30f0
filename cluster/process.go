package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// process is a node's server as a local process.
type process struct {
	server  string
	args    []string
	env     []string // extra environment (the clock shim)
	stdin   string   // config read from stdin (the password), at every start
	dir     string
	logPath string

	mu   sync.Mutex // guards cmd and done across kill and restart
	cmd  *exec.Cmd
	done chan struct{}
}

// start runs the process (again, after a kill) with the same port and dir.
func (p *process) start() error {
	logf, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(p.server, append(append([]string{}, p.args...), "--dir", p.dir)...)
	cmd.Dir = p.dir
	if p.env != nil {
		cmd.Env = append(os.Environ(), p.env...)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if p.stdin != "" {
		cmd.Stdin = strings.NewReader(p.stdin)
	}
	// Setpgid: a terminal's Ctrl-C reaches lockcheck only, which then
	// stops Redis itself after writing the history. Pdeathsig: if
	// lockcheck dies hard, the kernel kills Redis with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start %s: %w", p.server, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(done)
	}()
	p.mu.Lock()
	p.cmd, p.done = cmd, done
	p.mu.Unlock()
	return nil
}

func (p *process) proc() (*exec.Cmd, chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd, p.done
}

func (p *process) signal(sig syscall.Signal) error {
	cmd, _ := p.proc()
	return cmd.Process.Signal(sig)
}

func (p *process) pause() error  { return p.signal(syscall.SIGSTOP) }
func (p *process) resume() error { return p.signal(syscall.SIGCONT) }

func (p *process) kill() error {
	cmd, done := p.proc()
	_ = cmd.Process.Signal(syscall.SIGCONT)
	if err := cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	<-done
	return nil
}

func (p *process) restart(ctx context.Context, ready func(context.Context) error) error {
	if _, done := p.proc(); !isClosed(done) {
		return errors.New("still running")
	}
	var err error
	for attempt := 0; attempt < 20; attempt++ { // the port may linger briefly
		if err = p.start(); err != nil {
			return err
		}
		if err = ready(ctx); err == nil {
			return nil
		}
		_ = p.kill()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}

// stop ends the process: SIGTERM, then SIGKILL after 3s. Its log is
// already at logPath.
func (p *process) stop(string) error {
	cmd, done := p.proc()
	_ = cmd.Process.Signal(syscall.SIGCONT) // a paused process cannot act on SIGTERM
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
	return nil
}

func (p *process) abandon() {
	if cmd, _ := p.proc(); cmd != nil {
		_ = cmd.Process.Kill()
	}
}

func (p *process) pid() int {
	cmd, _ := p.proc()
	return cmd.Process.Pid
}

func (p *process) exited() <-chan struct{} {
	_, done := p.proc()
	return done
}
