package harness

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode"
)

// makeDir makes the run dir.
func (r *run) makeDir() error {
	dir, err := NewRunDir(r.cfg.OutDir, cmp.Or(r.cfg.Name, r.lockName))
	if err != nil {
		return err
	}
	r.res = &Result{Dir: dir, Redis: r.redisVersion, Workload: r.workload}
	return nil
}

// NewRunDir makes a new run dir under root/name, named for the time.
func NewRunDir(root, name string) (string, error) {
	if root == "" {
		root = "results"
	}
	name = SafeName(name)
	base := filepath.Join(root, name, time.Now().Format("20060102T150405"))
	dir := base
	for i := 1; ; i++ {
		err := os.MkdirAll(filepath.Dir(dir), 0o755)
		if err == nil {
			err = os.Mkdir(dir, 0o755)
		}
		if err == nil {
			return dir, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return "", configErr(fmt.Errorf("--out %s: %w: choose a directory lockcheck may write", root, err))
		}
		dir = fmt.Sprintf("%s-%d", base, i)
	}
}

// UpdateLatest points <root>/latest at dir.
func UpdateLatest(root, dir string) error {
	if root == "" {
		root = "results"
	}
	rel, err := filepath.Rel(root, dir)
	if err != nil {
		return err
	}
	link := filepath.Join(root, "latest")
	tmp := link + ".tmp"
	_ = os.Remove(tmp)
	if err := os.Symlink(rel, tmp); err != nil {
		return err
	}
	return os.Rename(tmp, link)
}

// RunPrefix is the key prefix of a run on an external Redis, in dir:
// the run's id and a random part, since two runs started in the same
// second (two CI jobs sharing a staging Redis) get the same id.
func RunPrefix(base, dir string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return base + filepath.Base(dir) + "-" + hex.EncodeToString(b[:]) + ":"
}

// SafeName is name fit for a path and a terminal: path separators and
// control characters (a newline that would forge a "verdict:" line, an
// escape sequence) become '_'.
func SafeName(name string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == os.PathSeparator || unicode.IsControl(r) || r == unicode.ReplacementChar {
			return '_'
		}
		return r
	}, name)
}
