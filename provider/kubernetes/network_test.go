package kubernetes

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// A bridge sandbox reaches a peer pod; a none sandbox (its deny-all
// NetworkPolicy enforced by the cluster's plugin) reaches nothing, not even
// that peer. Only the pods this test made are ever contacted.
func TestNetworkPolicyIsolation(t *testing.T) {
	p := newTestProvider(t)
	owner := provider.Owner{Key: "resident-install-id", InstallID: "net-" + strings.TrimPrefix(newID(), idPrefix)}
	peer := createFor(t, p, owner, protocol.Spec{Image: cluster.Image, Network: "bridge"})
	server := startIn(t, p, peer, "sh", "-c", "mkdir -p /tmp/www && echo peer-answers > /tmp/www/index.html && exec httpd -f -p 8080 -h /tmp/www")
	defer server()
	peerIP := podIP(t, peer)

	bridge := createFor(t, p, owner, protocol.Spec{Image: cluster.Image, Network: "bridge"})
	if out := fetch(t, p, bridge, peerIP); !strings.Contains(out, "peer-answers") {
		t.Fatalf("a bridge sandbox did not reach its peer: %q", out)
	}
	if !cluster.PoliciesEnforced {
		t.Skip("NetworkPolicy is not enforced on this cluster (.ci/k8s-cluster: the kernel has neither the nftables queue statement nor iptables' NFQUEUE target, one of which kube-network-policies needs); the none half is not provable here")
	}
	none := createFor(t, p, owner, protocol.Spec{Image: cluster.Image})
	if out := fetch(t, p, none, peerIP); strings.Contains(out, "peer-answers") {
		t.Fatalf("a none sandbox reached a peer pod: %q", out)
	}
	// Nor does anything reach it: its policy denies ingress too.
	noneServer := startIn(t, p, none, "sh", "-c", "mkdir -p /tmp/www && echo none-answers > /tmp/www/index.html && exec httpd -f -p 8080 -h /tmp/www")
	defer noneServer()
	if out := fetch(t, p, bridge, podIP(t, none)); strings.Contains(out, "none-answers") {
		t.Fatalf("a bridge sandbox reached a none sandbox: %q", out)
	}
}

func createFor(t *testing.T, p *Provider, owner provider.Owner, spec protocol.Spec) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	id, err := p.Create(ctx, spec, owner, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = p.Terminate(context.Background(), id) })
	return id
}

// startIn runs a long command and returns its stop.
func startIn(t *testing.T, p *Provider, id string, argv ...string) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	proc, err := p.Exec(ctx, id, provider.ExecRequest{Argv: argv})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	go drain(proc)
	return func() { cancel(); _, _ = proc.Wait() }
}

// fetch asks the peer for its page from sandbox id; busybox wget's own
// timeout crashes, so the exec's deadline bounds it.
func fetch(t *testing.T, p *Provider, id, ip string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, _, err := run(ctx, p, id, "wget", "-q", "-O", "-", "http://"+ip+":8080/")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func podIP(t *testing.T, id string) string {
	t.Helper()
	pod, err := admin.CoreV1().Pods(testNamespace).Get(context.Background(), id, metav1.GetOptions{})
	if err != nil || pod.Status.PodIP == "" {
		t.Fatalf("pod IP of %s: %v", id, err)
	}
	return pod.Status.PodIP
}
