package client_test

import (
	"errors"
	"testing"

	"github.com/resident-dev/resident/client"
	"github.com/resident-dev/resident/protocol"
)

// One sentinel per kind: each *Error matches its own and no other.
func TestEveryKindHasItsSentinel(t *testing.T) {
	sentinels := map[protocol.Kind]error{
		protocol.KindInvalidRequest: client.ErrInvalidRequest,
		protocol.KindNotFound:       client.ErrNotFound,
		protocol.KindUnauthorized:   client.ErrUnauthorized,
		protocol.KindQuota:          client.ErrQuota,
		protocol.KindTimeout:        client.ErrTimeout,
		protocol.KindCancelled:      client.ErrCancelled,
		protocol.KindConflict:       client.ErrConflict,
		protocol.KindTransient:      client.ErrTransient,
		protocol.KindInternal:       client.ErrInternal,
	}
	if len(sentinels) != len(protocol.Kinds) {
		t.Fatalf("%d sentinels for %d kinds", len(sentinels), len(protocol.Kinds))
	}
	for _, kind := range protocol.Kinds {
		err := error(&client.Error{Method: "m", Kind: kind, Code: kind.Code(), Message: "x"})
		for other, sentinel := range sentinels {
			if errors.Is(err, sentinel) != (other == kind) {
				t.Errorf("%s: errors.Is(%s) = %v", kind, other, !(other == kind))
			}
		}
		if client.KindOf(err) != kind || client.KindOf(sentinels[kind]) != kind {
			t.Errorf("KindOf(%s)", kind)
		}
		if errors.Is(err, client.ErrCredentialsExpired) != (kind == protocol.KindUnauthorized) {
			t.Errorf("%s and ErrCredentialsExpired", kind)
		}
	}
	unknown := &client.Error{Kind: "rate_limited"}
	if !errors.Is(unknown, client.ErrTransient) || client.KindOf(unknown) != protocol.KindTransient {
		t.Error("an unknown kind is transient")
	}
	if client.KindOf(errors.New("plain")) != "" {
		t.Error("a plain error has no kind")
	}
}

func TestExitErrorMatches(t *testing.T) {
	expired := &client.ExitError{Code: 3}
	if !errors.Is(expired, client.ErrExited) || !errors.Is(expired, client.ErrCredentialsExpired) {
		t.Fatal("exit 3")
	}
	if crashed := (&client.ExitError{Code: 1, LastLog: "boom"}); errors.Is(crashed, client.ErrCredentialsExpired) || crashed.Error() != "resident exited with code 1 (failure); last log: boom" {
		t.Fatalf("exit 1: %v", crashed)
	}
}
