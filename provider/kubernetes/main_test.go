package kubernetes

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/resident-dev/resident/internal/keeper/keeperbin"
	"github.com/resident-dev/resident/provider"
	"github.com/resident-dev/resident/provider/kubernetes/k8stest"
)

// clusterMissing is why the cluster tests cannot run ("" when they can):
// a skip locally, a failure under CI=true.
var (
	clusterMissing string
	cluster        k8stest.Cluster
	admin          kubernetes.Interface
)

// testNamespace holds every object the tests make. RESIDENT_K8S_TEST_NAMESPACE
// gives two test runs on one cluster a namespace each (made when missing):
// the leftover checks are per namespace.
var testNamespace = cmp.Or(os.Getenv("RESIDENT_K8S_TEST_NAMESPACE"), "default")

func TestMain(m *testing.M) { os.Exit(runMain(m)) }

func runMain(m *testing.M) int {
	var err error
	cluster, err = k8stest.FromEnv()
	if err == nil {
		admin, err = adminClient()
	}
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err = admin.CoreV1().Namespaces().Get(ctx, testNamespace, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNamespace}}, metav1.CreateOptions{})
		}
		cancel()
	}
	if err != nil {
		clusterMissing = fmt.Sprintf("kubernetes tests skipped: no cluster answers (%v)", err)
		fmt.Fprintln(os.Stderr, clusterMissing)
		if k8stest.Required() {
			fmt.Fprintln(os.Stderr, "CI=true: a missing cluster is a failure, not a skip")
			return 1
		}
		return m.Run()
	}
	bin, err := keeperbin.For("amd64")
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err = cluster.ImportKeeper(ctx, KeeperImage(bin.Digest))
		cancel()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubernetes test setup:", err)
		return 1
	}
	started := time.Now().Add(-time.Second)
	code := m.Run()
	removeTestClaims(started)
	if left := leftovers(); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "kubernetes tests left objects behind: %v\n", left)
		code = 1
	}
	if code == 0 {
		// client-go keeps, per process, a cert-rotation worker for client
		// certificates read from files, and idle keep-alive connections.
		if err := goleak.Find(goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"),
			goleak.IgnoreAnyFunction("k8s.io/client-go/transport.(*dynamicClientCert).processNextWorkItem"),
			goleak.IgnoreAnyFunction("k8s.io/client-go/transport.(*dynamicClientCert).run"),
			goleak.IgnoreAnyFunction("k8s.io/apimachinery/pkg/util/wait.PollImmediateUntil"),
			goleak.IgnoreAnyFunction("k8s.io/apimachinery/pkg/util/wait.PollImmediateUntilWithContext.poller.func1.1"),
			goleak.IgnoreAnyFunction("k8s.io/client-go/util/workqueue.(*delayingType[...]).waitingLoop"),
			goleak.IgnoreAnyFunction("k8s.io/client-go/util/workqueue.(*Typed[...]).updateUnfinishedWorkLoop"),
			// A WebSocket exec's pinger ends at its next ping after the
			// connection closed (client-go), seconds later.
			goleak.IgnoreTopFunction("k8s.io/client-go/tools/remotecommand.(*heartbeat).start"),
			goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
			goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
			goleak.IgnoreAnyFunction("golang.org/x/net/http2.(*ClientConn).readLoop")); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	return code
}

func adminClient() (kubernetes.Interface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", cluster.Kubeconfig)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

// needCluster skips a test (one line) when no cluster answers.
func needCluster(t *testing.T) {
	t.Helper()
	if clusterMissing != "" {
		t.Skip(clusterMissing)
	}
}

// newTestProvider is a provider on the test cluster, closed at the end.
func newTestProvider(t *testing.T) *Provider {
	t.Helper()
	return newTestProviderWith(t, nil)
}

func newTestProviderWith(t *testing.T, adjust func(*provider.Config)) *Provider {
	t.Helper()
	return newTestProviderMode(t, modeChannel, adjust)
}

// newTestProviderMode is a provider whose execs reach the keeper the way
// mode says (--provider-opt exec).
func newTestProviderMode(t *testing.T, mode string, adjust func(*provider.Config)) *Provider {
	t.Helper()
	needCluster(t)
	// The cluster says whether its plugin enforces policies; the provider
	// announces network_control accordingly.
	cfg := provider.Config{Options: provider.NewOptions(map[string]string{optPolicies.Name: strconv.FormatBool(cluster.PoliciesEnforced), optExec.Name: mode})}
	if adjust != nil {
		adjust(&cfg)
	}
	restCfg, err := clientcmd.BuildConfigFromFlags("", cluster.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	p, err := newProvider(cfg, restCfg, testNamespace)
	if err != nil {
		t.Fatal(err)
	}
	// The product's own create bound: CI once saw a pod stay Pending past
	// 60 s while every package's tests shared the two cores.
	p.timing.podStart = 120 * time.Second
	t.Cleanup(func() { p.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.ApplyAuth(ctx, nil); err != nil {
		t.Fatal(err)
	}
	return p
}

// leftovers lists the managed objects still in the namespace that are
// not on their way out.
func leftovers() []string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var left []string
	// Deletions in flight (grace period, garbage collection, a kubelet
	// reconnecting after a fault test) settle first, for a minute at most.
	for range 300 {
		left = left[:0]
		pods, err := admin.CoreV1().Pods(testNamespace).List(ctx, metav1.ListOptions{LabelSelector: LabelManaged + "=true"})
		if err != nil {
			return []string{err.Error()}
		}
		for _, p := range pods.Items {
			left = append(left, "pod/"+p.Name)
		}
		pols, err := admin.NetworkingV1().NetworkPolicies(testNamespace).List(ctx, metav1.ListOptions{LabelSelector: LabelManaged + "=true"})
		if err != nil {
			return []string{err.Error()}
		}
		for _, p := range pols.Items {
			left = append(left, "networkpolicy/"+p.Name)
		}
		if len(left) == 0 {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return left
}

// removeTestClaims deletes the store claims the run made (those created
// since it started): volumes outlive sandboxes by design, so no test's
// cleanup removes them.
func removeTestClaims(since time.Time) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := admin.CoreV1().PersistentVolumeClaims(testNamespace).List(ctx, metav1.ListOptions{LabelSelector: roleSelector(RoleStore)})
	if err != nil {
		return
	}
	for _, c := range list.Items {
		if !c.CreationTimestamp.Time.Before(since.Truncate(time.Second)) {
			_ = admin.CoreV1().PersistentVolumeClaims(testNamespace).Delete(ctx, c.Name, metav1.DeleteOptions{})
		}
	}
}
