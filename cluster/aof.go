package cluster

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// A power loss under appendfsync everysec. Redis writes each command to
// its AOF before it replies, but fsyncs the file only once a second, so a
// crash of the host (not of redis-server: the kernel still holds what was
// written) loses up to the last second of acknowledged writes (Redis's
// documentation: "you may lose 1 second of data"). SIGKILL alone loses
// nothing, so the kill-redis fault emulates the host's crash: it marks
// where the AOF ends, lets a second of writes through, kills the node and
// cuts the AOF back to the mark before the restart loads it.

// AOFMark is where a node's AOF ended at one instant.
type AOFMark struct {
	path string
	size int64
}

// MarkAOF reads where node n's AOF ends now. It errs where lockcheck
// cannot reach the file (a container's) or the node keeps none.
func (n *Node) MarkAOF() (AOFMark, error) {
	path, err := currentAOF(n.dir)
	if err != nil {
		return AOFMark{}, err
	}
	st, err := os.Stat(path)
	if err != nil {
		return AOFMark{}, err
	}
	return AOFMark{path: path, size: st.Size()}, nil
}

// CutAOF truncates node n's AOF back to m (n must be down, or its next
// write lands past the cut) and returns what it cut: the writes a power
// loss at m would have lost. It errs, cutting nothing, if the AOF is no
// longer the file m marked (a rewrite started another) or is shorter.
func (n *Node) CutAOF(m AOFMark) ([]byte, error) {
	path, err := currentAOF(n.dir)
	if err != nil {
		return nil, err
	}
	if path != m.path {
		return nil, fmt.Errorf("AOF %s replaced by %s since the mark", filepath.Base(m.path), filepath.Base(path))
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Seek(m.size, io.SeekStart); err != nil {
		return nil, err
	}
	cut, err := io.ReadAll(f)
	if err != nil {
		return nil, err
	}
	return cut, f.Truncate(m.size)
}

// currentAOF is the AOF file Redis appends to in dir: Redis 7's current
// incremental file (the manifest's last "type i" line), or Redis 6's
// appendonly.aof.
func currentAOF(dir string) (string, error) {
	if dir == "" {
		return "", errors.New("no data dir on this host")
	}
	adir := filepath.Join(dir, "appendonlydir")
	f, err := os.Open(filepath.Join(adir, "appendonly.aof.manifest"))
	if errors.Is(err, os.ErrNotExist) {
		path := filepath.Join(dir, "appendonly.aof")
		if _, err := os.Stat(path); err != nil {
			return "", fmt.Errorf("no AOF in %s", dir)
		}
		return path, nil
	}
	if err != nil {
		return "", err
	}
	defer f.Close()
	// Lines such as "file appendonly.aof.1.incr.aof seq 1 type i"; the
	// file names Redis writes carry no spaces.
	name := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fs := strings.Fields(sc.Text()); len(fs) >= 6 && fs[0] == "file" && fs[len(fs)-2] == "type" && fs[len(fs)-1] == "i" {
			name = fs[1]
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	if name == "" {
		return "", fmt.Errorf("%s names no incremental AOF", f.Name())
	}
	return filepath.Join(adir, name), nil
}

// UnsyncedKeys are the leases of before (a node's, read just before it
// was killed) live for longer than margin whose grant was a write in cut
// (the AOF's tail a power loss dropped): the restart loads the node
// without that write, so those leases are gone. A string key's lease is
// found by its write's arguments as the AOF has them, the key and then
// the value, each a RESP bulk string (SET key token PXAT ..., from a
// client or a script). A lease that is a member of a key (a semaphore's
// sorted set, a reentrant lock's hash) is found by its token, a bulk
// string in cut: the write that added it, or one that renewed it (a
// renewal lost shortens the lease the restart loads), each named once
// however many of the key's structures hold it. A subscription
// (Holding.Conn) is in no AOF: it is always among them.
func UnsyncedKeys(before Holdings, cut []byte, margin time.Duration) []string {
	var keys []string
	tokens := map[string]bool{}
	for k, h := range before {
		switch {
		case h.TTL <= margin:
		case h.Conn || len(h.Members) == 0 && bytes.Contains(cut, []byte(bulk(k)+bulk(h.Value))):
			// A subscription is in no AOF: every restart loses it.
			keys = append(keys, k)
		default:
			for _, m := range h.Members {
				if !tokens[m] && bytes.Contains(cut, []byte(bulk(m))) {
					tokens[m] = true
					keys = append(keys, k+" "+m)
				}
			}
		}
	}
	return keys
}

// bulk is s as a RESP bulk string.
func bulk(s string) string { return fmt.Sprintf("$%d\r\n%s\r\n", len(s), s) }
