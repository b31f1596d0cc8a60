package resident

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"
	"testing"

	"go.uber.org/zap"

	"github.com/resident-dev/resident/hardening"
	"github.com/resident-dev/resident/protocol"
)

// drainProvider takes uploads as Docker's archive path does, without an
// engine: a lending upload is lent to a writer that keeps nothing, any
// other is read 256 KiB at a time (the archive body's buffer).
type drainProvider struct{ *filesFake }

func (d drainProvider) WriteFileFrom(_ context.Context, _, _ string, _ *uint32, r io.Reader) (int64, error) {
	if l, ok := r.(interface {
		LendTo(io.Writer) (int64, error)
	}); ok {
		return l.LendTo(io.Discard)
	}
	buf := make([]byte, 256<<10)
	var n int64
	for {
		m, err := r.Read(buf)
		n += int64(m)
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// BenchmarkUpload is the resident's own cost of a streamed upload, per
// byte uploaded: frames of 256 KiB of data, four in flight, as the Go
// client sends them, read, decoded and handed to the provider, whose
// writes cost nothing. The host's frames are encoded once, outside the
// measure. Run it beside the same file in a checkout of main for a
// baseline: it uses nothing that main lacks.
func BenchmarkUpload(b *testing.B) {
	const size, chunk = 64 << 20, 256 << 10
	data := make([]byte, chunk)
	for i := range data {
		data[i] = byte(i*131 + i>>8)
	}
	text := protocol.AppendBase64(nil, data)
	for _, sized := range []bool{false, true} {
		b.Run("sized="+strconv.FormatBool(sized), func(b *testing.B) {
			inR, inW := io.Pipe()
			outR, outW := io.Pipe()
			done := make(chan error, 1)
			go func() {
				done <- Serve(context.Background(), pipeRWC{Reader: inR, Writer: outW, closers: []io.Closer{inR, outW}},
					Options{Provider: drainProvider{newFilesFake()}, Scrubber: hardening.New(), Logger: zap.NewNop(), Limits: DefaultLimits()})
			}()
			responses := make(chan []byte, 16)
			go func() {
				fr := protocol.NewFrameReader(outR, 1<<30)
				for {
					body, err := fr.Read()
					if err != nil {
						close(responses)
						return
					}
					if !bytes.Contains(body[:min(len(body), 40)], []byte(`"method"`)) {
						responses <- body
					}
				}
			}()
			b.Cleanup(func() {
				_ = inW.Close()
				<-done
			})
			id := 0
			send := func(body []byte) {
				if _, err := inW.Write(protocol.AppendFrame(nil, body)); err != nil {
					b.Fatal(err)
				}
			}
			await := func() {
				if resp := <-responses; bytes.Contains(resp, []byte(`"error"`)) {
					b.Fatalf("%s", resp)
				}
			}
			call := func(method, params string) {
				id++
				send(fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params))
				await()
			}
			call("initialize", `{"protocol_version":1,"install_id":"bench"}`)
			call("sandbox/create", `{}`)
			frame := make([]byte, 0, len(text)+200)
			b.SetBytes(size)
			b.ResetTimer()
			for i := range b.N {
				stream := "b" + strconv.Itoa(i)
				extra := ""
				if sized {
					extra = `,"size":` + strconv.Itoa(size)
				}
				id++
				send(fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"sandbox/write_file","params":{"sandbox_id":"fake-1","path":"up","stream_id":%q%s}}`, id, stream, extra))
				inFlight := 0
				for sent := 0; sent < size; sent += chunk {
					id++
					frame = fmt.Appendf(frame[:0], `{"jsonrpc":"2.0","id":%d,"method":"upload/data","params":{"stream_id":%q,"eof":%v,"data":"`, id, stream, sent+chunk == size)
					frame = append(append(frame, text...), `"}}`...)
					send(frame)
					if inFlight++; inFlight == 4 {
						await()
						inFlight--
					}
				}
				for ; inFlight >= 0; inFlight-- { // and the write_file
					await()
				}
			}
		})
	}
}
