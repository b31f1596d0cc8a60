package client_test

import (
	"bytes"
	"strconv"
	"testing"

	"github.com/resident-dev/resident/client"
	"github.com/resident-dev/resident/protocol"
)

// BenchmarkExecTrue is the round trip of one short exec: request, process
// start and exit, response.
func BenchmarkExecTrue(b *testing.B) {
	r, id := benchSession(b)
	for b.Loop() {
		if _, err := r.Exec(b.Context(), protocol.ExecParams{SandboxID: id, Argv: []string{"true"}}, client.Streams{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkExecOutput streams 32 MiB of stdout through the client per op.
func BenchmarkExecOutput(b *testing.B) {
	r, id := benchSession(b)
	const size = 32 << 20
	b.SetBytes(size)
	for b.Loop() {
		var n countWriter
		if _, err := r.Exec(b.Context(), protocol.ExecParams{SandboxID: id, Argv: []string{"head", "-c", strconv.Itoa(size), "/dev/zero"}}, client.Streams{Stdout: &n}); err != nil || n != size {
			b.Fatalf("%d bytes, %v", n, err)
		}
	}
}

// BenchmarkExecStdin pushes 32 MiB through exec/stdin into cat and back.
func BenchmarkExecStdin(b *testing.B) {
	r, id := benchSession(b)
	in := make([]byte, 32<<20)
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		var n countWriter
		if _, err := r.Exec(b.Context(), protocol.ExecParams{SandboxID: id, Argv: []string{"cat"}}, client.Streams{Stdin: bytes.NewReader(in), Stdout: &n}); err != nil || int(n) != len(in) {
			b.Fatalf("%d bytes, %v", n, err)
		}
	}
}

func benchSession(b *testing.B) (*resident, string) {
	r := spawn(b, client.Options{}, protocol.InitializeParams{})
	id, err := r.Create(b.Context(), protocol.CreateParams{})
	if err != nil {
		b.Fatal(err)
	}
	return r, id
}

type countWriter int64

func (c *countWriter) Write(p []byte) (int, error) { *c += countWriter(len(p)); return len(p), nil }
