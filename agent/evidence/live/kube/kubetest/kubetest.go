// Package kubetest is a loopback Kubernetes API server for tests: it serves
// the objects of a bundle's kubernetes/ folder (any `kubectl get -o
// json|yaml` file, cluster-info dump lists, pod logs) on the API paths
// client-go uses, with label selectors, pagination (limit/continue), single
// gets, pod logs per container and previous instance, events.k8s.io events
// served as core/v1 events (as the API server does), endpoints computed from
// services and pods where none are held (as the endpoints controller does),
// deployment patches and scale updates. Each object is served at the
// group/version it was written in; Served limits the versions (to test
// clusters that lack one).
package kubetest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/rootcause/rootcause/agent/evidence"
)

// object is one stored object, raw as written.
type object struct {
	kind, group, version string
	ns, name             string
	labels               map[string]string
	raw                  json.RawMessage
}

// Server serves one bundle directory.
type Server struct {
	Dir string
	// Served, when set, lists the group/versions served ("v1", "apps/v1",
	// "autoscaling/v1"...); others answer 404.
	Served map[string]bool

	mu       sync.Mutex
	objs     []object
	nsDirs   []string
	requests int
	Patches  []string         // PATCH bodies of deployments (content type, space, body)
	Scaled   map[string]int32 // "ns/name" → replicas set through the scale subresource
}

// Requests counts the requests served.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

// Start loads dir's kubernetes/ folder and serves it on a loopback port
// until the test ends; it returns the server and a client configuration.
func Start(t testing.TB, dir string) (*Server, *rest.Config) {
	t.Helper()
	s := &Server{Dir: dir}
	if err := s.load(); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(s)
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return s, &rest.Config{Host: srv.URL}
}

var dumpKinds = map[string]string{"pods.json": "Pod", "events.json": "Event", "deployments.json": "Deployment",
	"replicasets.json": "ReplicaSet", "daemonsets.json": "DaemonSet", "services.json": "Service", "nodes.json": "Node"}

func (s *Server) load() error {
	root := filepath.Join(s.Dir, "kubernetes")
	seen := map[string]bool{}
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		ext := filepath.Ext(p)
		if ext != ".json" && ext != ".yaml" && ext != ".yml" {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		if dir := filepath.Dir(rel); dir != "." && !strings.Contains(dir, string(filepath.Separator)) && dumpKinds[filepath.Base(p)] != "" && !seen[dir] {
			seen[dir] = true
			s.nsDirs = append(s.nsDirs, dir)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var docs [][]byte
		if t := bytes.TrimSpace(data); len(t) > 0 && t[0] == '{' {
			docs = [][]byte{data}
		} else {
			for _, doc := range regexpSplitDocs(data) {
				js, err := yaml.YAMLToJSON(doc)
				if err != nil {
					return fmt.Errorf("%s: %w", p, err)
				}
				docs = append(docs, js)
			}
		}
		hint := dumpKinds[filepath.Base(p)]
		for _, doc := range docs {
			var top struct {
				Kind       string            `json:"kind"`
				APIVersion string            `json:"apiVersion"`
				Items      []json.RawMessage `json:"items"`
			}
			if err := json.Unmarshal(doc, &top); err != nil || top.Kind == "" && top.Items == nil {
				continue
			}
			if top.Items == nil {
				s.add(doc, "", "", "")
				continue
			}
			listKind := strings.TrimSuffix(top.Kind, "List")
			if top.Kind == "List" {
				listKind = ""
			}
			for _, it := range top.Items {
				s.add(it, listKind, top.APIVersion, hint)
			}
		}
		return nil
	})
}

func regexpSplitDocs(data []byte) [][]byte {
	var out [][]byte
	var cur []byte
	for _, l := range bytes.SplitAfter(data, []byte("\n")) {
		if strings.TrimSpace(string(l)) == "---" {
			out = append(out, cur)
			cur = nil
			continue
		}
		cur = append(cur, l...)
	}
	return append(out, cur)
}

func (s *Server) add(raw json.RawMessage, listKind, listAPIVersion, hint string) {
	var m struct {
		Kind       string            `json:"kind"`
		APIVersion string            `json:"apiVersion"`
		Metadata   metav1.ObjectMeta `json:"metadata"`
	}
	if json.Unmarshal(raw, &m) != nil {
		return
	}
	kind := m.Kind
	if kind == "" {
		kind = listKind
	}
	if kind == "" {
		kind = hint
	}
	av := m.APIVersion
	if av == "" {
		av = listAPIVersion
	}
	ki, ok := evidence.LookupKind(kind)
	if !ok {
		return
	}
	if av == "" || av == "v1" && ki.Group != "" {
		av = ki.APIVersion()
	}
	group, version, found := strings.Cut(av, "/")
	if !found {
		group, version = "", av
	}
	s.objs = append(s.objs, object{kind: ki.Kind, group: group, version: version, ns: m.Metadata.Namespace, name: m.Metadata.Name, labels: m.Metadata.Labels, raw: raw})
}

func status(w http.ResponseWriter, code int, reason metav1.StatusReason, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: "Failure", Code: int32(code), Reason: reason, Message: msg})
}

func (s *Server) namespaces() []string {
	set := map[string]bool{}
	for _, n := range s.nsDirs {
		set[n] = true
	}
	for _, o := range s.objs {
		if o.kind == "Namespace" {
			set[o.name] = true
		}
	}
	var out []string
	for n := range set {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// ServeHTTP serves the API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests++
	p := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	var group, version string
	switch {
	case len(p) >= 2 && p[0] == "api":
		version, p = p[1], p[2:]
	case len(p) >= 3 && p[0] == "apis":
		group, version, p = p[1], p[2], p[3:]
	default:
		status(w, 404, metav1.StatusReasonNotFound, "no such path "+r.URL.Path)
		return
	}
	gv := version
	if group != "" {
		gv = group + "/" + version
	}
	if s.Served != nil && !s.Served[gv] {
		status(w, 404, metav1.StatusReasonNotFound, "the server could not find the requested resource")
		return
	}
	ns := ""
	if len(p) >= 3 && p[0] == "namespaces" {
		ns, p = p[1], p[2:]
	}
	if len(p) == 0 {
		status(w, 404, metav1.StatusReasonNotFound, "no resource")
		return
	}
	res := p[0]
	var ki evidence.KindInfo
	for _, k := range evidence.KubeKinds {
		if k.Resource == res && k.Group == group {
			ki = k
		}
	}
	if res == "events" && group == "events.k8s.io" {
		ki, _ = evidence.LookupKind("Event")
	}
	if ki.Kind == "" {
		status(w, 404, metav1.StatusReasonNotFound, "no such resource "+res)
		return
	}
	switch {
	case res == "deployments" && len(p) == 2 && r.Method == http.MethodPatch:
		b, _ := io.ReadAll(r.Body)
		s.Patches = append(s.Patches, r.Header.Get("Content-Type")+" "+string(b))
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"kind":"Deployment","apiVersion":"apps/v1","metadata":{"name":%q,"namespace":%q}}`, p[1], ns)
	case res == "deployments" && len(p) == 3 && p[2] == "scale":
		s.scale(w, r, ns, p[1])
	case res == "pods" && len(p) == 3 && p[2] == "log":
		s.logs(w, r, ns, p[1])
	case len(p) == 2:
		for _, o := range s.list(ki, group, version, ns) {
			if o.name == p[1] {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write(o.raw)
				return
			}
		}
		status(w, 404, metav1.StatusReasonNotFound, fmt.Sprintf("%s %q not found", res, p[1]))
	case len(p) == 1:
		sel, err := labels.Parse(r.URL.Query().Get("labelSelector"))
		if err != nil {
			status(w, 400, metav1.StatusReasonBadRequest, err.Error())
			return
		}
		var items []json.RawMessage
		for _, o := range s.list(ki, group, version, ns) {
			if sel.Matches(labels.Set(o.labels)) {
				items = append(items, o.raw)
			}
		}
		s.page(w, r, ki.Kind+"List", gv, items)
	default:
		status(w, 404, metav1.StatusReasonNotFound, "no such path "+r.URL.Path)
	}
}

// list returns the objects of a kind served at group/version in ns.
func (s *Server) list(ki evidence.KindInfo, group, version, ns string) []object {
	var out []object
	if ki.Kind == "Namespace" {
		for _, n := range s.namespaces() {
			raw := json.RawMessage(fmt.Sprintf(`{"metadata":{"name":%q},"status":{"phase":"Active"}}`, n))
			for _, o := range s.objs {
				if o.kind == "Namespace" && o.name == n {
					raw = o.raw
				}
			}
			out = append(out, object{kind: "Namespace", name: n, raw: raw})
		}
		return out
	}
	for _, o := range s.objs {
		if o.kind != ki.Kind || ns != "" && o.ns != ns {
			continue
		}
		switch {
		case o.group == group && o.version == version:
			out = append(out, o)
		case ki.Kind == "Event" && group == "" && o.group == "events.k8s.io":
			var ev eventsv1.Event
			_ = json.Unmarshal(o.raw, &ev)
			e := evidence.EventFromV1(&ev)
			raw, _ := json.Marshal(e)
			out = append(out, object{kind: "Event", ns: o.ns, name: o.name, labels: o.labels, raw: raw})
		}
	}
	if ki.Kind == "Endpoints" {
		have := map[string]bool{}
		for _, o := range out {
			have[o.ns+"/"+o.name] = true
		}
		var svcs []corev1.Service
		var pods []corev1.Pod
		for _, o := range s.objs {
			if ns != "" && o.ns != ns {
				continue
			}
			switch o.kind {
			case "Service":
				var x corev1.Service
				_ = json.Unmarshal(o.raw, &x)
				svcs = append(svcs, x)
			case "Pod":
				var x corev1.Pod
				_ = json.Unmarshal(o.raw, &x)
				pods = append(pods, x)
			}
		}
		for _, e := range evidence.DeriveEndpoints(svcs, pods) {
			if !have[e.Namespace+"/"+e.Name] {
				raw, _ := json.Marshal(e)
				out = append(out, object{kind: "Endpoints", ns: e.Namespace, name: e.Name, labels: e.Labels, raw: raw})
			}
		}
	}
	return out
}

// page writes one page of items (limit/continue as an offset; pages of at
// most 2 items force clients through pagination).
func (s *Server) page(w http.ResponseWriter, r *http.Request, kind, apiVersion string, items []json.RawMessage) {
	off, _ := strconv.Atoi(r.URL.Query().Get("continue"))
	limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	limit = min(limit, 2)
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
		page = []json.RawMessage{}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"kind": kind, "apiVersion": apiVersion, "metadata": map[string]any{"continue": cont}, "items": page})
}

func (s *Server) scale(w http.ResponseWriter, r *http.Request, ns, name string) {
	if r.Method == http.MethodPut {
		// client-go may send JSON or protobuf: decode like the API server
		var sc autoscalingv1.Scale
		body, _ := io.ReadAll(r.Body)
		if _, _, err := scheme.Codecs.UniversalDeserializer().Decode(body, nil, &sc); err != nil {
			status(w, 400, metav1.StatusReasonBadRequest, "bad scale body ("+r.Header.Get("Content-Type")+"): "+err.Error())
			return
		}
		if s.Scaled == nil {
			s.Scaled = map[string]int32{}
		}
		s.Scaled[ns+"/"+name] = sc.Spec.Replicas
	}
	found := false
	for _, o := range s.objs {
		found = found || o.kind == "Deployment" && o.ns == ns && o.name == name
	}
	if !found {
		status(w, 404, metav1.StatusReasonNotFound, fmt.Sprintf("deployments.apps %q not found", name))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"kind":"Scale","apiVersion":"autoscaling/v1","metadata":{"name":%q,"namespace":%q},"spec":{"replicas":1},"status":{"replicas":1}}`, name, ns)
}

// logs serves logs.txt sections (current) and logs-<c>-previous.txt, as
// kubectl cluster-info dump writes them; sinceTime filters by the lines' own
// timestamps (kubelet's), keeping untimed lines.
func (s *Server) logs(w http.ResponseWriter, r *http.Request, ns, pod string) {
	q := r.URL.Query()
	c := q.Get("container")
	dir := filepath.Join(s.Dir, "kubernetes", ns, pod)
	var text string
	if q.Get("previous") == "true" {
		b, err := os.ReadFile(filepath.Join(dir, "logs-"+c+"-previous.txt"))
		if err != nil {
			status(w, 400, metav1.StatusReasonBadRequest, fmt.Sprintf("previous terminated container %q in pod %q not found", c, pod))
			return
		}
		text = string(b)
	} else {
		b, err := os.ReadFile(filepath.Join(dir, "logs.txt"))
		if errors.Is(err, fs.ErrNotExist) {
			b = nil
		}
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
	if lb := q.Get("limitBytes"); lb != "" {
		if n, err := strconv.Atoi(lb); err == nil && n < len(text) {
			text = text[:n]
		}
	}
	w.Header().Set("Content-Type", "text/plain")
	_, _ = w.Write([]byte(text))
}
