package history

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
)

var benchOp = Op{Process: 1234, F: Acquire, Type: OK, Key: "lock:17", Token: "0123456789abcdef0123456789abcdef",
	TTLms: 1000, Call: 12_345_678_901, Return: 12_345_999_999}

// BenchmarkWriter_Write is recording one op, the cost every client pays.
func BenchmarkWriter_Write(b *testing.B) { benchWrites(b, io.Discard) }

// BenchmarkWriter_File is recording one op into a file, the clients in
// parallel: the flusher writes outside the lock they take.
func BenchmarkWriter_File(b *testing.B) { benchWrites(b, benchFile(b)) }

// benchWrites records benchOp from parallel clients into a Writer on out.
func benchWrites(b *testing.B, out io.Writer) {
	w := NewWriter(out, 0)
	defer w.Close()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_, _ = w.Write(benchOp)
		}
	})
}

// BenchmarkWriter_FileLockedBaseline is the same with the Writer's
// earlier shape, side by side: a bufio.Writer of 256 KiB under the lock
// every client takes, so that each write to the file holds them all.
func BenchmarkWriter_FileLockedBaseline(b *testing.B) {
	f := benchFile(b)
	var mu sync.Mutex
	bw := bufio.NewWriterSize(f, 256<<10)
	var next int64
	var head [32]byte
	pool := sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			bp := pool.Get().(*[]byte)
			body := AppendBody((*bp)[:0], &benchOp)
			mu.Lock()
			_, _ = bw.Write(strconv.AppendInt(append(head[:0], `{"index":`...), next, 10))
			_, _ = bw.Write(body)
			next++
			mu.Unlock()
			*bp = body
			pool.Put(bp)
		}
	})
	_ = bw.Flush()
}

func benchFile(b *testing.B) *os.File {
	f, err := os.Create(filepath.Join(b.TempDir(), "history.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	return f
}

// BenchmarkEncodingJSON_Baseline is what the Writer would cost with
// encoding/json.
func BenchmarkEncodingJSON_Baseline(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_, _ = json.Marshal(benchOp)
	}
}

func BenchmarkRead_100k(b *testing.B) {
	var buf bytes.Buffer
	w := NewWriter(&buf, 0)
	for i := 0; i < 100_000; i++ {
		_, _ = w.Write(benchOp)
	}
	w.Close()
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Read(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}
