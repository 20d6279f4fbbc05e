package kube_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/bundle"
	"github.com/rootcause/rootcause/agent/evidence/evidencetest"
	"github.com/rootcause/rootcause/agent/evidence/live/kube"
	"github.com/rootcause/rootcause/agent/tools"
)

var _ tools.DeploymentWriter = (*kube.Client)(nil)

func TestLiveKubernetesWrites(t *testing.T) {
	c, api := startAPI(t)
	ctx := context.Background()
	now := time.Date(2026, 3, 14, 10, 45, 0, 0, time.UTC)
	if err := c.RestartDeployment(ctx, "shop", "checkout", now); err != nil {
		t.Fatal(err)
	}
	if len(api.patches) != 1 || !strings.Contains(api.patches[0], "strategic-merge-patch") ||
		!strings.Contains(api.patches[0], `"kubectl.kubernetes.io/restartedAt":"2026-03-14T10:45:00Z"`) {
		t.Errorf("restart patch: %v", api.patches)
	}
	if err := c.ScaleDeployment(ctx, "shop", "checkout", 3); err != nil {
		t.Fatal(err)
	}
	if api.scaled["shop/checkout"] != 3 {
		t.Errorf("scale: %v", api.scaled)
	}
	if err := c.ScaleDeployment(ctx, "shop", "nope", 3); evidence.CodeOf(err) != evidence.CodeNotFound {
		t.Errorf("scale of a missing deployment: %v", err)
	}
}

// apiServer serves the Kubernetes API paths client-go uses from a
// cluster-info dump's raw JSON files, with label selectors, pagination
// (limit/continue), pod logs per container and previous instance, events
// converted to core/v1 (as the API server serves events.k8s.io events) and
// endpoints computed from services and pods (as the endpoints controller).
type apiServer struct {
	dir      string
	requests int
	patches  []string // PATCH bodies of deployments
	scaled   map[string]int32
}

func (s *apiServer) namespaces() []string {
	ents, _ := os.ReadDir(filepath.Join(s.dir, "kubernetes"))
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out
}

// items reads the raw items of <ns>/<file> (or nodes.json).
func (s *apiServer) items(ns, file string) ([]json.RawMessage, error) {
	var nss []string
	if ns == "" && file != "nodes.json" {
		nss = s.namespaces()
	} else {
		nss = []string{ns}
	}
	var out []json.RawMessage
	for _, n := range nss {
		data, err := os.ReadFile(filepath.Join(s.dir, "kubernetes", n, file))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		var l struct{ Items []json.RawMessage }
		if err := json.Unmarshal(data, &l); err != nil {
			return nil, err
		}
		out = append(out, l.Items...)
	}
	return out, nil
}

func (s *apiServer) pods(ns string) []corev1.Pod {
	raw, _ := s.items(ns, "pods.json")
	var out []corev1.Pod
	for _, r := range raw {
		var p corev1.Pod
		_ = json.Unmarshal(r, &p)
		out = append(out, p)
	}
	return out
}

func status(w http.ResponseWriter, code int, reason metav1.StatusReason, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: "Failure", Code: int32(code), Reason: reason, Message: msg})
}

func (s *apiServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.requests++
	p := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	var group []string
	switch {
	case len(p) >= 2 && p[0] == "api" && p[1] == "v1":
		group, p = p[:2], p[2:]
	case len(p) >= 3 && p[0] == "apis" && p[1] == "apps" && p[2] == "v1":
		group, p = p[:3], p[3:]
	default:
		status(w, 404, metav1.StatusReasonNotFound, "no such path "+r.URL.Path)
		return
	}
	_ = group
	ns := ""
	if len(p) >= 2 && p[0] == "namespaces" {
		ns, p = p[1], p[2:]
	} else if len(p) == 1 && p[0] == "namespaces" {
		var items []any
		for _, n := range s.namespaces() {
			items = append(items, corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}})
		}
		s.list(w, r, "NamespaceList", items)
		return
	}
	if len(p) == 0 {
		status(w, 404, metav1.StatusReasonNotFound, "no resource")
		return
	}
	files := map[string]string{"pods": "pods.json", "events": "events.json", "deployments": "deployments.json",
		"replicasets": "replicasets.json", "daemonsets": "daemonsets.json", "services": "services.json", "nodes": "nodes.json"}
	res := p[0]
	switch {
	case res == "deployments" && len(p) == 2 && r.Method == http.MethodPatch:
		b, _ := io.ReadAll(r.Body)
		s.patches = append(s.patches, r.Header.Get("Content-Type")+" "+string(b))
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"kind":"Deployment","apiVersion":"apps/v1","metadata":{"name":%q,"namespace":%q}}`, p[1], ns)
	case res == "deployments" && len(p) == 3 && p[2] == "scale":
		if r.Method == http.MethodPut {
			// client-go may send JSON or protobuf: decode like the API server
			var sc autoscalingv1.Scale
			body, _ := io.ReadAll(r.Body)
			if _, _, err := scheme.Codecs.UniversalDeserializer().Decode(body, nil, &sc); err != nil {
				status(w, 400, metav1.StatusReasonBadRequest, "bad scale body ("+r.Header.Get("Content-Type")+"): "+err.Error())
				return
			}
			if s.scaled == nil {
				s.scaled = map[string]int32{}
			}
			s.scaled[ns+"/"+p[1]] = sc.Spec.Replicas
		}
		if p[1] == "nope" {
			status(w, 404, metav1.StatusReasonNotFound, `deployments.apps "nope" not found`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"kind":"Scale","apiVersion":"autoscaling/v1","metadata":{"name":%q,"namespace":%q},"spec":{"replicas":1},"status":{"replicas":1}}`, p[1], ns)
	case res == "endpoints":
		raw, _ := s.items(ns, "services.json")
		var svcs []corev1.Service
		for _, x := range raw {
			var svc corev1.Service
			_ = json.Unmarshal(x, &svc)
			svcs = append(svcs, svc)
		}
		var items []any
		for _, e := range evidence.DeriveEndpoints(svcs, s.pods(ns)) {
			items = append(items, e)
		}
		s.list(w, r, "EndpointsList", items)
	case res == "pods" && len(p) == 2:
		for _, pod := range s.pods(ns) {
			if pod.Name == p[1] {
				w.Header().Set("Content-Type", "application/json")
				_ = json.NewEncoder(w).Encode(pod)
				return
			}
		}
		status(w, 404, metav1.StatusReasonNotFound, fmt.Sprintf("pods %q not found", p[1]))
	case res == "pods" && len(p) == 3 && p[2] == "log":
		s.logs(w, r, ns, p[1])
	case files[res] != "" && len(p) == 1:
		raw, err := s.items(ns, files[res])
		if err != nil {
			status(w, 500, metav1.StatusReasonInternalError, err.Error())
			return
		}
		sel, err := labels.Parse(r.URL.Query().Get("labelSelector"))
		if err != nil {
			status(w, 400, metav1.StatusReasonBadRequest, err.Error())
			return
		}
		var items []any
		for _, x := range raw {
			var m struct {
				APIVersion string `json:"apiVersion"`
				Metadata   metav1.ObjectMeta
			}
			_ = json.Unmarshal(x, &m)
			if !sel.Matches(labels.Set(m.Metadata.Labels)) {
				continue
			}
			if res == "events" && strings.HasPrefix(m.APIVersion, "events.k8s.io/") {
				var ev eventsv1.Event
				_ = json.Unmarshal(x, &ev)
				e := evidence.EventFromV1(&ev)
				items = append(items, e)
				continue
			}
			items = append(items, x)
		}
		kinds := map[string]string{"pods": "PodList", "events": "EventList", "deployments": "DeploymentList",
			"replicasets": "ReplicaSetList", "daemonsets": "DaemonSetList", "services": "ServiceList", "nodes": "NodeList"}
		s.list(w, r, kinds[res], items)
	default:
		status(w, 404, metav1.StatusReasonNotFound, "no such resource "+res)
	}
}

// list writes one page of items (limit/continue as an offset).
func (s *apiServer) list(w http.ResponseWriter, r *http.Request, kind string, items []any) {
	apiVersion := "v1"
	if strings.HasPrefix(r.URL.Path, "/apis/apps/") {
		apiVersion = "apps/v1"
	}
	off, _ := strconv.Atoi(r.URL.Query().Get("continue"))
	limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	limit = min(limit, 2) // force pagination through small pages
	if limit <= 0 {
		limit = len(items)
	}
	end := min(off+limit, len(items))
	cont := ""
	if end < len(items) {
		cont = strconv.Itoa(end)
	}
	page := items[min(off, len(items)):end]
	if page == nil {
		page = []any{}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"kind": kind, "apiVersion": apiVersion, "metadata": map[string]any{"continue": cont}, "items": page})
}

func (s *apiServer) logs(w http.ResponseWriter, r *http.Request, ns, pod string) {
	q := r.URL.Query()
	c := q.Get("container")
	dir := filepath.Join(s.dir, "kubernetes", ns, pod)
	var text string
	if q.Get("previous") == "true" {
		b, err := os.ReadFile(filepath.Join(dir, "logs-"+c+"-previous.txt"))
		if err != nil {
			status(w, 400, metav1.StatusReasonBadRequest, fmt.Sprintf("previous terminated container %q in pod %q not found", c, pod))
			return
		}
		text = string(b)
	} else {
		b, _ := os.ReadFile(filepath.Join(dir, "logs.txt"))
		in := false
		var sb strings.Builder
		for _, l := range strings.SplitAfter(string(b), "\n") {
			switch {
			case strings.HasPrefix(l, "==== START logs for container "+c+" of pod"):
				in = true
			case strings.HasPrefix(l, "==== END logs for container "):
				in = false
			case in:
				sb.WriteString(l)
			}
		}
		text = sb.String()
	}
	if st := q.Get("sinceTime"); st != "" {
		since, err := time.Parse(time.RFC3339, st)
		if err != nil {
			status(w, 400, metav1.StatusReasonBadRequest, "bad sinceTime")
			return
		}
		var sb strings.Builder
		for _, l := range strings.SplitAfter(text, "\n") {
			if t := evidence.ParseLogTime(l, since); t.IsZero() || !t.Before(since) {
				sb.WriteString(l)
			}
		}
		text = sb.String()
	}
	w.Header().Set("Content-Type", "text/plain")
	_, _ = w.Write([]byte(text))
}

func startAPI(t *testing.T) (*kube.Client, *apiServer) {
	t.Helper()
	api := &apiServer{dir: evidencetest.ShopBundleDir()}
	srv := httptest.NewUnstartedServer(api)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	c, err := kube.New(kube.Config{REST: &rest.Config{Host: srv.URL}, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c, api
}

func TestLiveKubernetesConformance(t *testing.T) {
	c, api := startAPI(t)
	evidencetest.RunKubernetes(t, c, evidencetest.ShopKubeWant())
	if api.requests == 0 {
		t.Fatal("client-go never reached the loopback API server")
	}
}

func TestLiveKubernetesMatchesBundle(t *testing.T) {
	c, _ := startAPI(t)
	b, err := bundle.OpenDir(evidencetest.ShopBundleDir())
	if err != nil {
		t.Fatal(err)
	}
	evidencetest.CompareKubernetes(t, b.Sources(b.CapturedAt).Kubernetes, c, []string{"shop", "default"}, evidencetest.ShopLogQueries())
}

func TestLiveKubernetesUnavailable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	c, err := kube.New(kube.Config{REST: &rest.Config{Host: "http://" + addr}, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Pods(context.Background(), "shop", "")
	if evidence.CodeOf(err) != evidence.CodeUnavailable || evidence.SourceOf(err) != "kubernetes" {
		t.Errorf("connection refused: %v, want kubernetes unavailable", err)
	}
	if _, err := kube.New(kube.Config{Kubeconfig: path.Join(t.TempDir(), "missing")}); evidence.CodeOf(err) != evidence.CodeNotConfigured {
		t.Errorf("missing kubeconfig: %v, want not_configured", err)
	}
}
