// Package kube is the live Kubernetes backend of evidence.Kubernetes, over
// client-go: from a kubeconfig (path and context) or in-cluster config.
package kube

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/rootcause/rootcause/agent/evidence"
)

const (
	// PageSize is the page size of list calls.
	PageSize = 500
	// MaxItems bounds one list: larger clusters are cut (with an error-free,
	// sorted partial answer) rather than exhaust memory.
	MaxItems = 20000
	// MaxLogBytes bounds the bytes read from one container's log.
	MaxLogBytes = 64 << 20
	// DefaultTimeout bounds one API request when Config.Timeout is 0.
	DefaultTimeout = 30 * time.Second
)

// Config selects a cluster.
type Config struct {
	Kubeconfig string // path; empty: the default loading rules ($KUBECONFIG, ~/.kube/config)
	Context    string // kubeconfig context; empty: the current one
	InCluster  bool   // use the pod's service account
	Timeout    time.Duration
	// REST, if set, is used as is (tests).
	REST *rest.Config
}

// Client implements evidence.Kubernetes.
type Client struct {
	cs kubernetes.Interface
}

var _ evidence.Kubernetes = (*Client)(nil)

// New builds a client; it does not contact the cluster.
func New(cfg Config) (*Client, error) {
	rc := cfg.REST
	if rc == nil {
		var err error
		if cfg.InCluster {
			rc, err = rest.InClusterConfig()
		} else {
			rules := clientcmd.NewDefaultClientConfigLoadingRules()
			if cfg.Kubeconfig != "" {
				rules.ExplicitPath = cfg.Kubeconfig
			}
			rc, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
				&clientcmd.ConfigOverrides{CurrentContext: cfg.Context}).ClientConfig()
		}
		if err != nil {
			return nil, evidence.Errorf("kubernetes", evidence.CodeNotConfigured, "kubernetes client configuration: %v", err)
		}
	}
	rc = rest.CopyConfig(rc)
	if rc.Timeout == 0 {
		rc.Timeout = cfg.Timeout
		if rc.Timeout <= 0 {
			rc.Timeout = DefaultTimeout
		}
	}
	if rc.QPS == 0 {
		rc.QPS, rc.Burst = 50, 100 // an investigation bursts list calls
	}
	if rc.UserAgent == "" {
		rc.UserAgent = "rootcause"
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, evidence.Errorf("kubernetes", evidence.CodeInvalid, "kubernetes client: %v", err)
	}
	return &Client{cs: cs}, nil
}

// NewFromInterface wraps an existing clientset.
func NewFromInterface(cs kubernetes.Interface) *Client { return &Client{cs: cs} }

// mapErr types API and transport errors.
func mapErr(err error, what string) error {
	if err == nil {
		return nil
	}
	var ee *evidence.Error
	if errors.As(err, &ee) {
		return err
	}
	switch {
	case apierrors.IsNotFound(err):
		return &evidence.Error{Source: "kubernetes", Code: evidence.CodeNotFound, Err: fmt.Errorf("%s: %w", what, err)}
	case apierrors.IsBadRequest(err), apierrors.IsInvalid(err):
		return &evidence.Error{Source: "kubernetes", Code: evidence.CodeInvalid, Err: fmt.Errorf("%s: %w", what, err)}
	case apierrors.IsForbidden(err), apierrors.IsUnauthorized(err):
		return &evidence.Error{Source: "kubernetes", Code: evidence.CodeUnavailable, Err: fmt.Errorf("%s: access denied: %w", what, err)}
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) || apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsInternalError(err) || apierrors.IsTooManyRequests(err) {
		return &evidence.Error{Source: "kubernetes", Code: evidence.CodeUnavailable, Err: fmt.Errorf("%s: %w", what, err)}
	}
	return &evidence.Error{Source: "kubernetes", Code: evidence.CodeUnavailable, Err: fmt.Errorf("%s: %w", what, err)}
}

// listAll pages through a list call.
func listAll[T any](ctx context.Context, what string, opts metav1.ListOptions, call func(context.Context, metav1.ListOptions) ([]T, string, error)) ([]T, error) {
	opts.Limit = PageSize
	var out []T
	for {
		items, cont, err := call(ctx, opts)
		if err != nil {
			return nil, mapErr(err, what)
		}
		out = append(out, items...)
		if cont == "" || len(out) >= MaxItems {
			break
		}
		opts.Continue = cont
	}
	if len(out) > MaxItems {
		out = out[:MaxItems]
	}
	return out, nil
}

// Namespaces lists namespace names.
func (c *Client) Namespaces(ctx context.Context) ([]string, error) {
	items, err := listAll(ctx, "listing namespaces", metav1.ListOptions{}, func(ctx context.Context, o metav1.ListOptions) ([]corev1.Namespace, string, error) {
		l, err := c.cs.CoreV1().Namespaces().List(ctx, o)
		if err != nil {
			return nil, "", err
		}
		return l.Items, l.Continue, nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(items))
	for _, n := range items {
		out = append(out, n.Name)
	}
	slices.Sort(out)
	return out, nil
}

// apiFallbacks are older API versions tried when a cluster does not serve
// a kind's current one (clusters before Kubernetes 1.21 to 1.25).
var apiFallbacks = map[string][]string{
	"HorizontalPodAutoscaler": {"autoscaling/v1"},
	"CronJob":                 {"batch/v1beta1"},
	"PodDisruptionBudget":     {"policy/v1beta1"},
	"EndpointSlice":           {"discovery.k8s.io/v1beta1"},
}

// Objects lists one kind through the API server's JSON list answers,
// decoded by the same decoder as bundle files. A kind the cluster does not
// serve is an empty list. Secrets are decoded without their values: the
// decoder skips them as it reads the answer, and nothing keeps them.
func (c *Client) Objects(ctx context.Context, kind, namespace, labelSelector string) ([]evidence.KubeObject, error) {
	ki, ok := evidence.LookupKind(kind)
	if !ok {
		return nil, evidence.Errorf("kubernetes", evidence.CodeInvalid, "unknown kind %q (kinds read: %s)", kind, strings.Join(evidence.KindNames(), ", "))
	}
	if _, err := labels.Parse(labelSelector); err != nil {
		return nil, evidence.Errorf("kubernetes", evidence.CodeInvalid, "label selector %q: %v", labelSelector, err)
	}
	if !ki.Namespaced {
		namespace = ""
	}
	versions := append([]string{ki.APIVersion()}, apiFallbacks[ki.Kind]...)
	out := []evidence.KubeObject{}
	for i, gv := range versions {
		objs, err := c.list(ctx, ki, gv, namespace, labelSelector)
		if apierrors.IsNotFound(err) {
			if i < len(versions)-1 {
				continue
			}
			break // not served: nothing of that kind
		}
		if err != nil {
			return nil, mapErr(err, "listing "+ki.Resource)
		}
		out = append(out, objs...)
		break
	}
	slices.SortStableFunc(out, func(a, b evidence.KubeObject) int {
		return cmp.Or(cmp.Compare(a.GetNamespace(), b.GetNamespace()), cmp.Compare(a.GetName(), b.GetName()))
	})
	return out, nil
}

// list pages through one list call of group/version gv.
func (c *Client) list(ctx context.Context, ki evidence.KindInfo, gv, namespace, labelSelector string) ([]evidence.KubeObject, error) {
	p := "/api/" + gv
	if strings.Contains(gv, "/") {
		p = "/apis/" + gv
	}
	if namespace != "" {
		p += "/namespaces/" + namespace
	}
	p += "/" + ki.Resource
	var out []evidence.KubeObject
	cont := ""
	for {
		req := c.cs.CoreV1().RESTClient().Get().AbsPath(p).Param("limit", strconv.Itoa(PageSize)).SetHeader("Accept", "application/json")
		if labelSelector != "" {
			req = req.Param("labelSelector", labelSelector)
		}
		if cont != "" {
			req = req.Param("continue", cont)
		}
		data, err := req.DoRaw(ctx)
		if err != nil {
			return nil, err
		}
		err = evidence.DecodeKubeFile(p, data, ki.Kind, func(it evidence.KubeItem) {
			if it.Object != nil && it.Kind == ki.Kind {
				out = append(out, it.Object)
			}
		})
		if err != nil {
			return nil, evidence.Errorf("kubernetes", evidence.CodeMalformed, "listing %s: %v", ki.Resource, err)
		}
		var meta struct {
			Metadata struct {
				Continue string `json:"continue"`
			} `json:"metadata"`
		}
		_ = json.Unmarshal(data, &meta)
		cont = meta.Metadata.Continue
		if cont == "" || len(out) >= MaxItems {
			break
		}
	}
	if len(out) > MaxItems {
		out = out[:MaxItems]
	}
	return out, nil
}

// Pods lists pods.
func (c *Client) Pods(ctx context.Context, namespace, labelSelector string) ([]corev1.Pod, error) {
	return evidence.List[corev1.Pod](ctx, c, namespace, labelSelector)
}

// Events lists core/v1 events, normalised and in timeline order.
func (c *Client) Events(ctx context.Context, namespace string) ([]corev1.Event, error) {
	out, err := evidence.List[corev1.Event](ctx, c, namespace, "")
	evidence.SortEvents(out)
	return out, err
}

// Deployments lists deployments.
func (c *Client) Deployments(ctx context.Context, namespace string) ([]appsv1.Deployment, error) {
	return evidence.List[appsv1.Deployment](ctx, c, namespace, "")
}

// ReplicaSets lists replica sets.
func (c *Client) ReplicaSets(ctx context.Context, namespace string) ([]appsv1.ReplicaSet, error) {
	return evidence.List[appsv1.ReplicaSet](ctx, c, namespace, "")
}

// DaemonSets lists daemon sets.
func (c *Client) DaemonSets(ctx context.Context, namespace string) ([]appsv1.DaemonSet, error) {
	return evidence.List[appsv1.DaemonSet](ctx, c, namespace, "")
}

// Services lists services.
func (c *Client) Services(ctx context.Context, namespace string) ([]corev1.Service, error) {
	return evidence.List[corev1.Service](ctx, c, namespace, "")
}

// Endpoints lists endpoints as the cluster publishes them.
func (c *Client) Endpoints(ctx context.Context, namespace string) ([]corev1.Endpoints, error) {
	return evidence.List[corev1.Endpoints](ctx, c, namespace, "")
}

// Nodes lists nodes.
func (c *Client) Nodes(ctx context.Context) ([]corev1.Node, error) {
	return evidence.List[corev1.Node](ctx, c, "", "")
}

// PodLogs streams the logs of one or all containers of a pod through the
// same filter as the bundle backend. SinceTime is passed to the API server
// to cut the transfer; the window is then applied to the lines' own
// timestamps, like on a bundle.
func (c *Client) PodLogs(ctx context.Context, q evidence.PodLogQuery) (*evidence.LogResult, error) {
	if q.Namespace == "" || q.Pod == "" {
		return nil, evidence.Errorf("kubernetes", evidence.CodeInvalid, "pod logs need a namespace and a pod")
	}
	col, err := evidence.NewPodLogCollector("kubernetes", q, time.Now())
	if err != nil {
		return nil, err
	}
	pod, err := c.cs.CoreV1().Pods(q.Namespace).Get(ctx, q.Pod, metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil, evidence.Errorf("kubernetes", evidence.CodeNotFound, "pod %s/%s not found", q.Namespace, q.Pod)
		}
		return nil, mapErr(err, "reading pod "+q.Namespace+"/"+q.Pod)
	}
	var containers []string
	for _, ct := range pod.Spec.InitContainers {
		containers = append(containers, ct.Name)
	}
	for _, ct := range pod.Spec.Containers {
		containers = append(containers, ct.Name)
	}
	want := containers
	if q.Container != "" {
		if !slices.Contains(containers, q.Container) {
			return nil, evidence.Errorf("kubernetes", evidence.CodeNotFound, "container %q not found in pod %s/%s (containers: %s)",
				q.Container, q.Namespace, q.Pod, strings.Join(containers, ", "))
		}
		want = []string{q.Container}
	}
	found := 0
	for _, ct := range want {
		opts := &corev1.PodLogOptions{Container: ct, Previous: q.Previous, LimitBytes: ptr(int64(MaxLogBytes))}
		if !q.Since.IsZero() {
			// kubelet timestamps can trail the application's: leave a margin
			st := metav1.NewTime(q.Since.Add(-time.Minute))
			opts.SinceTime = &st
		}
		rc, err := c.cs.CoreV1().Pods(q.Namespace).GetLogs(q.Pod, opts).Stream(ctx)
		if err != nil {
			// no previous instance, or a container that never started
			if apierrors.IsBadRequest(err) || apierrors.IsNotFound(err) {
				continue
			}
			return nil, mapErr(err, "reading logs of "+q.Namespace+"/"+q.Pod+"/"+ct)
		}
		found++
		col.StartStream()
		err = scan(ctx, rc, q.Pod+"/"+ct, col)
		rc.Close()
		if err != nil {
			return nil, mapErr(err, "reading logs of "+q.Namespace+"/"+q.Pod+"/"+ct)
		}
	}
	if found == 0 && q.Previous {
		return nil, evidence.Errorf("kubernetes", evidence.CodeNotFound, "no previous terminated container logs for pod %s/%s", q.Namespace, q.Pod)
	}
	return col.Result(), nil
}

func scan(ctx context.Context, r io.Reader, source string, col *evidence.PodLogCollector) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var long []byte
	for n := 0; ; n++ {
		if n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			long = append(long[:0], line...)
			for err == bufio.ErrBufferFull {
				line, err = br.ReadSlice('\n')
				if room := evidence.MaxPodLogLine - len(long); room > 0 {
					long = append(long, line[:min(room, len(line))]...)
				}
			}
			line = long
		}
		if len(line) > 0 {
			col.Add(source, strings.TrimRight(string(line), "\r\n"))
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func ptr[T any](v T) *T { return &v }

// Restart restarts a deployment's pods the way `kubectl rollout restart`
// does: by stamping the pod template with kubectl.kubernetes.io/restartedAt.
func (c *Client) RestartDeployment(ctx context.Context, namespace, name string, now time.Time) error {
	patch := fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":%q}}}}}`, now.UTC().Format(time.RFC3339))
	_, err := c.cs.AppsV1().Deployments(namespace).Patch(ctx, name, "application/strategic-merge-patch+json", []byte(patch), metav1.PatchOptions{FieldManager: "rootcause"})
	return mapErr(err, "restarting deployment "+namespace+"/"+name)
}

// ScaleDeployment sets a deployment's replica count.
func (c *Client) ScaleDeployment(ctx context.Context, namespace, name string, replicas int32) error {
	sc, err := c.cs.AppsV1().Deployments(namespace).GetScale(ctx, name, metav1.GetOptions{})
	if err != nil {
		return mapErr(err, "reading the scale of deployment "+namespace+"/"+name)
	}
	sc.Spec.Replicas = replicas
	_, err = c.cs.AppsV1().Deployments(namespace).UpdateScale(ctx, name, sc, metav1.UpdateOptions{FieldManager: "rootcause"})
	return mapErr(err, "scaling deployment "+namespace+"/"+name)
}
