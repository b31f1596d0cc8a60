package kubernetes

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resident-dev/resident/protocol"
)

// A bearer token from initialize replaces the kubeconfig's credentials; a
// token the API server refuses is unauthorized and fires the hook (the
// expiry flow), and the provider never falls back to the kubeconfig's.
func TestBearerTokenAnd401(t *testing.T) {
	p := newTestProvider(t)
	var fired atomic.Int32
	var reason atomic.Value
	p.OnUnauthorized(func(r string) { fired.Add(1); reason.Store(r) })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := p.ApplyAuth(ctx, map[string]string{CredentialToken: "not-a-token-the-cluster-knows"})
	if protocol.KindOf(err) != protocol.KindUnauthorized {
		t.Fatalf("ApplyAuth with a refused token: %v (kind %s), want unauthorized", err, protocol.KindOf(err))
	}
	if fired.Load() == 0 || !strings.Contains(reason.Load().(string), "401") {
		t.Fatalf("the unauthorized hook fired %d times", fired.Load())
	}
	if _, err := p.ListOwned(ctx, testOwner("auth")); protocol.KindOf(err) != protocol.KindUnauthorized {
		t.Fatalf("ListOwned after a refused token: %v, want unauthorized (no fallback to the kubeconfig)", err)
	}
}

// A token the cluster accepts works in place of the kubeconfig's client
// certificate (the test cluster's static token of kube-network-policies).
func TestBearerTokenAccepted(t *testing.T) {
	p := newTestProvider(t)
	token, err := os.ReadFile(filepath.Join(os.Getenv("RESIDENT_K8S_DIR"), "pki", "knp.token"))
	if err != nil {
		t.Skipf("no static token to try (%v)", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.ApplyAuth(ctx, map[string]string{CredentialToken: strings.TrimSpace(string(token))}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.ListOwned(ctx, testOwner("token")); err != nil {
		t.Fatal(err)
	}
	if _, cfg := p.client(); cfg.BearerToken == "" || cfg.CertFile != "" || len(cfg.CertData) != 0 {
		t.Fatal("the token did not replace the client certificate")
	}
}
