package cluster

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

//go:embed clockshim/clockshim.c
var clockShimSource []byte

// ClockShimEnv names the file through which a node's clock is shifted.
const ClockShimEnv = "LOCKCHECK_CLOCK_FILE"

// BuildClockShim compiles the clock shim (clockshim/clockshim.c) with the
// system C compiler, once per version of its source, into the user's cache
// dir, and returns the shared library's path.
func BuildClockShim() (string, error) {
	sum := sha256.Sum256(clockShimSource)
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "lockcheck")
	lib := filepath.Join(dir, "clockshim-"+hex.EncodeToString(sum[:6])+".so")
	if _, err := os.Stat(lib); err == nil {
		return lib, nil
	}
	cc, err := exec.LookPath("cc")
	if err != nil {
		return "", fmt.Errorf("%w: the clock faults shift Redis's clock with an LD_PRELOAD shim built from source, and no C compiler was found: install one with `sudo apt-get install gcc` (or `make deps`)", ErrNotInstalled)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	src, err := os.CreateTemp(dir, "clockshim-*.c")
	if err != nil {
		return "", err
	}
	defer os.Remove(src.Name())
	if _, err := src.Write(clockShimSource); err != nil {
		src.Close()
		return "", err
	}
	src.Close()
	tmp := lib + fmt.Sprintf(".%d.tmp", os.Getpid())
	defer os.Remove(tmp)
	if out, err := exec.Command(cc, "-shared", "-fPIC", "-O2", "-o", tmp, src.Name()).CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the clock shim: %v\n%s", err, out)
	}
	return lib, os.Rename(tmp, lib)
}

// Clock shifts one node's wall clock through the shim's mapped file.
type Clock struct {
	mem []byte
}

// clockWords is the file: seq, offset ns, rate ppb, base ns.
const clockWords = 4

func newClock(path string) (*Clock, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := f.Truncate(clockWords * 8); err != nil {
		return nil, err
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, clockWords*8, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil, err
	}
	return &Clock{mem: mem}, nil
}

func (c *Clock) word(i int) *int64 { return (*int64)(unsafe.Pointer(&c.mem[i*8])) }

// Set makes the node's clock read real time + offset, drifting by rate
// (parts per billion) from now on. Set(0, 0) restores real time.
func (c *Clock) Set(offset time.Duration, ratePPB int64) error {
	if c == nil {
		return errors.New("this node runs without the clock shim")
	}
	seq := c.word(0)
	atomic.AddInt64(seq, 1) // odd: readers retry
	atomic.StoreInt64(c.word(1), int64(offset))
	atomic.StoreInt64(c.word(2), ratePPB)
	atomic.StoreInt64(c.word(3), time.Now().UnixNano())
	atomic.AddInt64(seq, 1)
	return nil
}

// Offset is the node's current shift from real time.
func (c *Clock) Offset() time.Duration {
	if c == nil {
		return 0
	}
	off := time.Duration(atomic.LoadInt64(c.word(1)))
	if rate := atomic.LoadInt64(c.word(2)); rate != 0 {
		off += time.Duration((time.Now().UnixNano() - atomic.LoadInt64(c.word(3))) * rate / 1e9)
	}
	return off
}

func (c *Clock) close() {
	if c != nil && c.mem != nil {
		_ = syscall.Munmap(c.mem)
		c.mem = nil
	}
}
