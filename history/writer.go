package history

import (
	"cmp"
	"encoding/json"
	"io"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
)

// DefaultFlushInterval is how often a Writer flushes its buffer, so that a
// run killed hard loses at most this much of its history.
const DefaultFlushInterval = 200 * time.Millisecond

// Writer streams ops to an io.Writer as JSON lines. It assigns dense indexes
// in the order ops are written. It is safe for concurrent use.
//
// A client's Write only encodes its op and appends it to a buffer in
// memory: the write to the file is a flusher's, every interval or as
// soon as the buffer holds kickSize, outside the lock the clients take,
// so no client waits on the disk (a bufio.Writer under that lock made
// every client wait for each 256 KiB write).
type Writer struct {
	mu    sync.Mutex
	buf   []byte // ops written since the last hand-off, under mu
	next  int64
	tally Tally // ops written, by f and type
	err   error
	pool  sync.Pool

	// wmu orders the hand-offs: one is written at a time, in the order
	// they were taken. out and spare are used under it.
	wmu   sync.Mutex
	out   io.Writer
	spare []byte

	kick  chan struct{}
	stop  chan struct{}
	done  chan struct{}
	close sync.Once
}

// kickSize is how much a Writer buffers before its flusher is woken
// ahead of the interval; at four times as much, a client flushes itself.
const kickSize = 256 << 10

// NewWriter returns a Writer that flushes every interval (DefaultFlushInterval
// if zero) and on Close. Close must be called.
func NewWriter(w io.Writer, interval time.Duration) *Writer {
	if interval <= 0 {
		interval = DefaultFlushInterval
	}
	hw := &Writer{
		out:   w,
		buf:   make([]byte, 0, kickSize*2),
		spare: make([]byte, 0, kickSize*2),
		kick:  make(chan struct{}, 1),
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
	}
	hw.pool.New = func() any { b := make([]byte, 0, 256); return &b }
	go hw.flushLoop(interval)
	return hw
}

func (w *Writer) flushLoop(interval time.Duration) {
	defer close(w.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
		case <-w.kick:
		}
		_ = w.Flush()
	}
}

// Write appends op, with its Index set to the next index, and returns that
// index. After the first I/O error every Write returns it.
func (w *Writer) Write(op Op) (int64, error) {
	// Encode outside the lock; only the index and the copy are serialised.
	bp := w.pool.Get().(*[]byte)
	body := AppendBody((*bp)[:0], &op)
	w.mu.Lock()
	idx := w.next
	w.tally.Add(&op)
	if w.err == nil {
		w.buf = append(w.buf, `{"index":`...)
		w.buf = strconv.AppendInt(w.buf, idx, 10)
		w.buf = append(w.buf, body...)
		w.next++
	}
	n := len(w.buf)
	err := w.err
	w.mu.Unlock()
	*bp = body
	w.pool.Put(bp)
	switch {
	case n >= 4*kickSize:
		// The flusher is behind: this client writes, and waits, rather
		// than let the buffer grow without bound.
		err = cmp.Or(w.Flush(), err)
	case n >= kickSize:
		select {
		case w.kick <- struct{}{}:
		default:
		}
	}
	return idx, err
}

// Counts returns the ops written so far, by f and type (the live
// progress line reads them).
func (w *Writer) Counts() Counts {
	w.mu.Lock()
	t := w.tally
	w.mu.Unlock()
	return t.Counts()
}

// Flush writes the buffered ops to the underlying writer.
func (w *Writer) Flush() error {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	w.mu.Lock()
	b, err := w.buf, w.err
	w.buf = w.spare[:0]
	w.mu.Unlock()
	if err == nil && len(b) > 0 {
		if _, err = w.out.Write(b); err != nil {
			w.mu.Lock()
			w.err = err
			w.mu.Unlock()
		}
	}
	w.spare = b[:0]
	return err
}

// Close stops the flush loop and flushes. It does not close the underlying
// writer.
func (w *Writer) Close() error {
	w.close.Do(func() {
		close(w.stop)
		<-w.done
	})
	return w.Flush()
}

// AppendBody appends every field of op after "index" and the closing brace
// and newline. It produces the same JSON as encoding/json would for the
// fields, in a fraction of the time: it is on the hot path of every client.
func AppendBody(b []byte, op *Op) []byte {
	b = append(b, `,"process":`...)
	b = strconv.AppendInt(b, int64(op.Process), 10)
	b = append(b, `,"f":`...)
	b = appendString(b, string(op.F))
	b = append(b, `,"type":`...)
	b = appendString(b, string(op.Type))
	b = appendOptional(b, op)
	b = append(b, `,"call":`...)
	b = strconv.AppendInt(b, op.Call, 10)
	b = append(b, `,"return":`...)
	b = strconv.AppendInt(b, op.Return, 10)
	if op.Scheduled != 0 {
		b = append(b, `,"scheduled":`...)
		b = strconv.AppendInt(b, op.Scheduled, 10)
	}
	if op.CutShort {
		b = append(b, `,"cut_short":true`...)
	}
	if op.Late {
		b = append(b, `,"late":true`...)
	}
	if op.Error != "" {
		b = append(b, `,"error":`...)
		b = appendString(b, op.Error)
	}
	if op.ClockBound != 0 {
		b = append(b, `,"clock_bound":`...)
		b = strconv.AppendInt(b, op.ClockBound, 10)
	}
	if op.Answered {
		b = append(b, `,"answered":true`...)
	}
	if op.Depth != 0 {
		b = append(b, `,"depth":`...)
		b = strconv.AppendInt(b, int64(op.Depth), 10)
	}
	if op.Value != nil {
		v, _ := json.Marshal(op.Value) // a struct of strings cannot fail
		b = append(b, `,"value":`...)
		b = append(b, v...)
	}
	return append(b, "}\n"...)
}

// appendOptional appends the optional fields key to permits, keeping AppendBody short at one call.
func appendOptional(b []byte, op *Op) []byte {
	if op.Key != "" {
		b = append(b, `,"key":`...)
		b = appendString(b, op.Key)
	}
	if op.Token != "" {
		b = append(b, `,"token":`...)
		b = appendString(b, op.Token)
	}
	if op.Fence != 0 {
		b = append(b, `,"fence":`...)
		b = strconv.AppendInt(b, op.Fence, 10)
	}
	if op.TTLms != 0 {
		b = append(b, `,"ttl_ms":`...)
		b = strconv.AppendInt(b, op.TTLms, 10)
	}
	if op.Mode != "" {
		b = append(b, `,"mode":`...)
		b = appendString(b, op.Mode)
	}
	if op.Access != "" {
		b = append(b, `,"access":`...)
		b = appendString(b, op.Access)
	}
	if op.Permits != 0 {
		b = append(b, `,"permits":`...)
		b = strconv.AppendInt(b, int64(op.Permits), 10)
	}
	return appendWait(b, op)
}

// appendWait appends a blocking acquire's wait_ms, wake_ms and tried.
func appendWait(b []byte, op *Op) []byte {
	if op.WaitMs != 0 {
		b = append(b, `,"wait_ms":`...)
		b = strconv.AppendInt(b, op.WaitMs, 10)
	}
	if op.WakeMs != 0 {
		b = append(b, `,"wake_ms":`...)
		b = strconv.AppendInt(b, op.WakeMs, 10)
	}
	if op.Tried != 0 {
		b = append(b, `,"tried":`...)
		b = strconv.AppendInt(b, op.Tried, 10)
	}
	return b
}

// appendString appends s as a JSON string. Plain ASCII (every key and token
// lockcheck makes) is copied; anything else goes through encoding/json.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' || c >= utf8.RuneSelf {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
