package resident

import (
	"errors"
	"testing"
	"time"

	"github.com/resident-dev/resident/protocol"
)

func awaitEnd(t *testing.T, h *host) error {
	t.Helper()
	select {
	case err := <-h.done:
		h.done <- err
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return")
		return nil
	}
}

func TestCredentialsExpireAt(t *testing.T) {
	h := startHost(t, newFake())
	h.initialize(map[string]any{"credentials_expire_at": time.Now().Add(300 * time.Millisecond).Format(time.RFC3339Nano)})
	box := newBox(t, h)
	id := h.send(protocol.MethodSandboxExec, execParams(box, "long", "sleep"))
	if m := h.await(id); m.Error == nil || m.Error.Data.Kind != protocol.KindUnauthorized {
		t.Fatalf("in-flight exec at expiry: %+v", m)
	}
	if err := awaitEnd(t, h); !errors.Is(err, ErrCredentialsExpired) {
		t.Fatalf("Serve: %v", err)
	}
	waitFor(t, "credentials_expired", func() bool { return len(h.notifications(protocol.NotifyCredentialsExpired)) > 0 })
	if n := len(h.notifications(protocol.NotifyCredentialsExpired)); n != 1 {
		t.Fatalf("credentials_expired sent %d times", n)
	}
}

func TestUnauthorizedHookExpiresOnce(t *testing.T) {
	fake := newFake()
	h := startHost(t, fake)
	h.initialize(nil)
	before := len(fake.calls)
	fake.fireUnauthorized("registry said 401")
	fake.fireUnauthorized("again")
	if err := awaitEnd(t, h); !errors.Is(err, ErrCredentialsExpired) {
		t.Fatalf("Serve: %v", err)
	}
	waitFor(t, "credentials_expired", func() bool { return len(h.notifications(protocol.NotifyCredentialsExpired)) > 0 })
	if n := len(h.notifications(protocol.NotifyCredentialsExpired)); n != 1 {
		t.Fatalf("credentials_expired sent %d times", n)
	}
	if len(fake.calls) != before {
		t.Fatalf("provider called after expiry: %v", fake.calls[before:])
	}
}

func TestExpiredAtInitialize(t *testing.T) {
	h := startHost(t, newFake())
	h.callErr(protocol.MethodInitialize, map[string]any{"protocol_version": 1, "install_id": "a",
		"credentials_expire_at": time.Now().Add(-time.Hour).Format(time.RFC3339)}, protocol.KindUnauthorized)
	if err := awaitEnd(t, h); !errors.Is(err, ErrCredentialsExpired) {
		t.Fatalf("Serve: %v", err)
	}
}
