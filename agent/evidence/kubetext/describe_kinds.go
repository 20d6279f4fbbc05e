package kubetext

import (
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// apiVersions of the kinds read from text.
var apiVersions = map[string]string{
	"Pod": "v1", "Node": "v1", "Service": "v1", "PersistentVolumeClaim": "v1", "PersistentVolume": "v1",
	"Namespace": "v1", "Endpoints": "v1", "ConfigMap": "v1", "Secret": "v1", "Event": "v1",
	"ResourceQuota": "v1", "LimitRange": "v1",
	"Deployment": "apps/v1", "ReplicaSet": "apps/v1", "StatefulSet": "apps/v1", "DaemonSet": "apps/v1",
	"Job": "batch/v1", "CronJob": "batch/v1", "Ingress": "networking.k8s.io/v1",
	"HorizontalPodAutoscaler": "autoscaling/v2", "StorageClass": "storage.k8s.io/v1",
	"NetworkPolicy": "networking.k8s.io/v1", "PodDisruptionBudget": "policy/v1", "ServiceAccount": "v1",
	"Role": "rbac.authorization.k8s.io/v1", "RoleBinding": "rbac.authorization.k8s.io/v1",
	"ClusterRole": "rbac.authorization.k8s.io/v1", "ClusterRoleBinding": "rbac.authorization.k8s.io/v1",
}

// clusterScoped kinds have no namespace.
var clusterScoped = map[string]bool{"Node": true, "PersistentVolume": true, "Namespace": true, "StorageClass": true,
	"ClusterRole": true, "ClusterRoleBinding": true}

// describers map a kind to the function reading its describe page.
var describers map[string]func(p *parser, root *dnode, meta metav1.ObjectMeta) (runtime.Object, bool)

func (p *parser) describe(c *command, out []string, first int) {
	ts := c.targets()
	kind := ""
	if len(ts) > 0 {
		kind = ts[0].kind
		for _, t := range ts[1:] {
			if t.kind != kind {
				kind = ""
			}
		}
	}
	if kind == "" {
		if p.keepUnknown(c, out, first-1) {
			why := "describe of a kind not read (kept as text)"
			for _, t := range ts {
				if t.kind != "" {
					why = "describe of mixed resource kinds (kept as text)"
				}
			}
			p.skip(first-1, c.text, why)
			return
		}
		p.skip(first-1, c.text, "describe of an unknown or mixed resource kind")
		return
	}
	fn := describers[kind]
	if pageFn := pageDescribers[kind]; pageFn != nil {
		p.describePages(c, out, first, kind, pageFn)
		return
	}
	if fn == nil {
		p.skip(first-1, c.text, "describe "+strings.ToLower(kind)+" is not read")
		return
	}
	pages, starts := splitPages(out)
	if len(pages) == 0 {
		if c.piped && len(ts) == 1 && ts[0].name != "" && p.describeTail(c, kind, ts[0].name, out) {
			return
		}
		if p.keepUnknown(c, out, first-1) {
			p.skip(first-1, c.text, "no \"Name:\" line in the describe output (kept as text)")
			return
		}
		p.skip(first-1, c.text, "no \"Name:\" line in the describe output")
		return
	}
	for i, pg := range pages {
		root := parseDescribe(pg, first+starts[i])
		meta := p.objectMeta(root, kind, c)
		obj, ok := fn(p, root, meta)
		if !ok {
			p.skip(first+starts[i], c.text, "describe page not understood")
			continue
		}
		p.describeEvents(root, kind, meta)
		p.add(kind, meta.Namespace, meta.Name, "describe", obj)
	}
}

// pageDescribers read kinds whose pages hold free text (config map data):
// they get the page's lines too. Pages start at a "Name:" line followed by
// "Namespace:", so that data lines cannot start a page.
var pageDescribers = map[string]func(p *parser, root *dnode, meta metav1.ObjectMeta, page []string) (runtime.Object, bool){
	"ConfigMap":     describeConfigMap,
	"Secret":        describeSecret,
	"ResourceQuota": describeResourceQuota,
	"LimitRange":    describeLimitRange,
}

func (p *parser) describePages(c *command, out []string, first int, kind string, fn func(*parser, *dnode, metav1.ObjectMeta, []string) (runtime.Object, bool)) {
	var starts []int
	for i, l := range out {
		if strings.HasPrefix(l, "Name:") && i+1 < len(out) && strings.HasPrefix(out[i+1], "Namespace:") {
			starts = append(starts, i)
		}
	}
	if len(starts) == 0 {
		if p.keepUnknown(c, out, first-1) {
			p.skip(first-1, c.text, "no \"Name:\" line in the describe output (kept as text)")
			return
		}
		p.skip(first-1, c.text, "no \"Name:\" line in the describe output")
		return
	}
	for i, s := range starts {
		end := len(out)
		if i+1 < len(starts) {
			end = starts[i+1]
		}
		page := out[s:end]
		// The keys end where the data begins.
		head := page
		for j := 0; j+1 < len(page); j++ {
			if strings.TrimSpace(page[j]) == "Data" && strings.HasPrefix(page[j+1], "====") {
				head = page[:j]
				break
			}
		}
		root := parseDescribe(head, first+s)
		meta := p.objectMeta(root, kind, c)
		obj, ok := fn(p, root, meta, page)
		if !ok || meta.Name == "" {
			p.skip(first+s, c.text, "describe page not understood")
			continue
		}
		// Events follow the data: read them from the page's end.
		for j := len(page) - 1; j >= 0; j-- {
			if strings.HasPrefix(page[j], "Events:") {
				p.describeEvents(parseDescribe(page[j:], first+s+j), kind, meta)
				break
			}
		}
		p.add(kind, meta.Namespace, meta.Name, "describe", obj)
	}
}

// objectMeta reads the fields every describe page starts with.
func (p *parser) objectMeta(root *dnode, kind string, c *command) metav1.ObjectMeta {
	m := metav1.ObjectMeta{Name: root.get("Name")}
	if !clusterScoped[kind] {
		m.Namespace = root.get("Namespace")
		if m.Namespace == "" {
			m.Namespace = c.ns()
		}
	}
	m.Labels = labelMap(root.child("Labels").values())
	m.Annotations = annotationMap(annotationItems(root.child("Annotations")))
	if t, ok := parseDescribeTime(root.get("CreationTimestamp")); ok {
		m.CreationTimestamp = t
	}
	if cb := root.get("Controlled By"); cb != "" {
		if k, n, ok := strings.Cut(cb, "/"); ok {
			t := true
			m.OwnerReferences = []metav1.OwnerReference{{APIVersion: apiVersions[k], Kind: k, Name: n, Controller: &t}}
		}
	}
	return m
}

// describeEvents reads the "Events:" table of a page.
func (p *parser) describeEvents(root *dnode, kind string, meta metav1.ObjectMeta) {
	ev := root.child("Events")
	t := ev.table(MaxEvents)
	if t == nil || t.col("Reason") < 0 {
		return
	}
	var read []corev1.Event
	defer func() {
		for _, e := range read {
			p.addEvent(e)
		}
	}()
	for i, row := range t.rows {
		if typ := t.get(row, "Type"); typ != "Normal" && typ != "Warning" && t.col("Type") >= 0 && len(read) > 0 {
			// a later line of the last event's message
			read[len(read)-1].Message += "\n" + strings.TrimSpace(t.raw[i])
			continue
		}
		e := corev1.Event{
			ObjectMeta: metav1.ObjectMeta{Namespace: eventNamespace(meta.Namespace)},
			InvolvedObject: corev1.ObjectReference{Kind: kind, APIVersion: apiVersions[kind], Namespace: meta.Namespace,
				Name: meta.Name, UID: meta.UID},
			Type:    t.get(row, "Type"),
			Reason:  t.get(row, "Reason"),
			Message: t.get(row, "Message"),
		}
		from := t.get(row, "From")
		if comp, host, ok := strings.Cut(from, ", "); ok {
			e.Source = corev1.EventSource{Component: comp, Host: host}
		} else if !unset(from) {
			e.Source = corev1.EventSource{Component: from}
		}
		if last, firstAge, n, ok := eventAge(t.get(row, "Age", "Last Seen")); ok {
			e.LastTimestamp, e.FirstTimestamp, e.Count = p.before(last), p.before(firstAge), n
		} else {
			e.Count = 1
		}
		if e.Reason == "" {
			p.skip(t.lines[i], "", "event row without a reason")
			continue
		}
		read = append(read, e)
	}
}

// describeTail reads the end of a describe page a pipe kept (`kubectl
// describe pod x | tail -5`): when every line is a row of its Events table
// (or that table's header, or a later line of a row's message), the rows
// are the described object's events. A projection that kept the page's
// last fields before its Events table (`sed -n '/^Node-Selectors/,$p'`)
// is read from its "Events:" line on, unless those fields hold a table
// of state (a node's Conditions): its events read without the state that
// says whether they still hold would mislead, so the output stays text.
// It reports whether it read them.
func (p *parser) describeTail(c *command, kind, name string, out []string) bool {
	var read []corev1.Event
	ns := c.ns()
	if clusterScoped[kind] {
		ns = ""
	}
	for i, l := range out {
		if isDashes(strings.TrimSpace(l)) {
			break
		}
		if i > 0 && strings.TrimRight(l, " ") == "Events:" {
			out = out[i:]
			break
		}
	}
	for _, l := range out {
		t := strings.TrimSpace(l)
		if t == "" || isDashes(t) || t == "Events:" {
			continue
		}
		f := splitRuns(t)
		if len(f) >= 5 && f[0] == "Type" && f[1] == "Reason" {
			continue // the table's header
		}
		if len(f) < 5 || f[0] != "Normal" && f[0] != "Warning" {
			if len(read) == 0 || len(read) > MaxEvents {
				return false
			}
			read[len(read)-1].Message += "\n" + t // a message's later line
			continue
		}
		last, firstAge, n, ok := eventAge(f[2])
		if !ok {
			return false
		}
		e := corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Namespace: eventNamespace(ns)},
			InvolvedObject: corev1.ObjectReference{Kind: kind, APIVersion: apiVersions[kind], Namespace: ns, Name: name},
			Type:           f[0], Reason: f[1], Message: strings.Join(f[4:], "  "),
			LastTimestamp: p.before(last), FirstTimestamp: p.before(firstAge), Count: n,
		}
		if comp, host, ok := strings.Cut(f[3], ", "); ok {
			e.Source = corev1.EventSource{Component: comp, Host: host}
		} else if !unset(f[3]) {
			e.Source = corev1.EventSource{Component: f[3]}
		}
		read = append(read, e)
	}
	if len(read) == 0 || len(read) > MaxEvents {
		return false
	}
	for _, e := range read {
		p.addEvent(e)
	}
	return true
}

// eventNamespace is where an object's events live: its namespace, or
// "default" for cluster-scoped objects.
func eventNamespace(ns string) string {
	if ns == "" {
		return "default"
	}
	return ns
}

func atoi32(s string) (int32, bool) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 32)
	return int32(n), err == nil
}

func ptr[T any](v T) *T { return &v }
