package protocol

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"testing"
)

var (
	benchRequest = []byte(`{"jsonrpc":"2.0","id":42,"method":"sandbox/exec","params":{"sandbox_id":"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef","argv":["sh","-c","make test"],"exec_id":"e42","env":{"LANG":"C.UTF-8"},"timeout_s":60}}`)
	benchData    = []byte(`{"jsonrpc":"2.0","method":"exec/output","params":{"exec_id":"e42","stream":"stdout","data":"` +
		base64.StdEncoding.EncodeToString(bytes.Repeat([]byte("compiling...\n"), 5000)) + `"}}`)
)

// BenchmarkFrameRead reads frames back to back from one buffered stream:
// a small request, and a 64 KiB exec/output notification.
func BenchmarkFrameRead(b *testing.B) {
	for _, c := range []struct {
		name string
		body []byte
	}{{"request", benchRequest}, {"data", benchData}} {
		b.Run(c.name, func(b *testing.B) {
			const perStream = 64
			var stream []byte
			for range perStream {
				stream = AppendFrame(stream, c.body)
			}
			b.SetBytes(int64(len(c.body)))
			b.ReportAllocs()
			r := bytes.NewReader(stream)
			fr := NewFrameReader(r, 0)
			for i := 0; b.Loop(); i++ {
				if i%perStream == 0 {
					r.Reset(stream)
					fr = NewFrameReader(r, 0)
				}
				if _, err := fr.Read(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAppendFrame frames a body into a reused buffer.
func BenchmarkAppendFrame(b *testing.B) {
	for _, c := range []struct {
		name string
		body []byte
	}{{"request", benchRequest}, {"data", benchData}} {
		b.Run(c.name, func(b *testing.B) {
			var buf []byte
			b.SetBytes(int64(len(c.body)))
			b.ReportAllocs()
			for b.Loop() {
				buf = AppendFrame(buf[:0], c.body)
			}
		})
	}
}

// BenchmarkParseEnvelope validates one incoming request before any library
// sees it.
func BenchmarkParseEnvelope(b *testing.B) {
	b.SetBytes(int64(len(benchRequest)))
	b.ReportAllocs()
	for b.Loop() {
		if _, bad := ParseEnvelope(benchRequest); bad != nil {
			b.Fatal(bad)
		}
	}
}

// BenchmarkDecodeParams is the strict decoding every handler starts from.
func BenchmarkDecodeParams(b *testing.B) {
	env, bad := ParseEnvelope(benchRequest)
	if bad != nil {
		b.Fatal(bad)
	}
	b.SetBytes(int64(len(env.Params)))
	b.ReportAllocs()
	for b.Loop() {
		var p ExecParams
		if err := DecodeParams(env.Params, &p); err != nil {
			b.Fatal(fmt.Sprint(err))
		}
	}
}
