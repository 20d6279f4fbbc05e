// Package apitest is a Kubernetes API server for tests: it serves the
// objects of a bundle directory (every JSON object or list under
// kubernetes/, the cluster-info dump layout included) over the paths kubectl
// and client-go use: discovery, get and list with label and field
// selectors, pod logs (current and previous) and the metrics API. Every
// timestamp of the fixtures can be moved by a fixed shift, so that relative
// ages printed by kubectl ("5m") do not depend on the day the test runs.
// It only reads: writes answer 405.
package apitest

import (
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
	"regexp"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/yaml"
)

// Resource is one API resource the server knows.
type Resource struct {
	Group, Version, Name, Kind string
	Namespaced                 bool
	ShortNames                 []string
}

func (r Resource) groupVersion() string {
	if r.Group == "" {
		return r.Version
	}
	return r.Group + "/" + r.Version
}

// Resources are the resources served.
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
	{"coordination.k8s.io", "v1", "leases", "Lease", true, nil},
	{"networking.k8s.io", "v1", "ingresses", "Ingress", true, []string{"ing"}},
	{"networking.k8s.io", "v1", "ingressclasses", "IngressClass", false, nil},
	{"networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", true, []string{"netpol"}},
	{"discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", true, nil},
	{"storage.k8s.io", "v1", "storageclasses", "StorageClass", false, []string{"sc"}},
	{"policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", true, []string{"pdb"}},
	{"metrics.k8s.io", "v1beta1", "pods", "PodMetrics", true, nil},
	{"metrics.k8s.io", "v1beta1", "nodes", "NodeMetrics", false, nil},
}

// Server serves one bundle directory.
type Server struct {
	dir     string
	objects map[string][]map[string]any // by kind
	URL     string
	srv     *httptest.Server
}

// Load reads the objects of dir without serving them. Every timestamp in
// the fixtures (RFC 3339 strings) is moved by shift.
func Load(dir string, shift time.Duration) (*Server, error) {
	s := &Server{dir: dir, objects: map[string][]map[string]any{}}
	if err := s.load(shift); err != nil {
		return nil, err
	}
	s.deriveEndpoints()
	return s, nil
}

// Start loads dir (as Load) and serves it on 127.0.0.1 until Close.
func Start(dir string, shift time.Duration) (*Server, error) {
	s, err := Load(dir, shift)
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s.srv = httptest.NewUnstartedServer(s)
	s.srv.Listener = l
	s.srv.Start()
	s.URL = s.srv.URL
	return s, nil
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// Kubeconfig writes a kubeconfig for the server into dir and returns its path.
func (s *Server) Kubeconfig(dir string) (string, error) {
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

var rfc3339 = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$`)

func shiftTimes(v any, d time.Duration) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = shiftTimes(e, d)
		}
	case []any:
		for i, e := range x {
			x[i] = shiftTimes(e, d)
		}
	case string:
		if d != 0 && rfc3339.MatchString(x) {
			if t, err := time.Parse(time.RFC3339Nano, x); err == nil {
				if strings.Contains(x, ".") {
					return t.Add(d).UTC().Format("2006-01-02T15:04:05.000000Z07:00")
				}
				return t.Add(d).UTC().Format(time.RFC3339)
			}
		}
	}
	return v
}

func (s *Server) load(shift time.Duration) error {
	root := filepath.Join(s.dir, "kubernetes")
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if ext := filepath.Ext(p); ext != ".json" && ext != ".yaml" {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		dec := yaml.NewYAMLOrJSONDecoder(f, 4096)
		for {
			var obj map[string]any
			err := dec.Decode(&obj)
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			if obj != nil {
				s.addDoc(shiftTimes(obj, shift).(map[string]any))
			}
		}
	})
}

func (s *Server) addDoc(obj map[string]any) {
	{
		kind, _ := obj["kind"].(string)
		if items, ok := obj["items"].([]any); ok {
			itemKind := strings.TrimSuffix(kind, "List")
			for _, it := range items {
				m, ok := it.(map[string]any)
				if !ok {
					continue
				}
				k, _ := m["kind"].(string)
				if k == "" {
					k = itemKind
				}
				s.add(k, m)
			}
			return
		}
		s.add(kind, obj)
	}
}

func (s *Server) add(kind string, m map[string]any) {
	if kind == "" {
		return
	}
	for _, r := range Resources {
		if r.Kind == kind {
			m["kind"] = kind
			if av, _ := m["apiVersion"].(string); av == "" || kind != "Event" {
				m["apiVersion"] = r.groupVersion()
			}
			break
		}
	}
	if kind == "Event" {
		m = coreEvent(m)
	}
	s.objects[kind] = append(s.objects[kind], m)
}

// coreEvent maps an events.k8s.io/v1 event to core/v1 as the API server does.
func coreEvent(m map[string]any) map[string]any {
	if av, _ := m["apiVersion"].(string); !strings.HasPrefix(av, "events.k8s.io/") {
		m["apiVersion"] = "v1"
		return m
	}
	out := map[string]any{"kind": "Event", "apiVersion": "v1", "metadata": m["metadata"],
		"involvedObject": m["regarding"], "reason": m["reason"], "message": m["note"], "type": m["type"],
		"eventTime": m["eventTime"], "reportingComponent": m["reportingController"], "reportingInstance": m["reportingInstance"],
		"source": map[string]any{"component": m["reportingController"]}}
	if ser, ok := m["series"].(map[string]any); ok {
		out["series"] = ser
		out["count"] = ser["count"]
		out["lastTimestamp"] = ser["lastObservedTime"]
	}
	out["firstTimestamp"] = m["eventTime"]
	if out["lastTimestamp"] == nil {
		out["lastTimestamp"] = m["eventTime"]
		out["count"] = 1
	}
	return out
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func status(w http.ResponseWriter, code int, reason metav1.StatusReason, msg string) {
	writeJSON(w, code, metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: "Failure", Code: int32(code), Reason: reason, Message: msg})
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		status(w, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed, "read-only test server")
		return
	}
	p := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case r.URL.Path == "/version":
		writeJSON(w, 200, map[string]string{"major": "1", "minor": "32", "gitVersion": "v1.32.0", "platform": "linux/amd64"})
		return
	case r.URL.Path == "/api":
		writeJSON(w, 200, map[string]any{"kind": "APIVersions", "versions": []string{"v1"},
			"serverAddressByClientCIDRs": []any{map[string]string{"clientCIDR": "0.0.0.0/0", "serverAddress": r.Host}}})
		return
	case r.URL.Path == "/apis":
		writeJSON(w, 200, s.groups())
		return
	}
	var gv string
	switch {
	case len(p) >= 2 && p[0] == "api":
		gv, p = p[1], p[2:]
	case len(p) >= 3 && p[0] == "apis":
		gv, p = p[1]+"/"+p[2], p[3:]
	default:
		status(w, 404, metav1.StatusReasonNotFound, "the server could not find the requested resource")
		return
	}
	if len(p) == 0 {
		s.resourceList(w, gv)
		return
	}
	ns := ""
	if p[0] == "namespaces" && len(p) >= 3 {
		ns, p = p[1], p[2:]
	}
	var res *Resource
	for i := range Resources {
		if Resources[i].groupVersion() == gv && Resources[i].Name == p[0] {
			res = &Resources[i]
		}
	}
	if res == nil {
		status(w, 404, metav1.StatusReasonNotFound, "the server could not find the requested resource")
		return
	}
	switch {
	case len(p) == 1:
		s.list(w, r, res, ns)
	case len(p) == 2:
		if o := s.get(res, ns, p[1]); o != nil {
			if wantsTable(r.Header.Get("Accept")) {
				if t, ok := table(res.Kind, []any{as(o, res)}, time.Now()); ok {
					writeJSON(w, 200, t)
					return
				}
			}
			writeJSON(w, 200, as(o, res))
			return
		}
		status(w, 404, metav1.StatusReasonNotFound, fmt.Sprintf("%s %q not found", res.Name, p[1]))
	case len(p) == 3 && res.Name == "pods" && p[2] == "log":
		s.logs(w, r, ns, p[1])
	default:
		status(w, 404, metav1.StatusReasonNotFound, "the server could not find the requested resource")
	}
}

func (s *Server) groups() map[string]any {
	var groups []any
	index := map[string]int{}
	for _, r := range Resources {
		if r.Group == "" {
			continue
		}
		gv := map[string]string{"groupVersion": r.groupVersion(), "version": r.Version}
		i, seen := index[r.Group]
		if !seen {
			index[r.Group] = len(groups)
			groups = append(groups, map[string]any{"name": r.Group, "versions": []any{gv}, "preferredVersion": gv})
			continue
		}
		g := groups[i].(map[string]any)
		if !slices.ContainsFunc(g["versions"].([]any), func(v any) bool { return v.(map[string]string)["version"] == r.Version }) {
			g["versions"] = append(g["versions"].([]any), gv)
		}
	}
	return map[string]any{"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}
}

func (s *Server) resourceList(w http.ResponseWriter, gv string) {
	var rs []any
	for _, r := range Resources {
		if r.groupVersion() != gv {
			continue
		}
		rs = append(rs, map[string]any{"name": r.Name, "singularName": strings.ToLower(r.Kind), "namespaced": r.Namespaced,
			"kind": r.Kind, "verbs": []string{"get", "list"}, "shortNames": r.ShortNames})
		if r.Name == "pods" && gv == "v1" {
			rs = append(rs, map[string]any{"name": "pods/log", "singularName": "", "namespaced": true, "kind": "Pod", "verbs": []string{"get"}})
		}
	}
	if rs == nil {
		status(w, 404, metav1.StatusReasonNotFound, "the server could not find the requested resource")
		return
	}
	writeJSON(w, 200, map[string]any{"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": rs})
}

// as labels an object with the group version it is served as.
func as(o map[string]any, res *Resource) map[string]any {
	if res.Kind == "Event" {
		return o
	}
	c := make(map[string]any, len(o))
	for k, v := range o {
		c[k] = v
	}
	c["apiVersion"] = res.groupVersion()
	return c
}

func meta(o map[string]any) map[string]any {
	m, _ := o["metadata"].(map[string]any)
	return m
}

func str(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

func (s *Server) get(res *Resource, ns, name string) map[string]any {
	for _, o := range s.objects[res.Kind] {
		m := meta(o)
		if str(m, "name") == name && (!res.Namespaced || str(m, "namespace") == ns) {
			return o
		}
	}
	return nil
}

// field returns the value at a dotted path, as a string.
func field(o map[string]any, path string) string {
	var cur any = o
	for _, k := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return ""
		}
		cur = m[k]
	}
	switch v := cur.(type) {
	case string:
		return v
	case nil:
		return ""
	default:
		return fmt.Sprint(v)
	}
}

func matchFields(o map[string]any, sel string) bool {
	if sel == "" {
		return true
	}
	for _, term := range strings.Split(sel, ",") {
		neg := false
		k, v, ok := strings.Cut(term, "!=")
		if ok {
			neg = true
		} else if k, v, ok = strings.Cut(term, "=="); !ok {
			k, v, _ = strings.Cut(term, "=")
		}
		if (field(o, k) == v) == neg {
			return false
		}
	}
	return true
}

func (s *Server) list(w http.ResponseWriter, r *http.Request, res *Resource, ns string) {
	sel, err := labels.Parse(r.URL.Query().Get("labelSelector"))
	if err != nil {
		status(w, 400, metav1.StatusReasonBadRequest, err.Error())
		return
	}
	items := []any{}
	if res.Kind == "Namespace" && len(s.objects["Namespace"]) == 0 {
		var names []string
		for _, objs := range s.objects {
			for _, o := range objs {
				if n := str(meta(o), "namespace"); n != "" && !slices.Contains(names, n) {
					names = append(names, n)
				}
			}
		}
		slices.Sort(names)
		for _, n := range names {
			items = append(items, map[string]any{"kind": "Namespace", "apiVersion": "v1", "metadata": map[string]any{"name": n}, "status": map[string]any{"phase": "Active"}})
		}
	}
	for _, o := range s.objects[res.Kind] {
		m := meta(o)
		if res.Namespaced && ns != "" && str(m, "namespace") != ns {
			continue
		}
		lbl := labels.Set{}
		if l, ok := m["labels"].(map[string]any); ok {
			for k, v := range l {
				lbl[k], _ = v.(string)
			}
		}
		if !sel.Matches(lbl) || !matchFields(o, r.URL.Query().Get("fieldSelector")) {
			continue
		}
		items = append(items, as(o, res))
	}
	if wantsTable(r.Header.Get("Accept")) {
		if t, ok := table(res.Kind, items, time.Now()); ok {
			writeJSON(w, 200, t)
			return
		}
	}
	writeJSON(w, 200, map[string]any{"kind": res.Kind + "List", "apiVersion": res.groupVersion(), "metadata": map[string]any{"resourceVersion": "1"}, "items": items})
}

// logs serves kubernetes/<ns>/<pod>/logs.txt (the cluster-info dump's
// sections per container) and logs-<container>-previous.txt.
func (s *Server) logs(w http.ResponseWriter, r *http.Request, ns, pod string) {
	q := r.URL.Query()
	c := q.Get("container")
	if c == "" {
		if o := s.get(&Resources[0], ns, pod); o != nil {
			if cs, ok := o["spec"].(map[string]any)["containers"].([]any); ok && len(cs) > 0 {
				c = str(cs[0].(map[string]any), "name")
			}
		}
	}
	dir := filepath.Join(s.dir, "kubernetes", ns, pod)
	if q.Get("previous") == "true" {
		b, err := os.ReadFile(filepath.Join(dir, "logs-"+c+"-previous.txt"))
		if err != nil {
			status(w, 400, metav1.StatusReasonBadRequest, fmt.Sprintf("previous terminated container %q in pod %q not found", c, pod))
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write(b)
		return
	}
	b, err := os.ReadFile(filepath.Join(dir, "logs.txt"))
	if errors.Is(err, fs.ErrNotExist) && s.get(&Resources[0], ns, pod) == nil {
		status(w, 404, metav1.StatusReasonNotFound, fmt.Sprintf("pods %q not found", pod))
		return
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
	w.Header().Set("Content-Type", "text/plain")
	_, _ = w.Write([]byte(sb.String()))
}

// Objects returns the served objects of a kind (after the shift), as
// decoded JSON.
func (s *Server) Objects(kind string) []map[string]any { return s.objects[kind] }
