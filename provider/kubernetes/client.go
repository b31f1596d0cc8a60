package kubernetes

import (
	"context"
	"net/http"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// The provider's own API client: client-go's REST layer over a scheme of
// the two groups it speaks (core/v1, networking/v1, and meta's options and
// Status), not k8s.io/client-go/kubernetes. That package's scheme
// registers every API group of Kubernetes at package initialisation, in
// every resident whatever its provider: milliseconds of start-up and some
// 15 MB of idle RSS (docs/performance.md, "A lean Kubernetes client").
// deps_test.go keeps it out of the binary.
//
// The typed layer keeps client-go's shape (CoreV1().Pods(ns).Create...),
// its requests (protobuf preferred, JSON accepted, as client-gen's
// clients for built-in types), and its errors: a refusal decodes into a
// *StatusError that apierrors reads, and kindOf with it.

// apiScheme is the scheme, its codecs and its parameter codec, built on
// first use: a resident on another provider pays nothing for it.
var apiScheme = sync.OnceValue(func() *schemeCodecs {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, networkingv1.AddToScheme} {
		if err := add(s); err != nil {
			panic("kubernetes scheme: " + err.Error()) // generated registrations: our bug only
		}
	}
	// Status, WatchEvent and the options, unversioned (as client-go's
	// kubernetes/scheme has them).
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return &schemeCodecs{
		codecs: rest.CodecFactoryForGeneratedClient(s, serializer.NewCodecFactory(s)).WithoutConversion(),
		params: runtime.NewParameterCodec(s),
	}
})

type schemeCodecs struct {
	codecs runtime.NegotiatedSerializer
	params runtime.ParameterCodec
}

// parameterCodec encodes the options of a request (VersionedParams) into
// its query.
func parameterCodec() runtime.ParameterCodec { return apiScheme().params }

// apiClient is the API server, by group: what useConfig builds for a
// config and client hands out.
type apiClient struct {
	core       *rest.RESTClient
	networking *rest.RESTClient
}

// newAPIClient is a client of cfg's cluster: one HTTP client and one rate
// limiter (cfg's QPS and Burst) shared by both groups, as
// kubernetes.NewForConfig has them.
func newAPIClient(cfg *rest.Config) (*apiClient, error) {
	cfg = rest.CopyConfig(cfg)
	if cfg.UserAgent == "" {
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	if cfg.RateLimiter == nil && cfg.QPS > 0 {
		cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(cfg.QPS, cfg.Burst)
	}
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	core, err := groupClient(cfg, httpClient, "/api", corev1.SchemeGroupVersion)
	if err != nil {
		return nil, err
	}
	networking, err := groupClient(cfg, httpClient, "/apis", networkingv1.SchemeGroupVersion)
	if err != nil {
		return nil, err
	}
	return &apiClient{core: core, networking: networking}, nil
}

func groupClient(cfg *rest.Config, httpClient *http.Client, apiPath string, gv schema.GroupVersion) (*rest.RESTClient, error) {
	c := *cfg
	c.APIPath, c.GroupVersion = apiPath, &gv
	c.NegotiatedSerializer = apiScheme().codecs
	return rest.RESTClientForConfigAndClient(&c, httpClient)
}

// CoreV1 is the core group.
func (c *apiClient) CoreV1() coreV1 { return coreV1{c.core} }

// NetworkingV1 is networking.k8s.io/v1.
func (c *apiClient) NetworkingV1() networkingV1 { return networkingV1{c.networking} }

type coreV1 struct{ rc *rest.RESTClient }

// RESTClient builds requests client-go has no typed call for (the exec
// and attach subresources).
func (g coreV1) RESTClient() rest.Interface { return g.rc }

func (g coreV1) Pods(namespace string) objects[*corev1.Pod, *corev1.PodList] {
	return objects[*corev1.Pod, *corev1.PodList]{g.rc, namespace, "pods", newOf[corev1.Pod], newOf[corev1.PodList]}
}

func (g coreV1) PersistentVolumeClaims(namespace string) objects[*corev1.PersistentVolumeClaim, *corev1.PersistentVolumeClaimList] {
	return objects[*corev1.PersistentVolumeClaim, *corev1.PersistentVolumeClaimList]{g.rc, namespace, "persistentvolumeclaims",
		newOf[corev1.PersistentVolumeClaim], newOf[corev1.PersistentVolumeClaimList]}
}

// Namespaces is cluster-scoped: its namespace is empty.
func (g coreV1) Namespaces() objects[*corev1.Namespace, *corev1.NamespaceList] {
	return objects[*corev1.Namespace, *corev1.NamespaceList]{g.rc, "", "namespaces", newOf[corev1.Namespace], newOf[corev1.NamespaceList]}
}

type networkingV1 struct{ rc *rest.RESTClient }

func (g networkingV1) NetworkPolicies(namespace string) objects[*networkingv1.NetworkPolicy, *networkingv1.NetworkPolicyList] {
	return objects[*networkingv1.NetworkPolicy, *networkingv1.NetworkPolicyList]{g.rc, namespace, "networkpolicies",
		newOf[networkingv1.NetworkPolicy], newOf[networkingv1.NetworkPolicyList]}
}

func newOf[T any]() *T { return new(T) }

// objects is one kind of object in one namespace ("" for a
// cluster-scoped kind): client-gen's calls, for the kinds above only.
type objects[T, L runtime.Object] struct {
	rc        rest.Interface
	namespace string
	name      string // the resource's plural, as in the URL
	newObj    func() T
	newList   func() L
}

func (r objects[T, L]) req(verb string) *rest.Request {
	return r.rc.Verb(verb).UseProtobufAsDefault().NamespaceIfScoped(r.namespace, r.namespace != "").Resource(r.name)
}

// Get reads the object called name.
func (r objects[T, L]) Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error) {
	out := r.newObj()
	err := r.req(http.MethodGet).Name(name).VersionedParams(&opts, parameterCodec()).Do(ctx).Into(out)
	return out, err
}

// List reads the objects opts select.
func (r objects[T, L]) List(ctx context.Context, opts metav1.ListOptions) (L, error) {
	out := r.newList()
	err := r.req(http.MethodGet).VersionedParams(&opts, parameterCodec()).Timeout(timeoutOf(opts)).Do(ctx).Into(out)
	return out, err
}

// Watch follows the objects opts select, from opts.ResourceVersion.
func (r objects[T, L]) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	return r.req(http.MethodGet).VersionedParams(&opts, parameterCodec()).Timeout(timeoutOf(opts)).Watch(ctx)
}

// Create makes obj and returns it as the API server stored it.
func (r objects[T, L]) Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error) {
	out := r.newObj()
	err := r.req(http.MethodPost).VersionedParams(&opts, parameterCodec()).Body(obj).Do(ctx).Into(out)
	return out, err
}

// Delete deletes the object called name.
func (r objects[T, L]) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	return r.req(http.MethodDelete).Name(name).Body(&opts).Do(ctx).Error()
}

// Patch applies data, a patch of type pt, to the object called name.
func (r objects[T, L]) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions) (T, error) {
	out := r.newObj()
	err := r.rc.Patch(pt).UseProtobufAsDefault().NamespaceIfScoped(r.namespace, r.namespace != "").Resource(r.name).Name(name).
		VersionedParams(&opts, parameterCodec()).Body(data).Do(ctx).Into(out)
	return out, err
}

// timeoutOf is a list's or a watch's server-side bound as the request's
// own, as client-gen's clients set it.
func timeoutOf(opts metav1.ListOptions) time.Duration {
	if opts.TimeoutSeconds == nil {
		return 0
	}
	return time.Duration(*opts.TimeoutSeconds) * time.Second
}
