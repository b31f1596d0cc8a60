package kubernetes

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// With keeper_host_dir the pod has no init container: it mounts the
// node's directory of this keeper read-only, and the channel create opened
// early is the one the first exec uses. A node without the directory
// fails the create at its bound, transient, and leaves nothing behind.
func TestKeeperFromTheNodesDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "keepers")
	p := newTestProviderWith(t, func(c *provider.Config) {
		c.Options = provider.NewOptions(map[string]string{optPolicies.Name: "true", optKeeperDir.Name: dir})
	})
	if err := cluster.InstallKeeperOnNode(dir); err != nil {
		t.Fatal(err)
	}
	id := createFor(t, p, testOwner("hostdir"), protocol.Spec{Image: cluster.Image, Network: "bridge"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pod, err := admin.CoreV1().Pods(testNamespace).Get(ctx, id, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pod.Spec.InitContainers) != 0 || pod.Spec.Volumes[0].HostPath == nil || !strings.HasPrefix(pod.Spec.Volumes[0].HostPath.Path, dir) {
		t.Fatalf("the pod's keeper: init %d, volume %+v", len(pod.Spec.InitContainers), pod.Spec.Volumes[0])
	}
	held := p.holderOf(id)
	held.mu.Lock()
	early := held.conn
	held.mu.Unlock()
	if early == nil || !early.Sealed() {
		t.Fatal("create did not leave a sealed channel held")
	}
	if out, st, err := run(ctx, p, id, "sh", "-c", "echo hi; ls -l /.resident/keeper"); err != nil || st.Code != 0 || !strings.HasPrefix(out, "hi\n") {
		t.Fatalf("exec: %q %+v %v", out, st, err)
	}
	held.mu.Lock()
	same := held.conn == early
	held.mu.Unlock()
	if !same {
		t.Fatal("the first exec opened another channel")
	}

	missing := newTestProviderWith(t, func(c *provider.Config) {
		c.Options = provider.NewOptions(map[string]string{optPolicies.Name: "true", optKeeperDir.Name: filepath.Join(dir, "nowhere")})
	})
	missing.timing.podStart = 8 * time.Second
	_, err = missing.Create(ctx, protocol.Spec{Image: cluster.Image, Network: "bridge"}, testOwner("hostdir-missing"), nil)
	if protocol.KindOf(err) != protocol.KindTransient || !strings.Contains(err.Error(), "ContainerCreating") {
		t.Fatalf("create on a node without the keeper's directory: %v (kind %s), want transient naming ContainerCreating", err, protocol.KindOf(err))
	}
}
