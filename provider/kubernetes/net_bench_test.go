package kubernetes

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
	"github.com/resident-dev/resident/tests"
)

// BenchmarkForward measures sandbox/forward_port on the test cluster
// through the resident in process: a forwarded GET of 64 MB and the setup
// a forwarded connection adds (a GET of 3 bytes, new connection each),
// against the same busybox httpd in the same pod fetched at its pod IP
// from this machine (the node), interleaved, one of each per round. The
// pod is of network "bridge" so that the direct fetch can reach it; the
// forward does not use the pod network. Each benchmark iteration is one
// round; the figures are the medians over the rounds:
//
//	go test -run '^$' -bench Forward -benchtime 5x ./provider/kubernetes/
func BenchmarkForward(b *testing.B) {
	for _, mode := range []string{modeChannel, modeExec} {
		b.Run(mode, func(b *testing.B) { benchForward(b, mode) })
	}
}

func benchForward(b *testing.B, mode string) {
	s := newSession(b, newBenchProvider(b, mode))
	id := s.create(b, protocol.Spec{Network: "bridge"})
	const size = 64 << 20
	setup := fmt.Sprintf("echo ok > ready && echo ok > small && dd if=/dev/urandom of=big bs=1M count=%d 2>/dev/null", size>>20)
	fwd := s.startWebServerAt(b, id, setup, "0.0.0.0:8099", 8099)
	ours := "http://" + fwd.Address
	direct := "http://" + net.JoinHostPort(podIPOf(b, id), "8099")
	if err := tests.FetchLen(direct+"/small", 3); err != nil {
		b.Fatalf("the pod's IP from this machine: %v", err)
	}
	kube := "http://" + kubePortForward(b, id, 8099)
	if err := tests.FetchLen(kube+"/small", 3); err != nil {
		b.Fatalf("the pod through Kubernetes' own port-forward: %v", err)
	}
	var oursBig, directBig, oursSmall, directSmall, kubeBig []time.Duration
	timed := func(into *[]time.Duration, url string, n int64) {
		start := time.Now()
		if err := tests.FetchLen(url, n); err != nil {
			b.Fatal(err)
		}
		*into = append(*into, time.Since(start))
	}
	b.ResetTimer()
	for i := range b.N {
		// Alternate which goes first, so neither always meets a warm or a
		// cold page cache and scheduler.
		first, second := func() { timed(&oursBig, ours+"/big", size) }, func() { timed(&directBig, direct+"/big", size) }
		if i%2 == 1 {
			first, second = second, first
		}
		first()
		second()
		timed(&kubeBig, kube+"/big", size)
		for j := range 20 {
			a, c := func() { timed(&oursSmall, ours+"/small", 3) }, func() { timed(&directSmall, direct+"/small", 3) }
			if j%2 == 1 {
				a, c = c, a
			}
			a()
			c()
		}
	}
	b.StopTimer()
	mb := func(d time.Duration) float64 { return float64(size) / 1e6 / d.Seconds() }
	ob, db := median(oursBig), median(directBig)
	os, ds := median(oursSmall), median(directSmall)
	b.ReportMetric(mb(ob), "fwd-MB/s")
	b.ReportMetric(mb(db), "podip-MB/s")
	b.ReportMetric(mb(ob)/mb(db), "ratio")
	b.ReportMetric(mb(median(kubeBig)), "kube-portforward-MB/s")
	b.ReportMetric(float64(os.Microseconds())/1000, "fwd-setup-ms")
	b.ReportMetric(float64(ds.Microseconds())/1000, "podip-setup-ms")
	b.ReportMetric(float64((os-ds).Microseconds())/1000, "added-ms")
}

// newBenchProvider is newTestProviderMode for a benchmark.
func newBenchProvider(b *testing.B, mode string) *Provider {
	b.Helper()
	if clusterMissing != "" {
		b.Skip(clusterMissing)
	}
	cfg := provider.Config{Options: provider.NewOptions(map[string]string{optPolicies.Name: strconv.FormatBool(cluster.PoliciesEnforced), optExec.Name: mode})}
	restCfg, err := clientcmd.BuildConfigFromFlags("", cluster.Kubeconfig)
	if err != nil {
		b.Fatal(err)
	}
	p, err := newProvider(cfg, restCfg, testNamespace)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Close() })
	return p
}

func podIPOf(t testing.TB, id string) string {
	t.Helper()
	pod, err := admin.CoreV1().Pods(testNamespace).Get(context.Background(), id, metav1.GetOptions{})
	if err != nil || pod.Status.PodIP == "" {
		t.Fatalf("pod IP of %s: %v", id, err)
	}
	return pod.Status.PodIP
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// kubePortForward opens Kubernetes' own port-forward (the pods/portforward
// subresource, as kubectl port-forward does it) to port of pod id on a
// loopback port of this machine, for the bench's third series: what a
// Kubernetes user reaches a pod's port with today.
func kubePortForward(b *testing.B, id string, port int) string {
	b.Helper()
	restCfg, err := clientcmd.BuildConfigFromFlags("", cluster.Kubeconfig)
	if err != nil {
		b.Fatal(err)
	}
	transport, upgrader, err := spdy.RoundTripperFor(restCfg)
	if err != nil {
		b.Fatal(err)
	}
	u := admin.CoreV1().RESTClient().Post().Namespace(testNamespace).Resource("pods").Name(id).SubResource("portforward").URL()
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, u)
	stop, ready := make(chan struct{}), make(chan struct{})
	fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{"0:" + strconv.Itoa(port)}, stop, ready, io.Discard, io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- fw.ForwardPorts() }()
	b.Cleanup(func() { close(stop); <-done })
	select {
	case <-ready:
	case err := <-done:
		b.Fatalf("port-forward: %v", err)
	}
	ports, err := fw.GetPorts()
	if err != nil || len(ports) == 0 {
		b.Fatalf("port-forward ports: %v %v", ports, err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(int(ports[0].Local)))
}
