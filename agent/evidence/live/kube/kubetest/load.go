package kubetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/rootcause/rootcause/agent/evidence"
)

// object is one stored object.
type object struct {
	gv string         // the group/version it was written at
	m  map[string]any // as written, times shifted
	// core is the core/v1 form of an events.k8s.io event.
	core map[string]any
}

func (o object) meta() map[string]any {
	m, _ := o.m["metadata"].(map[string]any)
	return m
}

func (o object) name() string      { return str(o.meta(), "name") }
func (o object) namespace() string { return str(o.meta(), "namespace") }

// dumpKinds are the files of a cluster-info dump, by the kind their items
// have when they do not say.
var dumpKinds = map[string]string{"pods.json": "Pod", "events.json": "Event", "deployments.json": "Deployment",
	"replicasets.json": "ReplicaSet", "daemonsets.json": "DaemonSet", "services.json": "Service", "nodes.json": "Node",
	"replication-controllers.json": "ReplicationController"}

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
	root := filepath.Join(s.Dir, "kubernetes")
	seen := map[string]bool{}
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if ext := filepath.Ext(p); ext != ".json" && ext != ".yaml" && ext != ".yml" {
			return nil
		}
		hint := dumpKinds[filepath.Base(p)]
		rel, _ := filepath.Rel(root, p)
		if dir := filepath.Dir(rel); dir != "." && !strings.Contains(dir, string(filepath.Separator)) && hint != "" && !seen[dir] {
			seen[dir] = true
			s.nsDirs = append(s.nsDirs, dir)
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		dec := yaml.NewYAMLOrJSONDecoder(f, 4096)
		for {
			var doc map[string]any
			err := dec.Decode(&doc)
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			if doc != nil {
				s.addDoc(shiftTimes(doc, shift).(map[string]any), hint)
			}
		}
	})
}

// addDoc adds an object or the items of a list; items take the list's
// kind and apiVersion when they have none, or the kind of the dump file
// they are in (hint).
func (s *Server) addDoc(doc map[string]any, hint string) {
	kind, _ := doc["kind"].(string)
	items, ok := doc["items"].([]any)
	if !ok {
		s.add(doc, kind, "")
		return
	}
	itemKind := strings.TrimSuffix(kind, "List")
	if itemKind == "" {
		itemKind = hint
	}
	listAV, _ := doc["apiVersion"].(string)
	for _, it := range items {
		if m, ok := it.(map[string]any); ok {
			s.add(m, itemKind, listAV)
		}
	}
}

// add stores an object under its kind and the version it was written at;
// a version the server does not serve for the kind (or none) becomes the
// kind's preferred one.
func (s *Server) add(m map[string]any, kind, av string) {
	if k, _ := m["kind"].(string); k != "" {
		kind = k
	}
	if a, _ := m["apiVersion"].(string); a != "" {
		av = a
	}
	var known, preferred *Resource
	for i := range Resources {
		r := &Resources[i]
		if r.Kind != kind {
			continue
		}
		if preferred == nil {
			preferred = r
		}
		if r.GroupVersion() == av {
			known = r
		}
	}
	if preferred == nil {
		return
	}
	if known == nil {
		known = preferred
	}
	m["kind"], m["apiVersion"] = kind, known.GroupVersion()
	o := object{gv: known.GroupVersion(), m: m}
	if kind == "Event" && known.Group == "events.k8s.io" {
		var ev eventsv1.Event
		if decode(m, &ev) {
			o.core, _ = encode(evidence.EventFromV1(&ev))
		}
	}
	s.objects[kind] = append(s.objects[kind], o)
}

// deriveEndpoints adds the Endpoints (and their EndpointSlices) the
// controllers would publish for the services that have none in the
// fixtures (a cluster-info dump holds none).
func (s *Server) deriveEndpoints() {
	have := map[string]bool{}
	for _, o := range s.objects["Endpoints"] {
		have[o.namespace()+"/"+o.name()] = true
	}
	sliced := map[string]bool{}
	for _, o := range s.objects["EndpointSlice"] {
		l, _ := o.meta()["labels"].(map[string]any)
		sliced[o.namespace()+"/"+str(l, "kubernetes.io/service-name")] = true
	}
	var svcs []corev1.Service
	var pods []corev1.Pod
	for _, o := range s.objects["Service"] {
		var v corev1.Service
		if decode(o.m, &v) && !have[v.Namespace+"/"+v.Name] {
			svcs = append(svcs, v)
		}
	}
	for _, o := range s.objects["Pod"] {
		var v corev1.Pod
		if decode(o.m, &v) {
			pods = append(pods, v)
		}
	}
	for _, ep := range evidence.DeriveEndpoints(svcs, pods) {
		ep.TypeMeta.Kind, ep.TypeMeta.APIVersion = "Endpoints", "v1"
		if m, ok := encode(ep); ok {
			s.objects["Endpoints"] = append(s.objects["Endpoints"], object{gv: "v1", m: m})
		}
		if sliced[ep.Namespace+"/"+ep.Name] {
			continue
		}
		// One EndpointSlice per subset, as the EndpointSlice controller
		// mirrors them.
		for i, ss := range ep.Subsets {
			var eps []any
			add := func(a corev1.EndpointAddress, ready bool) {
				e := map[string]any{"addresses": []any{a.IP}, "conditions": map[string]any{"ready": ready}}
				if a.TargetRef != nil {
					e["targetRef"] = map[string]any{"kind": a.TargetRef.Kind, "namespace": a.TargetRef.Namespace, "name": a.TargetRef.Name}
				}
				if a.NodeName != nil {
					e["nodeName"] = *a.NodeName
				}
				eps = append(eps, e)
			}
			for _, a := range ss.Addresses {
				add(a, true)
			}
			for _, a := range ss.NotReadyAddresses {
				add(a, false)
			}
			var ports []any
			for _, p := range ss.Ports {
				ports = append(ports, map[string]any{"name": p.Name, "port": p.Port, "protocol": string(p.Protocol)})
			}
			s.objects["EndpointSlice"] = append(s.objects["EndpointSlice"], object{gv: "discovery.k8s.io/v1", m: map[string]any{
				"kind": "EndpointSlice", "apiVersion": "discovery.k8s.io/v1",
				"metadata": map[string]any{"name": ep.Name + "-" + string(rune('a'+i%26)), "namespace": ep.Namespace,
					"labels": map[string]any{"kubernetes.io/service-name": ep.Name, "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"}},
				"addressType": "IPv4", "endpoints": eps, "ports": ports,
			}})
		}
	}
}

func str(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

func decode(m map[string]any, v any) bool {
	b, err := json.Marshal(m)
	return err == nil && json.Unmarshal(b, v) == nil
}

func encode(v any) (map[string]any, bool) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, false
	}
	var m map[string]any
	return m, json.Unmarshal(b, &m) == nil
}
