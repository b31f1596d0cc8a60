package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/resident-dev/resident/internal/keeper/keeperbin"
	residentk8s "github.com/resident-dev/resident/provider/kubernetes"
	"github.com/resident-dev/resident/provider/kubernetes/k8stest"
)

// kubeBench is the Kubernetes provider against client-go driven by hand on
// the same cluster (.ci/k8s-cluster env): create (image on the node) to the
// first exec answered, and exec of `true`, each side by side; exec both
// over the keeper channel (the default) and with --provider-opt exec=exec.
type kubeBench struct {
	b       *bench
	cluster k8stest.Cluster
	cfg     *rest.Config
	cs      kubernetes.Interface
	res     *residentProc // exec over the keeper channel
	resHost *residentProc // the keeper from the node's directory (keeper_host_dir): no init container
	resExec *residentProc // exec=exec: one exec subresource stream per command
	made    []string      // by-hand pods
}

func (b *bench) kubernetes() ([]row, error) {
	cluster, err := k8stest.FromEnv()
	if err != nil {
		return []row{{figure: "kubernetes", ours: "skipped: " + err.Error()}}, nil
	}
	k := &kubeBench{b: b, cluster: cluster}
	if k.cfg, err = clientcmd.BuildConfigFromFlags("", cluster.Kubeconfig); err != nil {
		return nil, err
	}
	if k.cs, err = kubernetes.NewForConfig(k.cfg); err != nil {
		return nil, err
	}
	bin, err := keeperbin.For("amd64")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cluster.ImportKeeper(ctx, residentk8s.KeeperImage(bin.Digest)); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "resident-bench-k8s-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if k.res, err = spawnResident(b.bin, "kubernetes", dir, "--provider-opt", "exec=channel"); err != nil {
		return nil, err
	}
	defer k.res.stop()
	if err := k.res.initialize(b.installID, nil); err != nil {
		return nil, err
	}
	dirExec, err := os.MkdirTemp("", "resident-bench-k8s-exec-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dirExec)
	if k.resExec, err = spawnResident(b.bin, "kubernetes", dirExec, "--provider-opt", "exec=exec"); err != nil {
		return nil, err
	}
	defer k.resExec.stop()
	if err := k.resExec.initialize(b.installID+"-exec", nil); err != nil {
		return nil, err
	}
	keeperDir := filepath.Join(dir, "keepers") // the node is this machine
	if err := cluster.InstallKeeperOnNode(keeperDir); err != nil {
		return nil, err
	}
	dirHost, err := os.MkdirTemp("", "resident-bench-k8s-host-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dirHost)
	if k.resHost, err = spawnResident(b.bin, "kubernetes", dirHost, "--provider-opt", "keeper_host_dir="+keeperDir); err != nil {
		return nil, err
	}
	defer k.resHost.stop()
	if err := k.resHost.initialize(b.installID+"-host", nil); err != nil {
		return nil, err
	}
	defer k.cleanup()
	creates, err := k.createFigures()
	if err != nil {
		return nil, err
	}
	channelRow, err := k.execFigure(k.res, "kubernetes: exec of `true` over the keeper channel", "≤ 0.1x client-go executor",
		func(ours, raw time.Duration) bool { return ours <= raw/10 })
	if err != nil {
		return nil, err
	}
	execRow, err := k.execFigure(k.resExec, "kubernetes: exec of `true`, exec=exec (exec subresource)", "≤ 1.05x client-go + 1 ms",
		func(ours, raw time.Duration) bool { return ours <= raw*105/100+time.Millisecond })
	if err != nil {
		return nil, err
	}
	return append(creates, channelRow, execRow), nil
}

// createFigures: create to the first exec answered, the keeper from its
// image's init container (the default) and from the node's directory,
// interleaved with client-go doing the same by hand.
func (k *kubeBench) createFigures() ([]row, error) {
	type made struct {
		res *residentProc
		id  string
	}
	var ours []made
	defer func() {
		for _, m := range ours {
			_ = m.res.call("sandbox/terminate", map[string]any{"sandbox_id": m.id}, nil)
		}
	}()
	createExec := func(res *residentProc) func() error {
		return func() error {
			id, err := res.createSandbox(map[string]any{"image": k.cluster.Image, "network": "bridge"})
			if err != nil {
				return err
			}
			ours = append(ours, made{res, id})
			return res.exec(id, "true")
		}
	}
	got, err := interleavedN(k.b.scale(8, 2), createExec(k.res), createExec(k.resHost),
		func() error {
			name, err := k.createByHand()
			if err != nil {
				return err
			}
			return k.execByHand(name, "true")
		})
	if err != nil {
		return nil, err
	}
	byHand := got[2]
	var rows []row
	for i, figure := range []string{
		"kubernetes: create (image on the node) → first exec answered (keeper channel, keeper image's init container)",
		"kubernetes: create (image on the node) → first exec answered (keeper channel, keeper_host_dir: no init container)",
	} {
		r := row{figure: figure, ours: medP99(got[i]), raw: medP99(byHand) + " (client-go)", goal: "≤ 1.1x client-go"}
		r.ratio = fmt.Sprintf("%.2fx client-go", ratio(got[i].median(), byHand.median()))
		r.verdict = verdict(ratio(got[i].median(), byHand.median()) <= 1.1)
		rows = append(rows, r)
	}
	return rows, nil
}

func (k *kubeBench) execFigure(res *residentProc, figure, goal string, met func(ours, raw time.Duration) bool) (row, error) {
	id, err := res.createSandbox(map[string]any{"image": k.cluster.Image})
	if err != nil {
		return row{}, err
	}
	defer res.call("sandbox/terminate", map[string]any{"sandbox_id": id}, nil)
	peer, err := k.createByHand()
	if err != nil {
		return row{}, err
	}
	got, err := interleavedN(k.b.scale(60, 6),
		func() error { return res.exec(id, "true") },
		func() error { return k.execByHand(peer, "true") })
	if err != nil {
		return row{}, err
	}
	ours, raw := got[0], got[1]
	r := row{figure: figure, ours: medP99(ours), raw: medP99(raw) + " (client-go executor)", goal: goal}
	r.ratio = fmt.Sprintf("%.2fx client-go, %s", ratio(ours.median(), raw.median()), us(ours.median()-raw.median()))
	r.verdict = verdict(met(ours.median(), raw.median()))
	return r, nil
}

// createByHand is what a host would write with client-go: a pod running
// sleep, watched until it runs.
func (k *kubeBench) createByHand() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "bench-by-hand-", Labels: map[string]string{runLabel: k.b.runID}},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever, TerminationGracePeriodSeconds: new(int64(0)),
			Containers: []corev1.Container{{Name: "main", Image: k.cluster.Image, ImagePullPolicy: corev1.PullIfNotPresent, Command: []string{"sleep", "3600"}}},
		},
	}
	created, err := k.cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	k.made = append(k.made, created.Name)
	w, err := k.cs.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", created.Name).String(), ResourceVersion: created.ResourceVersion})
	if err != nil {
		return "", err
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		if p, ok := ev.Object.(*corev1.Pod); ok && p.Status.Phase == corev1.PodRunning {
			return created.Name, nil
		}
	}
	return "", fmt.Errorf("pod %s did not run", created.Name)
}

func (k *kubeBench) execByHand(pod string, argv ...string) error {
	req := k.cs.CoreV1().RESTClient().Post().Namespace("default").Resource("pods").Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: "main", Command: argv, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	exec, err := remotecommand.NewWebSocketExecutor(k.cfg, http.MethodGet, req.URL().String())
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: io.Discard, Stderr: io.Discard})
}

func (k *kubeBench) cleanup() {
	for _, name := range k.made {
		_ = k.cs.CoreV1().Pods("default").Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))})
	}
}
