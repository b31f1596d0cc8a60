package kubernetes

import (
	"context"
	"encoding/json"
	"path"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
	"github.com/resident-dev/resident/provider/providertest"
)

// TestConformance runs the provider contract's suite on the real cluster,
// with execs over the keeper channel (the default).
func TestConformance(t *testing.T) { conformance(t, modeChannel) }

// TestConformanceExecSubresource runs it with one exec subresource stream
// per command (--provider-opt exec=exec), the fallback.
func TestConformanceExecSubresource(t *testing.T) { conformance(t, modeExec) }

func conformance(t *testing.T, mode string) {
	needCluster(t)
	providertest.Run(t, providertest.Harness{
		New:   func(t *testing.T) provider.Provider { return newTestProviderMode(t, mode, nil) },
		Image: cluster.Image,
		NewWith: func(t *testing.T, adjust func(*provider.Config)) provider.Provider {
			return newTestProviderMode(t, mode, adjust)
		},
		Volume: func(t *testing.T, owner provider.Owner, name string, files map[string]string) {
			seedVolume(t, newTestProvider(t), owner, name, files)
		},
		ForeignVolume: func(t *testing.T, name string, files map[string]string) {
			createForeignClaim(t, name)
			p := newTestProviderWith(t, func(c *provider.Config) {
				c.AllowVolumes = append(c.AllowVolumes, provider.VolumeGrant{Name: name, Writable: true})
			})
			seedVolume(t, p, provider.Owner{Key: providertest.OwnerKey, InstallID: "seeder-" + name}, name, files)
		},
		Plant: func(t *testing.T, tags map[string]string) string {
			return plantSandbox(t, newTestProviderMode(t, mode, nil), tags)
		},
		Isolated: true,
	})
}

// plantSandbox makes a running sandbox pod whose host-visible tags are
// exactly tags, past Create's checks (as another tool might), removed at
// the test's end.
func plantSandbox(t *testing.T, p *Provider, tags map[string]string) string {
	t.Helper()
	id := newID()
	labels := baseLabels(RoleSandbox)
	keys := []string{}
	for k, v := range tags {
		labels[k] = v
		keys = append(keys, k)
	}
	slices.Sort(keys)
	keyList, _ := json.Marshal(keys)
	labels[LabelLifetime], labels[LabelSandbox] = "0", id
	pod, err := p.sandboxPod(id, protocol.Spec{Image: cluster.Image}, labels, string(keyList), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	created, err := admin.CoreV1().Pods(testNamespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.removeLeftoverPod(id) })
	early, err := p.awaitRunning(ctx, created)
	if err != nil {
		t.Fatal(err)
	}
	if conn, _ := early.finish(); conn != nil {
		_ = conn.Close() // the test's calls open their own
	}
	return id
}

// seedVolume fills a volume through a sandbox that mounts it, as a
// sandbox/create of owner would have made it.
func seedVolume(t *testing.T, p *Provider, owner provider.Owner, name string, files map[string]string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	id, err := p.Create(ctx, protocol.Spec{Image: cluster.Image, Volumes: []protocol.VolumeMount{{Name: name, Path: "/seed"}}}, owner, nil)
	if err != nil {
		t.Fatalf("seed %s: %v", name, err)
	}
	defer p.Terminate(context.Background(), id)
	for file, content := range files {
		if err := p.WriteFile(ctx, id, path.Join("/seed", file), []byte(content), nil); err != nil {
			t.Fatalf("seed %s/%s: %v", name, file, err)
		}
	}
}

// createForeignClaim makes a claim the resident did not make, as an
// operator would, removed at the test's end.
func createForeignClaim(t *testing.T, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"test.resident/foreign": "true"}},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if _, err := admin.CoreV1().PersistentVolumeClaims(testNamespace).Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = admin.CoreV1().PersistentVolumeClaims(testNamespace).Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}
