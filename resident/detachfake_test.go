package resident

import (
	"context"
	"io"
	"sync"
	"time"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// detachFake adds detached execs to the fake provider: the test writes their
// output (emit) and ends them (end); the fake keeps the last ringBytes of
// output, as a keeper's bounded ring does, and outlives every session.
type detachFake struct {
	*fakeProvider
	ringBytes int64
	mu        sync.Mutex
	changed   *sync.Cond
	execs     map[string]*fakeDetached // by sandbox + "/" + id
}

type fakeDetached struct {
	info   protocol.ExecInfo
	chunks []provider.OutputChunk // kept output, oldest first
	start  int64                  // offset of the oldest kept byte
	end    int64
	exit   *provider.ExitStatus
	killed bool
	stdin  []byte
}

var _ provider.Detacher = (*detachFake)(nil)

func newDetachFake() *detachFake {
	d := &detachFake{fakeProvider: newFake(), ringBytes: 1 << 20, execs: map[string]*fakeDetached{}}
	d.changed = sync.NewCond(&d.mu)
	return d
}

func (d *detachFake) Info() provider.Info {
	info := d.fakeProvider.Info()
	info.Capabilities.Detach = true
	info.DetachedBufferBytes = d.ringBytes
	return info
}

func (d *detachFake) StartDetached(_ context.Context, sandboxID string, req provider.ExecRequest) error {
	d.record("detach " + req.ID)
	d.mu.Lock()
	defer d.mu.Unlock()
	key := sandboxID + "/" + req.ID
	if _, dup := d.execs[key]; dup {
		return protocol.Errorf(protocol.KindConflict, "a detached exec %q exists", req.ID)
	}
	d.execs[key] = &fakeDetached{info: protocol.ExecInfo{ExecID: req.ID, Argv: req.Argv, StartedAt: time.Now().UTC().Format(time.RFC3339), Running: true}}
	return nil
}

// emit appends output to a detached exec, dropping what the ring no longer holds.
func (d *detachFake) emit(sandboxID, id, stream, data string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e := d.execs[sandboxID+"/"+id]
	e.chunks = append(e.chunks, provider.OutputChunk{Stream: stream, Offset: e.end, Data: []byte(data)})
	e.end += int64(len(data))
	for e.end-e.start > d.ringBytes && len(e.chunks) > 0 {
		e.start += int64(len(e.chunks[0].Data))
		e.chunks = e.chunks[1:]
	}
	d.changed.Broadcast()
}

func (d *detachFake) end(sandboxID, id string, code int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e := d.execs[sandboxID+"/"+id]
	e.exit = &provider.ExitStatus{Code: code}
	e.info.Running = false
	d.changed.Broadcast()
}

func (d *detachFake) running(sandboxID, id string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	e := d.execs[sandboxID+"/"+id]
	return e != nil && e.exit == nil
}

func (d *detachFake) Attach(_ context.Context, sandboxID, id string, offset int64) (provider.Attachment, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e := d.execs[sandboxID+"/"+id]
	if e == nil {
		return nil, protocol.Errorf(protocol.KindNotFound, "no detached exec %q", id)
	}
	from := max(offset, e.start)
	return &fakeAttachment{d: d, e: e, next: from, info: provider.AttachInfo{Offset: from, Lost: from - offset}}, nil
}

func (d *detachFake) ListExecs(_ context.Context, sandboxID string) ([]protocol.ExecInfo, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []protocol.ExecInfo
	for key, e := range d.execs {
		if len(key) > len(sandboxID) && key[:len(sandboxID)+1] == sandboxID+"/" {
			info := e.info
			info.Argv = append([]string(nil), info.Argv...)
			info.NextOffset, info.BufferedBytes, info.DroppedBytes = e.end, e.end-e.start, e.start
			out = append(out, info)
		}
	}
	return out, nil
}

func (d *detachFake) KillExec(_ context.Context, sandboxID, id string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	e := d.execs[sandboxID+"/"+id]
	if e == nil {
		return protocol.Errorf(protocol.KindNotFound, "no detached exec %q", id)
	}
	if e.exit == nil {
		e.killed, e.info.Running = true, false
		e.exit = &provider.ExitStatus{Code: 137, Signal: "SIGKILL", Killed: true}
		d.changed.Broadcast()
	}
	return nil
}

type fakeAttachment struct {
	d      *detachFake
	e      *fakeDetached
	next   int64
	info   provider.AttachInfo
	closed bool
}

func (a *fakeAttachment) Next() (provider.OutputChunk, error) {
	a.d.mu.Lock()
	defer a.d.mu.Unlock()
	for {
		if a.closed {
			return provider.OutputChunk{}, io.ErrClosedPipe
		}
		for _, c := range a.e.chunks {
			if c.Offset >= a.next {
				a.next = c.Offset + int64(len(c.Data))
				return c, nil
			}
		}
		if a.e.exit != nil {
			return provider.OutputChunk{}, io.EOF
		}
		a.d.changed.Wait()
	}
}

func (a *fakeAttachment) Exit() (provider.ExitStatus, bool) {
	a.d.mu.Lock()
	defer a.d.mu.Unlock()
	if a.e.exit == nil {
		return provider.ExitStatus{}, false
	}
	return *a.e.exit, true
}

func (a *fakeAttachment) Stdin() io.WriteCloser { return nil }
func (a *fakeAttachment) Info() provider.AttachInfo {
	return a.info
}

func (a *fakeAttachment) Close() error {
	a.d.mu.Lock()
	defer a.d.mu.Unlock()
	a.closed = true
	a.d.changed.Broadcast()
	return nil
}
