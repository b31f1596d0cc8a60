package keeperexec

import (
	"errors"
	"fmt"
	"testing"

	"github.com/resident-dev/resident/internal/keeper/channel"
	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// Every way a connection stream fails to open maps the same for every
// provider: a keeper without the streams is the relay's fallback, a
// refusal inside transient with its reason, a broken or fenced channel
// transient.
func TestDialError(t *testing.T) {
	if err := dialError(channel.ErrUnsupported); !errors.Is(err, provider.ErrNoDial) {
		t.Errorf("a keeper without net: %v, want ErrNoDial", err)
	}
	refused := dialError(&channel.NetError{Op: "dial", Reason: channel.NetRefused, Msg: "connection refused"})
	var ne *channel.NetError
	if protocol.KindOf(refused) != protocol.KindTransient || !errors.As(refused, &ne) || errors.Is(refused, provider.ErrNoDial) {
		t.Errorf("a refused port: %v (kind %s), want transient with the NetError", refused, protocol.KindOf(refused))
	}
	for _, e := range []error{channel.ErrFenced, fmt.Errorf("%w: eof", channel.ErrBroken)} {
		if err := dialError(e); protocol.KindOf(err) != protocol.KindTransient || !errors.Is(err, channel.ErrBroken) {
			t.Errorf("%v: %v (kind %s), want transient", e, err, protocol.KindOf(err))
		}
	}
	other := errors.New("keeper channel: dial: bad request")
	if err := dialError(other); err != other {
		t.Errorf("a request the keeper refused: %v, want it as it is", err)
	}
}
