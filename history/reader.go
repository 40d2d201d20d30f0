package history

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
)

// A LineError is bad input at one line of a history.
type LineError struct {
	Path string // may be empty
	Line int    // from 1
	Err  error
}

func (e *LineError) Error() string {
	where := "history"
	if e.Path != "" {
		where = e.Path
	}
	return fmt.Sprintf("%s line %d: %v", where, e.Line, e.Err)
}

func (e *LineError) Unwrap() error { return e.Err }

// maxLine bounds one history line; a longer one is reported, not buffered.
const maxLine = 1 << 20

// Read decodes a whole history. Lines are decoded in parallel; the first bad
// line (lowest line number) is reported with its number. Indexes must be
// dense and in order, as the Writer makes them.
func Read(r io.Reader) ([]Op, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	var lines [][]byte
	var arena []byte
	for sc.Scan() {
		// Copy into a shared arena: one allocation per ~1 MiB, not per line.
		line := sc.Bytes()
		if len(arena)+len(line) > cap(arena) {
			arena = make([]byte, 0, max(1<<20, len(line)))
		}
		start := len(arena)
		arena = append(arena, line...)
		lines = append(lines, arena[start:len(arena):len(arena)])
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, &LineError{Line: len(lines) + 1, Err: fmt.Errorf("line longer than %d bytes", maxLine)}
		}
		return nil, fmt.Errorf("read history: %w", err)
	}
	// A trailing blank line is tolerated (an editor's final newline).
	for len(lines) > 0 && len(bytes.TrimSpace(lines[len(lines)-1])) == 0 {
		lines = lines[:len(lines)-1]
	}
	ops := make([]Op, len(lines))
	errs := make([]error, len(lines))
	workers := runtime.GOMAXPROCS(0)
	chunk := (len(lines) + workers - 1) / workers
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		lo, hi := w*chunk, min((w+1)*chunk, len(lines))
		if lo >= hi {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := lo; i < hi; i++ {
				errs[i] = decodeLine(lines[i], &ops[i], int64(i))
				if errs[i] != nil {
					return // this chunk stops at its first error; earlier chunks still report theirs
				}
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, &LineError{Line: i + 1, Err: err}
		}
	}
	return ops, nil
}

func decodeLine(line []byte, op *Op, want int64) error {
	if len(bytes.TrimSpace(line)) == 0 {
		return errors.New("empty line")
	}
	if err := json.Unmarshal(line, op); err != nil {
		return fmt.Errorf("not a history op: %v", err)
	}
	if op.Index != want {
		return fmt.Errorf("index %d, want %d (indexes are dense and start at 0)", op.Index, want)
	}
	return op.validate()
}

// ReadFile reads the history at path; errors name the path.
func ReadFile(path string) ([]Op, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ops, err := Read(f)
	var le *LineError
	if errors.As(err, &le) {
		le.Path = path
	}
	return ops, err
}
