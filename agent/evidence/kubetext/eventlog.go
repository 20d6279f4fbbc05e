package kubetext

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// Events outlive their hour in the API server only where something keeps
// them: an event exporter (kubernetes-event-exporter, eventrouter, a
// fluent-bit kubernetes_events input) writes each one to its log as a line
// of JSON, and an operator reads that log with kubectl logs, often through
// jq, or from the log store it is shipped to (Loki's logcli query). exportedEvents reads such a log's lines as events, besides the log:
//
//   - the Event object as the API serves it, core/v1 (involvedObject,
//     reason, message, lastTimestamp) or events.k8s.io/v1 (regarding,
//     note, eventTime);
//   - the same wrapped in {"verb": "ADDED", "event": {...}} (eventrouter);
//   - a projection a jq filter made of it: a reason, a message ("message",
//     "msg", "note") and the object as "Kind/name" ("obj", "object",
//     "involvedObject") or as "kind" and "name" keys, with optional
//     namespace ("namespace", "ns"), time ("lastTimestamp", "t", "ts",
//     "time", "timestamp", "eventTime", "firstTimestamp"), source ("src",
//     "source", "component", "reportingComponent") and type.
//
// Lines that are no event (the exporter's own messages) are left alone.
// lokiPrefixRe is the time and stream label set logcli query prints before
// each entry; logQueryRe a log store's query command whose output is the
// entries of a stream (Loki's logcli).
var (
	lokiPrefixRe = regexp.MustCompile(`^(?:\S+\s+)?\{[A-Za-z_][\w.]*=~?"[^"]*"(?:,\s*[A-Za-z_][\w.]*=~?"[^"]*")*\}\s+`)
	logQueryRe   = regexp.MustCompile(`^\s*logcli\s+(?:query|instant-query)\b`)
)

func (p *parser) exportedEvents(out []string) {
	for _, l := range out {
		t := strings.TrimSpace(l)
		if !strings.HasSuffix(t, "}") {
			continue
		}
		// Loki's logcli prints each entry after its time and stream
		// labels: 2026-11-27T02:19:40Z {app="event-exporter"} {...}.
		if m := lokiPrefixRe.FindString(t); m != "" {
			t = t[len(m):]
		}
		// kubectl logs --timestamps and --prefix put a field before
		// the object.
		i := strings.IndexByte(t, '{')
		if i < 0 || i > 0 && strings.Count(strings.TrimSpace(t[:i]), " ") > 1 {
			continue
		}
		var m map[string]any
		if json.Unmarshal([]byte(t[i:]), &m) != nil {
			continue
		}
		if e, ok := eventFromJSON(m, 0); ok {
			evidence.NormalizeEvent(&e)
			n := len(p.res.Events)
			p.addEvent(e)
			if len(p.res.Events) > n && e.InvolvedObject.Namespace == "" {
				p.exported = append(p.exported, n)
			}
		}
	}
}

// eventFromJSON reads one exported event in any of the forms exportedEvents
// lists.
func eventFromJSON(m map[string]any, depth int) (corev1.Event, bool) {
	if inner, ok := m["event"].(map[string]any); ok && depth == 0 {
		return eventFromJSON(inner, depth+1)
	}
	_, involved := m["involvedObject"].(map[string]any)
	_, regarding := m["regarding"].(map[string]any)
	if involved || regarding {
		b, err := json.Marshal(m)
		if err != nil {
			return corev1.Event{}, false
		}
		var e corev1.Event
		if regarding {
			var v1 eventsv1.Event
			if json.Unmarshal(b, &v1) != nil {
				return e, false
			}
			e = evidence.EventFromV1(&v1)
		} else if json.Unmarshal(b, &e) != nil {
			return e, false
		}
		if e.Namespace == "" {
			e.Namespace = e.InvolvedObject.Namespace
		}
		return e, e.Reason != "" && e.InvolvedObject.Name != ""
	}
	reason := jsonString(m, "reason", "Reason")
	msg := jsonString(m, "message", "msg", "note", "Message")
	kind, name := "", ""
	if ref := jsonString(m, "obj", "object", "involvedObject", "regarding"); ref != "" {
		k, n, ok := strings.Cut(ref, "/")
		if !ok {
			return corev1.Event{}, false
		}
		kind, name = k, n
		// "Kind/namespace/name"
		if ns, n2, ok := strings.Cut(n, "/"); ok {
			if _, set := m["namespace"]; !set {
				m["namespace"] = ns
			}
			name = n2
		}
	} else {
		kind, name = jsonString(m, "kind", "Kind"), jsonString(m, "name", "Name")
	}
	if k := kindOf(kind); k != "" {
		kind = k
	}
	if reason == "" || msg == "" || kind == "" || name == "" {
		return corev1.Event{}, false
	}
	ns := jsonString(m, "namespace", "ns")
	e := corev1.Event{
		TypeMeta:       metav1.TypeMeta{Kind: "Event", APIVersion: "v1"},
		ObjectMeta:     metav1.ObjectMeta{Namespace: ns},
		InvolvedObject: corev1.ObjectReference{Kind: kind, Name: name, Namespace: ns},
		Reason:         reason,
		Message:        msg,
		Type:           jsonString(m, "type", "Type"),
		Source:         corev1.EventSource{Component: jsonString(m, "src", "source", "component", "reportingComponent")},
	}
	for _, k := range []string{"lastTimestamp", "t", "ts", "time", "timestamp", "eventTime", "firstTimestamp"} {
		if s := jsonString(m, k); s != "" {
			if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
				e.LastTimestamp = metav1.NewTime(t.UTC())
				e.FirstTimestamp = e.LastTimestamp
				break
			}
		}
	}
	return e, true
}

// jsonString is the first of keys that holds a string.
func jsonString(m map[string]any, keys ...string) string {
	for _, k := range keys {
		if s, ok := m[k].(string); ok && s != "" {
			return s
		}
	}
	return ""
}

// placeExportedEvents gives an exported event that carries no namespace
// (a jq projection dropped it) the namespace of its object as the
// transcript shows it: the object itself, or for a pod the Job, ReplicaSet,
// StatefulSet or DaemonSet its name derives from. An object found in
// several namespaces leaves the event without one.
func (p *parser) placeExportedEvents() {
	if len(p.exported) == 0 {
		return
	}
	owners := map[string][]string{"Pod": {"Pod", "Job", "ReplicaSet", "StatefulSet", "DaemonSet", "Deployment", "CronJob"}}
	for _, i := range p.exported {
		e := &p.res.Events[i]
		kinds := owners[e.InvolvedObject.Kind]
		if kinds == nil {
			kinds = []string{e.InvolvedObject.Kind}
		}
		nss := map[string]bool{}
		for k := range p.objs {
			if k.ns == "" || !slices.Contains(kinds, k.kind) {
				continue
			}
			if k.name == e.InvolvedObject.Name || k.kind != e.InvolvedObject.Kind && strings.HasPrefix(e.InvolvedObject.Name, k.name+"-") {
				nss[k.ns] = true
			}
		}
		if len(nss) != 1 {
			continue
		}
		for ns := range nss {
			e.Namespace, e.InvolvedObject.Namespace = ns, ns
		}
	}
}
