// Package demoredis is what the Go demonstrations under survey/demos
// share, and nothing of lockcheck: it starts redis-server processes on
// free 127.0.0.1 ports in a temporary directory (the binary
// $REDIS_SERVER, else redis-server on PATH), stops, kills, restarts and
// pauses them by PID, builds lockcheck's clock shim from its C source
// (cluster/clockshim/clockshim.c, read as a file: the demos import no
// lockcheck package) and shifts a node's clock through it, and runs a
// demo's main so that every process it started is stopped on every
// path, a signal included.
package demoredis

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// Exit codes of every demo.
const (
	Shown    = 1 // the mechanism showed
	NotShown = 0 // it did not
	CouldNot = 2 // the demo could not run
)

var (
	mu       sync.Mutex
	cleanups []func()
	tmpDir   string
)

// OnExit registers f to run when the demo ends, however it ends (last
// registered, first run).
func OnExit(f func()) {
	mu.Lock()
	cleanups = append(cleanups, f)
	mu.Unlock()
}

func runCleanups() {
	mu.Lock()
	fs := cleanups
	cleanups = nil
	mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}

// Main runs demo with a context that ends at limit, and exits with the
// code it returns; an error is exit 2. Every process started through
// this package is stopped first, and on SIGINT, SIGTERM or SIGHUP too
// (then exit 2), and the temporary directory is removed.
func Main(limit time.Duration, demo func(ctx context.Context) (int, error)) {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		s := <-sig
		fmt.Fprintf(os.Stderr, "stopped by %v: stopping what the demo started\n", s)
		runCleanups()
		os.Exit(CouldNot)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	code, err := func() (code int, err error) {
		defer func() {
			if p := recover(); p != nil {
				code, err = CouldNot, fmt.Errorf("panic: %v", p)
			}
		}()
		return demo(ctx)
	}()
	cancel()
	runCleanups()
	if err != nil {
		fmt.Fprintln(os.Stderr, "could not run:", err)
		code = CouldNot
	}
	os.Exit(code)
}

// TempDir is the demo's temporary directory, made on first use and
// removed when it ends.
func TempDir() (string, error) {
	mu.Lock()
	defer mu.Unlock()
	if tmpDir != "" {
		return tmpDir, nil
	}
	d, err := os.MkdirTemp("", "lockcheck-demo-*")
	if err != nil {
		return "", err
	}
	tmpDir = d
	cleanups = append([]func(){func() { os.RemoveAll(d) }}, cleanups...)
	return d, nil
}

// Binary is the redis-server to run: $REDIS_SERVER, else redis-server
// on PATH.
func Binary() (string, error) {
	if b := os.Getenv("REDIS_SERVER"); b != "" {
		return b, nil
	}
	return exec.LookPath("redis-server")
}

// FreePort is a TCP port free on 127.0.0.1 a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Server is one redis-server this demo runs.
type Server struct {
	Name string
	Port int
	Env  []string // extra environment (the clock shim's)
	Args []string // extra arguments

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	runs int
}

// Addr is host:port.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.Port) }

// NewServer is a server on a free port, not yet started.
func NewServer(name string) (*Server, error) {
	p, err := FreePort()
	if err != nil {
		return nil, err
	}
	return &Server{Name: name, Port: p}, nil
}

// StartServer starts a server named name on a free port.
func StartServer(ctx context.Context, name string) (*Server, error) {
	s, err := NewServer(name)
	if err != nil {
		return nil, err
	}
	return s, s.Start(ctx)
}

// Start runs redis-server on s.Port, empty (--save ” --appendonly no),
// and waits until it answers PING or ctx ends.
func (s *Server) Start(ctx context.Context) error {
	bin, err := Binary()
	if err != nil {
		return fmt.Errorf("no redis-server (set REDIS_SERVER or put it on PATH): %w", err)
	}
	dir, err := TempDir()
	if err != nil {
		return err
	}
	s.mu.Lock()
	if s.cmd != nil {
		s.mu.Unlock()
		return fmt.Errorf("%s is running", s.Name)
	}
	s.runs++
	wd := filepath.Join(dir, fmt.Sprintf("%s-%d", s.Name, s.runs))
	if err := os.MkdirAll(wd, 0o755); err != nil {
		s.mu.Unlock()
		return err
	}
	logPath := filepath.Join(wd, "redis.log")
	args := append([]string{"--port", strconv.Itoa(s.Port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", wd, "--logfile", logPath}, s.Args...)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), s.Env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		s.mu.Unlock()
		return fmt.Errorf("start %s: %w", s.Name, err)
	}
	done := make(chan struct{})
	s.cmd, s.done = cmd, done
	s.mu.Unlock()
	go func() { _ = cmd.Wait(); close(done) }()
	OnExit(func() { s.stop(cmd, done) })
	if err := WaitPing(ctx, s.Addr(), done); err != nil {
		log, _ := os.ReadFile(logPath)
		return fmt.Errorf("%s (pid %d) did not answer PING: %w\n%s", s.Name, cmd.Process.Pid, err, tail(string(log)))
	}
	return nil
}

func tail(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	return strings.Join(lines, "\n")
}

// PID is the running process's id, 0 when none runs.
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

func (s *Server) stop(cmd *exec.Cmd, done chan struct{}) {
	select {
	case <-done:
		return
	default:
	}
	_ = cmd.Process.Signal(syscall.SIGCONT)
	_ = cmd.Process.Kill()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		fmt.Fprintf(os.Stderr, "%s (pid %d) did not exit 5 s after SIGKILL\n", s.Name, cmd.Process.Pid)
	}
}

// Kill sends SIGKILL to the server and waits for it to exit: whatever
// it held is lost (nothing is persisted).
func (s *Server) Kill() error {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd, s.done = nil, nil
	s.mu.Unlock()
	if cmd == nil {
		return fmt.Errorf("%s is not running", s.Name)
	}
	s.stop(cmd, done)
	select {
	case <-done:
		return nil
	default:
		return fmt.Errorf("%s (pid %d) outlived SIGKILL", s.Name, cmd.Process.Pid)
	}
}

// Restart kills the server and starts it again, empty, on its port.
func (s *Server) Restart(ctx context.Context) error {
	if err := s.Kill(); err != nil {
		return err
	}
	return s.Start(ctx)
}

// Signal sends sig (SIGSTOP, SIGCONT) to the running server.
func (s *Server) Signal(sig syscall.Signal) error {
	pid := s.PID()
	if pid == 0 {
		return fmt.Errorf("%s is not running", s.Name)
	}
	return syscall.Kill(pid, sig)
}

// WaitPing dials addr until it answers PING with PONG, ctx ends, or
// exited (if not nil) closes.
func WaitPing(ctx context.Context, addr string, exited <-chan struct{}) error {
	var last error
	for {
		if err := Ping(ctx, addr); err == nil {
			return nil
		} else {
			last = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for PONG from %s: %w (last: %v)", addr, ctx.Err(), last)
		case <-exited:
			return fmt.Errorf("the server exited (last: %v)", last)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Ping sends one PING to addr on a fresh connection.
func Ping(ctx context.Context, addr string) error {
	_, err := Do(ctx, addr, "PING")
	return err
}

// Do sends one command to addr on a fresh connection and returns the
// first line of its reply (enough for the status and integer replies
// the demos read, and a bulk's length: "$-1" is nil).
func Do(ctx context.Context, addr string, args ...string) (string, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.Write([]byte(b.String())); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	if strings.HasPrefix(line, "-") {
		return line, errors.New(line[1:])
	}
	return line, nil
}

// Exists is EXISTS key on addr: 1 or 0.
func Exists(ctx context.Context, addr, key string) (bool, error) {
	r, err := Do(ctx, addr, "EXISTS", key)
	return r == ":1", err
}

// WaitFor polls cond every 5 ms until it holds, and fails, naming what,
// when ctx ends first.
func WaitFor(ctx context.Context, what string, cond func() bool) error {
	for !cond() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
	return nil
}

// Within is a context for one wait, bounded by d and by ctx.
func Within(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, d)
}

// ShimSource is lockcheck's clock shim's C source: $LOCKCHECK_CLOCKSHIM_SRC,
// else cluster/clockshim/clockshim.c found from the working directory
// (the repository's root or survey/) or from this file's place.
func ShimSource() (string, error) {
	if p := os.Getenv("LOCKCHECK_CLOCKSHIM_SRC"); p != "" {
		return p, nil
	}
	cands := []string{"cluster/clockshim/clockshim.c", "../cluster/clockshim/clockshim.c"}
	if _, file, _, ok := runtime.Caller(0); ok {
		cands = append(cands, filepath.Join(filepath.Dir(file), "../../../cluster/clockshim/clockshim.c"))
	}
	for _, c := range cands {
		if _, err := os.Stat(c); err == nil {
			return filepath.Abs(c)
		}
	}
	return "", fmt.Errorf("clockshim.c not found (tried %v; set LOCKCHECK_CLOCKSHIM_SRC)", cands)
}

// Clock is one redis-server's wall clock, shifted through the shim's
// mapped file: four int64s, seq (odd while written), offset ns, rate
// ppb, base ns, as clockshim.c reads them.
type Clock struct {
	Env []string // the environment that runs a redis-server under it
	mem []byte
}

var shimLib struct {
	once sync.Once
	path string
	err  error
}

// NewClock builds the shim (once, with cc) into the temporary directory
// and makes a clock file for one server; set s.Env = c.Env before Start.
func NewClock(name string) (*Clock, error) {
	dir, err := TempDir()
	if err != nil {
		return nil, err
	}
	shimLib.once.Do(func() {
		src, err := ShimSource()
		if err != nil {
			shimLib.err = err
			return
		}
		cc, err := exec.LookPath("cc")
		if err != nil {
			shimLib.err = fmt.Errorf("the clock shim needs a C compiler (cc): %w", err)
			return
		}
		lib := filepath.Join(dir, "clockshim.so")
		if out, err := exec.Command(cc, "-shared", "-fPIC", "-O2", "-o", lib, src).CombinedOutput(); err != nil {
			shimLib.err = fmt.Errorf("build the clock shim: %v\n%s", err, out)
			return
		}
		shimLib.path = lib
	})
	if shimLib.err != nil {
		return nil, shimLib.err
	}
	path := filepath.Join(dir, name+".clock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := f.Truncate(32); err != nil {
		return nil, err
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, 32, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil, err
	}
	OnExit(func() { _ = syscall.Munmap(mem) })
	return &Clock{Env: []string{"LD_PRELOAD=" + shimLib.path, "LOCKCHECK_CLOCK_FILE=" + path}, mem: mem}, nil
}

func (c *Clock) word(i int) *int64 { return (*int64)(unsafe.Pointer(&c.mem[i*8])) }

// Set makes the server's clock read real time + offset.
func (c *Clock) Set(offset time.Duration) {
	seq := c.word(0)
	atomic.AddInt64(seq, 1)
	atomic.StoreInt64(c.word(1), int64(offset))
	atomic.StoreInt64(c.word(2), 0)
	atomic.StoreInt64(c.word(3), time.Now().UnixNano())
	atomic.AddInt64(seq, 1)
}

// ServerTime is the server's clock (TIME), to show a shift took.
func ServerTime(ctx context.Context, addr string) (time.Time, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return time.Time{}, err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	if _, err := c.Write([]byte("*1\r\n$4\r\nTIME\r\n")); err != nil {
		return time.Time{}, err
	}
	r := bufio.NewReader(c)
	var vals []int64
	for len(vals) < 2 {
		line, err := r.ReadString('\n')
		if err != nil {
			return time.Time{}, err
		}
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '*' || line[0] == '$' {
			continue
		}
		v, err := strconv.ParseInt(line, 10, 64)
		if err != nil {
			return time.Time{}, fmt.Errorf("TIME: %q", line)
		}
		vals = append(vals, v)
	}
	return time.Unix(vals[0], vals[1]*1000), nil
}
