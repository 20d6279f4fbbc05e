package kubetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/rootcause/rootcause/agent/evidence"
)

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func status(w http.ResponseWriter, code int, reason metav1.StatusReason, msg string) {
	writeJSON(w, code, metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: "Failure", Code: int32(code), Reason: reason, Message: msg})
}

func notFound(w http.ResponseWriter) {
	status(w, http.StatusNotFound, metav1.StatusReasonNotFound, "the server could not find the requested resource")
}

func (s *Server) served(gv string) bool { return s.Served == nil || s.Served[gv] }

// ServeHTTP serves the API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests++
	switch r.URL.Path {
	case "/version":
		writeJSON(w, 200, map[string]string{"major": "1", "minor": "32", "gitVersion": "v1.32.0", "platform": "linux/amd64"})
		return
	case "/api":
		writeJSON(w, 200, map[string]any{"kind": "APIVersions", "versions": []string{"v1"},
			"serverAddressByClientCIDRs": []any{map[string]string{"clientCIDR": "0.0.0.0/0", "serverAddress": r.Host}}})
		return
	case "/apis":
		writeJSON(w, 200, s.groups())
		return
	case "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews":
		if r.Method == http.MethodPost {
			s.accessReview(w, r)
			return
		}
	}
	p := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	var gv string
	switch {
	case len(p) >= 2 && p[0] == "api":
		gv, p = p[1], p[2:]
	case len(p) >= 3 && p[0] == "apis":
		gv, p = p[1]+"/"+p[2], p[3:]
	default:
		notFound(w)
		return
	}
	if !s.served(gv) {
		notFound(w)
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
		if Resources[i].GroupVersion() == gv && Resources[i].Name == p[0] {
			res = &Resources[i]
		}
	}
	if res == nil {
		notFound(w)
		return
	}
	switch {
	case res.Kind == "Deployment" && len(p) == 2 && r.Method == http.MethodPatch:
		s.patch(w, r, ns, p[1])
	case res.Kind == "Deployment" && len(p) == 3 && p[2] == "scale" && (r.Method == http.MethodGet || r.Method == http.MethodPut):
		s.scale(w, r, ns, p[1])
	case r.Method != http.MethodGet:
		status(w, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed, "this test server writes only deployment patches and scales")
	case len(p) == 1:
		s.listPage(w, r, res, ns)
	case len(p) == 2:
		o := s.get(res, ns, p[1])
		if o == nil {
			status(w, 404, metav1.StatusReasonNotFound, fmt.Sprintf("%s %q not found", res.Name, p[1]))
			return
		}
		if wantsTable(r.Header.Get("Accept")) {
			if t, ok := table(res.Kind, []any{o}, time.Now()); ok {
				writeJSON(w, 200, t)
				return
			}
		}
		writeJSON(w, 200, o)
	case len(p) == 3 && res.Kind == "Pod" && gv == "v1" && p[2] == "log":
		s.logs(w, r, ns, p[1])
	default:
		notFound(w)
	}
}

func (s *Server) groups() map[string]any {
	var groups []any
	index := map[string]int{}
	for _, r := range Resources {
		if r.Group == "" || !s.served(r.GroupVersion()) {
			continue
		}
		gv := map[string]string{"groupVersion": r.GroupVersion(), "version": r.Version}
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
		if r.GroupVersion() != gv {
			continue
		}
		rs = append(rs, map[string]any{"name": r.Name, "singularName": strings.ToLower(r.Kind), "namespaced": r.Namespaced,
			"kind": r.Kind, "verbs": []string{"get", "list"}, "shortNames": r.ShortNames})
		if r.Name == "pods" && gv == "v1" {
			rs = append(rs, map[string]any{"name": "pods/log", "singularName": "", "namespaced": true, "kind": "Pod", "verbs": []string{"get"}})
		}
	}
	if rs == nil {
		notFound(w)
		return
	}
	writeJSON(w, 200, map[string]any{"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": rs})
}

// answer is one object as answered.
type answer struct {
	m      map[string]any
	labels labels.Set
}

func (o answer) meta() map[string]any {
	m, _ := o.m["metadata"].(map[string]any)
	return m
}

// list returns the objects of a resource in ns ("" for all), labelled
// with the resource's group/version.
func (s *Server) list(res *Resource, ns string) []answer {
	var out []answer
	add := func(m map[string]any) {
		md, _ := m["metadata"].(map[string]any)
		if res.Namespaced && ns != "" && str(md, "namespace") != ns {
			return
		}
		lbl := labels.Set{}
		if l, ok := md["labels"].(map[string]any); ok {
			for k, v := range l {
				lbl[k], _ = v.(string)
			}
		}
		c := make(map[string]any, len(m))
		for k, v := range m {
			c[k] = v
		}
		c["apiVersion"] = res.GroupVersion()
		out = append(out, answer{m: c, labels: lbl})
	}
	if res.Kind == "Namespace" {
		held := map[string]map[string]any{}
		for _, o := range s.objects["Namespace"] {
			held[o.name()] = o.m
		}
		for _, n := range s.namespaces() {
			m := held[n]
			if m == nil {
				m = map[string]any{"kind": "Namespace", "apiVersion": "v1", "metadata": map[string]any{"name": n}, "status": map[string]any{"phase": "Active"}}
			}
			add(m)
		}
		return out
	}
	gv := schemaOf(res.GroupVersion())
	for _, o := range s.objects[res.Kind] {
		switch {
		case schemaOf(o.gv) == gv:
			add(o.m)
		case res.Kind == "Event" && gv == "v1" && o.core != nil:
			add(o.core)
		}
	}
	return out
}

// namespaces are those of Namespace objects, of the dump's folders and of
// the objects (events aside), as a bundle reads them.
func (s *Server) namespaces() []string {
	set := map[string]bool{}
	for _, n := range s.nsDirs {
		set[n] = true
	}
	for kind, objs := range s.objects {
		for _, o := range objs {
			switch {
			case kind == "Namespace":
				set[o.name()] = true
			case kind != "Event" && o.namespace() != "":
				set[o.namespace()] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

func (s *Server) get(res *Resource, ns, name string) map[string]any {
	for _, o := range s.list(res, ns) {
		if str(o.meta(), "name") == name {
			return o.m
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

// listPage answers a list with one page of the matching objects (limit
// and continue, the continue token an offset), or a Table of them.
func (s *Server) listPage(w http.ResponseWriter, r *http.Request, res *Resource, ns string) {
	q := r.URL.Query()
	sel, err := labels.Parse(q.Get("labelSelector"))
	if err != nil {
		status(w, 400, metav1.StatusReasonBadRequest, err.Error())
		return
	}
	items := []any{}
	for _, o := range s.list(res, ns) {
		if sel.Matches(o.labels) && matchFields(o.m, q.Get("fieldSelector")) {
			items = append(items, o.m)
		}
	}
	off, _ := strconv.Atoi(q.Get("continue"))
	off = min(max(off, 0), len(items))
	limit, _ := strconv.Atoi(q.Get("limit"))
	if s.PageSize > 0 && (limit <= 0 || limit > s.PageSize) {
		limit = s.PageSize
	}
	end := len(items)
	if limit > 0 {
		end = min(off+limit, len(items))
	}
	cont := ""
	if end < len(items) {
		cont = strconv.Itoa(end)
	}
	items = items[off:end]
	if wantsTable(r.Header.Get("Accept")) {
		if t, ok := table(res.Kind, items, time.Now()); ok {
			t["metadata"].(map[string]any)["continue"] = cont
			writeJSON(w, 200, t)
			return
		}
	}
	writeJSON(w, 200, map[string]any{"kind": res.Kind + "List", "apiVersion": res.GroupVersion(),
		"metadata": map[string]any{"resourceVersion": "1", "continue": cont}, "items": items})
}

// patch records a deployment's PATCH body.
func (s *Server) patch(w http.ResponseWriter, r *http.Request, ns, name string) {
	if s.get(&Resource{Kind: "Deployment", Group: "apps", Version: "v1", Namespaced: true}, ns, name) == nil {
		status(w, 404, metav1.StatusReasonNotFound, fmt.Sprintf("deployments.apps %q not found", name))
		return
	}
	b, _ := io.ReadAll(r.Body)
	s.Patches = append(s.Patches, r.Header.Get("Content-Type")+" "+string(b))
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"kind":"Deployment","apiVersion":"apps/v1","metadata":{"name":%q,"namespace":%q}}`, name, ns)
}

// scale answers a deployment's scale subresource and records updates.
func (s *Server) scale(w http.ResponseWriter, r *http.Request, ns, name string) {
	if s.get(&Resource{Kind: "Deployment", Group: "apps", Version: "v1", Namespaced: true}, ns, name) == nil {
		status(w, 404, metav1.StatusReasonNotFound, fmt.Sprintf("deployments.apps %q not found", name))
		return
	}
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
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"kind":"Scale","apiVersion":"autoscaling/v1","metadata":{"name":%q,"namespace":%q},"spec":{"replicas":1},"status":{"replicas":1}}`, name, ns)
}

// logs serves kubernetes/<ns>/<pod>/logs.txt (the cluster-info dump's
// sections per container) and logs-<container>-previous.txt; the container
// defaults to the pod's first. sinceTime filters by the lines' own
// timestamps (kubelet's), keeping untimed lines; limitBytes cuts.
func (s *Server) logs(w http.ResponseWriter, r *http.Request, ns, pod string) {
	q := r.URL.Query()
	c := q.Get("container")
	po := s.get(&Resources[0], ns, pod)
	if c == "" && po != nil {
		if spec, ok := po["spec"].(map[string]any); ok {
			if cs, ok := spec["containers"].([]any); ok && len(cs) > 0 {
				m, _ := cs[0].(map[string]any)
				c = str(m, "name")
			}
		}
	}
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
		if errors.Is(err, fs.ErrNotExist) && po == nil {
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
		if n, err := strconv.Atoi(lb); err == nil && n >= 0 && n < len(text) {
			text = text[:n]
		}
	}
	w.Header().Set("Content-Type", "text/plain")
	_, _ = w.Write([]byte(text))
}
