package channel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
)

// KillExec kills an exec's tree by its id (a detached exec nobody
// follows, say); an exec that already ended is left as it is.
// ErrUnknownExec for an id the keeper does not hold.
func (c *Conn) KillExec(ctx context.Context, execID string) error {
	_, err := c.request(ctx, keeperproto.ChanKillExec, keeperproto.KillExec{ExecID: execID})
	var fe *FileError
	if errors.As(err, &fe) && fe.Kind == keeperproto.KindNotFound {
		return fmt.Errorf("%w: %s", ErrUnknownExec, execID)
	}
	return err
}

// ListExecs lists the keeper's detached execs, running or ended.
func (c *Conn) ListExecs(ctx context.Context) ([]ExecInfo, error) {
	res, err := c.request(ctx, keeperproto.ChanListExecs, struct{}{})
	if err != nil {
		return nil, err
	}
	out := make([]ExecInfo, 0, len(res.Execs))
	for _, x := range res.Execs {
		info := ExecInfo{ID: x.ExecID, Argv: x.Argv, Started: time.Unix(0, x.StartedNS), Running: x.Running,
			End: x.End, Buffered: x.Buffered, Buffer: x.Buffer, Dropped: x.Dropped}
		if x.Exit != nil {
			s := exitStatus(x.Exit)
			info.Exit = &s
		}
		out = append(out, info)
	}
	return out, nil
}

// request sends a one-frame request and waits for its Result; a Failure
// comes back as a *FileError.
func (c *Conn) request(ctx context.Context, typ byte, req any) (keeperproto.Result, error) {
	st, err := c.newStream(false)
	if err != nil {
		return keeperproto.Result{}, err
	}
	defer c.forget(st)
	if err := c.sendJSON(typ, st.id, req); err != nil {
		return keeperproto.Result{}, err
	}
	f, err := st.answer(ctx, false)
	if err != nil {
		return keeperproto.Result{}, err
	}
	return decodeResult(f)
}

func decodeResult(f keeperproto.Frame) (keeperproto.Result, error) {
	var res keeperproto.Result
	switch f.Type {
	case keeperproto.ChanFailure:
		var fail keeperproto.Failure
		_ = json.Unmarshal(f.Payload, &fail)
		return res, &FileError{Reason: fail.Reason, Kind: fail.Kind, Field: fail.Field, Msg: fail.Msg}
	case keeperproto.ChanResult:
		if err := json.Unmarshal(f.Payload, &res); err != nil {
			return res, fmt.Errorf("%w: bad result: %w", ErrBroken, err)
		}
		return res, nil
	}
	return res, fmt.Errorf("%w: unexpected answer %q", ErrBroken, f.Type)
}

// Shutdown ends the sandbox on the keeper's word (keeperproto.FeatureShutdown):
// nil once the keeper, the sandbox's init, has killed and reaped every
// other process of it; the keeper exits right after, so the channel ends.
// A *FileError is the keeper's refusal (not its init, not protected, a
// process that would not go): it serves on, and the sandbox is to be
// stopped another way. ErrUnsupported for a keeper without the feature.
func (c *Conn) Shutdown(ctx context.Context) error {
	if !c.Supports(keeperproto.FeatureShutdown) {
		return ErrUnsupported
	}
	_, err := c.request(ctx, keeperproto.ChanShutdown, struct{}{})
	return err
}
