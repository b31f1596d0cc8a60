package resident

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/resident-dev/resident/protocol"
)

// Data frames big enough for the fast path (protocol.ParseDataEnvelope)
// carry their bytes whole to the provider, and one that is wrong elsewhere
// is still refused.
func TestLargeDataFramesReachTheProviderWhole(t *testing.T) {
	f := newFilesFake()
	h := startHost(t, f)
	h.initialize(nil)
	id := createdBox(t, h)
	rng := rand.New(rand.NewPCG(1, 2))
	chunk := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}

	p := execParams(id, "cat", "cat")
	p["stdin"] = true
	exec := h.send(protocol.MethodSandboxExec, p)
	var sent bytes.Buffer
	for _, n := range []int{64 << 10, 3 << 10, 200 << 10} {
		data := chunk(n)
		sent.Write(data)
		h.call(protocol.MethodExecStdin, map[string]any{"exec_id": "cat", "data": data}, nil)
	}
	h.call(protocol.MethodExecStdin, map[string]any{"exec_id": "cat", "eof": true}, nil)
	if m := h.await(exec); m.Error != nil {
		t.Fatalf("cat: %+v", m.Error)
	}
	if got := h.output("cat", "stdout"); got != sent.String() {
		t.Fatalf("cat gave back %d bytes, not the %d sent through exec/stdin", len(got), sent.Len())
	}

	write := h.send(protocol.MethodSandboxWrite, map[string]any{"sandbox_id": id, "path": "big.bin", "stream_id": "up"})
	h.callErr(protocol.MethodUploadData, map[string]any{"stream_id": "up", "data": chunk(8 << 10), "eof": "yes"}, protocol.KindInvalidRequest)
	sent.Reset()
	for i, n := range []int{256 << 10, 5 << 10, 100 << 10} {
		data := chunk(n)
		sent.Write(data)
		h.call(protocol.MethodUploadData, map[string]any{"stream_id": "up", "data": data, "eof": i == 2}, nil)
	}
	if m := h.await(write); m.Error != nil {
		t.Fatalf("write_file: %s", m.Error.Message)
	}
	f.fmu.Lock()
	got := f.uploaded["big.bin"]
	f.fmu.Unlock()
	if got != sent.String() {
		t.Fatalf("uploaded %d bytes, not the %d sent", len(got), sent.Len())
	}
}

// Two uploads pipelined and interleaved frame by frame: every frame's data
// is decoded into a recycled buffer and its body is read into the last
// one's, and each file still arrives whole and unmixed.
func TestPipelinedUploadsRecycleBuffersWithoutMixing(t *testing.T) {
	f := newFilesFake()
	h := startHost(t, f)
	h.initialize(nil)
	id := createdBox(t, h)
	rng := rand.New(rand.NewPCG(3, 4))
	sent := map[string]*bytes.Buffer{"a.bin": {}, "b.bin": {}}
	writes := map[string]string{}
	for _, name := range []string{"a.bin", "b.bin"} {
		writes[name] = h.send(protocol.MethodSandboxWrite, map[string]any{"sandbox_id": id, "path": name, "stream_id": name})
	}
	var pending []string
	const frames = 12
	for i := range frames {
		for _, name := range []string{"a.bin", "b.bin"} {
			data := make([]byte, 2<<10+rng.IntN(300<<10))
			for j := range data {
				data[j] = byte(rng.Uint32())
			}
			sent[name].Write(data)
			pending = append(pending, h.send(protocol.MethodUploadData, map[string]any{"stream_id": name, "data": data, "eof": i == frames-1}))
		}
	}
	for _, id := range pending {
		if m := h.await(id); m.Error != nil {
			t.Fatalf("upload/data: %s", m.Error.Message)
		}
	}
	for name, w := range writes {
		if m := h.await(w); m.Error != nil {
			t.Fatalf("write_file %s: %s", name, m.Error.Message)
		}
		f.fmu.Lock()
		got := f.uploaded[name]
		f.fmu.Unlock()
		if got != sent[name].String() {
			t.Fatalf("%s: uploaded %d bytes, not the %d sent, or not the same ones", name, len(got), sent[name].Len())
		}
	}
}
