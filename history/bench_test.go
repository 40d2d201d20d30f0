package history

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"
)

var benchOp = Op{Process: 1234, F: Acquire, Type: OK, Key: "lock:17", Token: "0123456789abcdef0123456789abcdef",
	TTLms: 1000, Call: 12_345_678_901, Return: 12_345_999_999}

// BenchmarkWriter_Write is recording one op, the cost every client pays.
func BenchmarkWriter_Write(b *testing.B) {
	w := NewWriter(io.Discard, 0)
	defer w.Close()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_, _ = w.Write(benchOp)
		}
	})
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
