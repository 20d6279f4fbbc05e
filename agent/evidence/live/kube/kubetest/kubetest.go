// Package kubetest is a loopback Kubernetes API server for tests, used by
// client-go and by real kubectl alike. It serves the objects of a bundle's
// kubernetes/ folder (any `kubectl get -o json|yaml` file, cluster-info dump
// lists, pod logs) on the API server's paths: discovery, get and list with
// label and field selectors and pagination (limit/continue), meta.k8s.io
// Tables for kubectl's printers, pod logs per container and previous
// instance, the metrics API, deployment patches and scale updates.
//
// It behaves as the API server does where the fixtures leave gaps:
// events.k8s.io events are also served as core/v1 events, and services
// without endpoints get the Endpoints and EndpointSlices the controllers
// would publish. Each object is served at the group/version it was written
// in (and the versions of the same schema, as batch/v1beta1 for batch/v1);
// Served limits the versions, to test clusters that lack one. Every
// timestamp of the fixtures can be moved by a fixed shift (Load), so that
// the relative ages kubectl prints do not depend on the day a test runs.
package kubetest

import (
	"fmt"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// Resource is one API resource the server knows.
type Resource struct {
	Group, Version, Name, Kind string
	Namespaced                 bool
	ShortNames                 []string
}

// GroupVersion is the resource's group/version as in apiVersion fields.
func (r Resource) GroupVersion() string {
	if r.Group == "" {
		return r.Version
	}
	return r.Group + "/" + r.Version
}

// Resources are the resources served, in discovery order: a group's first
// version is its preferred one.
var Resources = []Resource{
	{"", "v1", "pods", "Pod", true, []string{"po"}},
	{"", "v1", "services", "Service", true, []string{"svc"}},
	{"", "v1", "endpoints", "Endpoints", true, []string{"ep"}},
	{"", "v1", "events", "Event", true, []string{"ev"}},
	{"", "v1", "nodes", "Node", false, []string{"no"}},
	{"", "v1", "namespaces", "Namespace", false, []string{"ns"}},
	{"", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", true, []string{"pvc"}},
	{"", "v1", "persistentvolumes", "PersistentVolume", false, []string{"pv"}},
	{"", "v1", "configmaps", "ConfigMap", true, []string{"cm"}},
	{"", "v1", "secrets", "Secret", true, nil},
	{"", "v1", "serviceaccounts", "ServiceAccount", true, []string{"sa"}},
	{"", "v1", "replicationcontrollers", "ReplicationController", true, []string{"rc"}},
	{"", "v1", "resourcequotas", "ResourceQuota", true, []string{"quota"}},
	{"", "v1", "limitranges", "LimitRange", true, []string{"limits"}},
	{"apps", "v1", "deployments", "Deployment", true, []string{"deploy"}},
	{"apps", "v1", "replicasets", "ReplicaSet", true, []string{"rs"}},
	{"apps", "v1", "statefulsets", "StatefulSet", true, []string{"sts"}},
	{"apps", "v1", "daemonsets", "DaemonSet", true, []string{"ds"}},
	{"apps", "v1", "controllerrevisions", "ControllerRevision", true, nil},
	{"batch", "v1", "jobs", "Job", true, nil},
	{"batch", "v1", "cronjobs", "CronJob", true, []string{"cj"}},
	{"batch", "v1beta1", "cronjobs", "CronJob", true, []string{"cj"}},
	{"autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler", true, []string{"hpa"}},
	{"autoscaling", "v2beta2", "horizontalpodautoscalers", "HorizontalPodAutoscaler", true, []string{"hpa"}},
	{"autoscaling", "v1", "horizontalpodautoscalers", "HorizontalPodAutoscaler", true, []string{"hpa"}},
	{"coordination.k8s.io", "v1", "leases", "Lease", true, nil},
	{"networking.k8s.io", "v1", "ingresses", "Ingress", true, []string{"ing"}},
	{"networking.k8s.io", "v1", "ingressclasses", "IngressClass", false, nil},
	{"networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", true, []string{"netpol"}},
	{"discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", true, nil},
	{"storage.k8s.io", "v1", "storageclasses", "StorageClass", false, []string{"sc"}},
	{"policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", true, []string{"pdb"}},
	{"policy", "v1beta1", "poddisruptionbudgets", "PodDisruptionBudget", true, []string{"pdb"}},
	{"rbac.authorization.k8s.io", "v1", "roles", "Role", true, nil},
	{"rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", true, nil},
	{"rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", false, nil},
	{"rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", false, nil},
	{"events.k8s.io", "v1", "events", "Event", true, []string{"ev"}},
	{"metrics.k8s.io", "v1beta1", "pods", "PodMetrics", true, nil},
	{"metrics.k8s.io", "v1beta1", "nodes", "NodeMetrics", false, nil},
}

// sameSchema maps versions to the version whose schema they share: an
// object written at one is served at both.
var sameSchema = map[string]string{"batch/v1beta1": "batch/v1", "autoscaling/v2beta2": "autoscaling/v2", "policy/v1beta1": "policy/v1"}

func schemaOf(gv string) string {
	if s, ok := sameSchema[gv]; ok {
		return s
	}
	return gv
}

// Server serves one bundle directory.
type Server struct {
	Dir string
	// Served, when set, lists the group/versions served ("v1", "apps/v1",
	// "autoscaling/v1"...); others answer 404, in discovery too.
	Served map[string]bool
	// PageSize, when positive, caps every list page however large the
	// limit asked, which forces clients through pagination.
	PageSize int
	// URL is the server's address once serving.
	URL string

	mu       sync.Mutex
	objects  map[string][]object // by kind
	nsDirs   []string            // namespace folders of a cluster-info dump
	requests int
	Patches  []string         // PATCH bodies of deployments (content type, space, body)
	Scaled   map[string]int32 // "ns/name" → replicas set through the scale subresource
}

// Load reads dir's kubernetes/ folder without serving it. Every timestamp
// in the fixtures (RFC 3339 strings) is moved by shift.
func Load(dir string, shift time.Duration) (*Server, error) {
	s := &Server{Dir: dir, objects: map[string][]object{}}
	if err := s.load(shift); err != nil {
		return nil, err
	}
	s.deriveEndpoints()
	return s, nil
}

// Start loads dir's kubernetes/ folder as it is (no shift) and serves it,
// in pages of at most 2 items, on a loopback port until the test ends; it
// returns the server and a client configuration.
func Start(t testing.TB, dir string) (*Server, *rest.Config) {
	t.Helper()
	s, err := Load(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	s.PageSize = 2
	return s, s.Serve(t)
}

// Serve serves the loaded objects on a loopback port until the test ends
// and returns a client configuration.
func (s *Server) Serve(t testing.TB) *rest.Config {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(s)
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return &rest.Config{Host: srv.URL}
}

// Kubeconfig writes a kubeconfig for the serving server into dir and
// returns its path.
func (s *Server) Kubeconfig(dir string) (string, error) {
	if s.URL == "" {
		return "", fmt.Errorf("kubetest: the server is not serving")
	}
	p := filepath.Join(dir, "kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: %s
contexts:
- name: test
  context:
    cluster: test
    user: test
current-context: test
users:
- name: test
  user:
    token: test
`, s.URL)
	return p, os.WriteFile(p, []byte(cfg), 0o600)
}

// Requests counts the requests served.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

// Objects returns the objects of a kind (after the shift) as decoded JSON,
// as served at the kind's preferred version (events as core/v1 events).
func (s *Server) Objects(kind string) []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.objectsOf(kind)
}

// objectsOf is Objects with the lock held.
func (s *Server) objectsOf(kind string) []map[string]any {
	for _, r := range Resources {
		if r.Kind == kind {
			var out []map[string]any
			for _, o := range s.list(&r, "") {
				out = append(out, o.m)
			}
			return out
		}
	}
	return nil
}
