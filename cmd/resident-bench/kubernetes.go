package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
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
// first exec answered, and exec of `true`, each side by side.
type kubeBench struct {
	b       *bench
	cluster k8stest.Cluster
	cfg     *rest.Config
	cs      kubernetes.Interface
	res     *residentProc
	made    []string // by-hand pods
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
	if k.res, err = spawnResident(b.bin, "kubernetes", dir); err != nil {
		return nil, err
	}
	defer k.res.stop()
	if err := k.res.initialize(b.installID, nil); err != nil {
		return nil, err
	}
	defer k.cleanup()
	create, err := k.createFigure()
	if err != nil {
		return nil, err
	}
	execRow, err := k.execFigure()
	if err != nil {
		return nil, err
	}
	return []row{create, execRow}, nil
}

func (k *kubeBench) createFigure() (row, error) {
	var ours []string
	defer func() {
		for _, id := range ours {
			_ = k.res.call("sandbox/terminate", map[string]any{"sandbox_id": id}, nil)
		}
	}()
	resident, byHand, err := interleaved(k.b.scale(8, 2),
		func() error {
			id, err := k.res.createSandbox(map[string]any{"image": k.cluster.Image, "network": "bridge"})
			if err != nil {
				return err
			}
			ours = append(ours, id)
			return k.res.exec(id, "true")
		},
		func() error {
			name, err := k.createByHand()
			if err != nil {
				return err
			}
			return k.execByHand(name, "true")
		})
	if err != nil {
		return row{}, err
	}
	r := row{figure: "kubernetes: create (image on the node) → first exec answered", ours: medP99(resident), raw: medP99(byHand) + " (client-go)", goal: "≤ 1.1x client-go"}
	r.ratio = fmt.Sprintf("%.2fx client-go", ratio(resident.median(), byHand.median()))
	r.verdict = verdict(ratio(resident.median(), byHand.median()) <= 1.1)
	return r, nil
}

func (k *kubeBench) execFigure() (row, error) {
	id, err := k.res.createSandbox(map[string]any{"image": k.cluster.Image})
	if err != nil {
		return row{}, err
	}
	defer k.res.call("sandbox/terminate", map[string]any{"sandbox_id": id}, nil)
	peer, err := k.createByHand()
	if err != nil {
		return row{}, err
	}
	got, err := interleavedN(k.b.scale(60, 6),
		func() error { return k.res.exec(id, "true") },
		func() error { return k.execByHand(peer, "true") })
	if err != nil {
		return row{}, err
	}
	ours, raw := got[0], got[1]
	r := row{figure: "kubernetes: exec of `true`", ours: medP99(ours), raw: medP99(raw) + " (client-go executor)", goal: "≤ 1.05x client-go + 1 ms"}
	r.ratio = fmt.Sprintf("%.2fx client-go, %s", ratio(ours.median(), raw.median()), us(ours.median()-raw.median()))
	r.verdict = verdict(ours.median() <= raw.median()*105/100+time.Millisecond)
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
