package kubetext

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/rootcause/rootcause/agent/evidence"
)

// eventsTable reads the tables of kubectl events and kubectl get events:
//
//	kubectl events:               [NAMESPACE] LAST SEEN TYPE REASON OBJECT MESSAGE
//	kubectl get events (>=1.14):  [NAMESPACE] LAST SEEN TYPE REASON OBJECT MESSAGE
//	  -o wide adds SUBOBJECT SOURCE FIRST SEEN COUNT NAME
//	older kubectl get events:     LAST SEEN FIRST SEEN COUNT NAME KIND SUBOBJECT TYPE REASON SOURCE MESSAGE
func (p *parser) eventsTable(c *command, out []string, first int) {
	t := parseTable(out, first, MaxEvents)
	if t == nil || t.col("REASON") < 0 {
		if ht := headerless(c, "Event", out, first, MaxEvents); ht != nil {
			t = ht
			if c.piped {
				p.skip(first, c.text, "the table header was filtered out: the columns of kubectl's events table are assumed")
			}
		}
	}
	if t == nil || t.col("REASON") < 0 || t.col("MESSAGE") < 0 {
		p.skip(first-1, c.text, "no REASON and MESSAGE columns in the events table")
		return
	}
	if t.cut {
		p.skip(first-1, c.text, fmt.Sprintf("more than %d rows: the rest are dropped", MaxEvents))
	}
	// kubectl events prints a message that holds newlines as it is: its
	// later lines follow the row, in no column. An event's type is Normal
	// or Warning (the API server accepts no other), so a line whose TYPE
	// cell is neither, after an event, continues its message.
	var read []corev1.Event
	defer func() {
		for _, e := range read {
			p.addEvent(e)
		}
	}()
	for i, row := range t.rows {
		if typ := t.get(row, "TYPE"); typ != "Normal" && typ != "Warning" && t.col("TYPE") >= 0 && len(read) > 0 {
			read[len(read)-1].Message += "\n" + strings.TrimSpace(t.raw[i])
			continue
		}
		e := corev1.Event{Type: t.get(row, "TYPE"), Reason: t.get(row, "REASON"), Message: t.get(row, "MESSAGE")}
		ns := t.get(row, "NAMESPACE")
		if ns == "" {
			ns = c.ns()
		}
		obj := t.get(row, "OBJECT")
		kind, name, ok := strings.Cut(obj, "/")
		if !ok {
			// old columns: NAME is the event's name, KIND the object's kind.
			kind, name = t.get(row, "KIND"), t.get(row, "NAME")
			if i := strings.Index(name, "."); i > 0 && t.col("KIND") >= 0 {
				name = name[:i]
			}
		}
		// OBJECT is "kind/name" with the kind as printed by kubectl:
		// "Pod", "pod", "deployment.apps"...
		if k := kindOf(kind); k != "" {
			kind = k
		} else if k := kindOf(strings.SplitN(kind, ".", 2)[0]); k != "" {
			kind = k
		}
		if e.Reason == "" || name == "" {
			p.skip(t.lines[i], c.text, "event row without a reason or object")
			continue
		}
		objNS := ns
		if clusterScoped[kind] {
			objNS = ""
		}
		e.Namespace = ns
		e.InvolvedObject = corev1.ObjectReference{Kind: kind, APIVersion: apiVersions[kind], Namespace: objNS, Name: name,
			FieldPath: t.get(row, "SUBOBJECT")}
		if src := t.get(row, "SOURCE"); !unset(src) {
			comp, host, _ := strings.Cut(src, ", ")
			e.Source = corev1.EventSource{Component: comp, Host: host}
		}
		if last, firstAge, n, ok := eventAge(t.get(row, "LAST SEEN", "LASTSEEN")); ok {
			e.LastTimestamp, e.FirstTimestamp, e.Count = p.before(last), p.before(firstAge), n
			if f, ok := parseAge(t.get(row, "FIRST SEEN", "FIRSTSEEN")); ok {
				e.FirstTimestamp = p.before(f)
			}
		}
		if n, ok := atoi32(t.get(row, "COUNT")); ok && n > 0 {
			e.Count = n
		}
		if e.Count == 0 {
			e.Count = 1
		}
		if e.LastTimestamp.IsZero() {
			e.LastTimestamp = metav1.Time{}
		}
		read = append(read, e)
	}
}

// structuredEvent records an event decoded from YAML or JSON, either API.
func (p *parser) structuredEvent(obj runtime.Object) {
	switch e := obj.(type) {
	case *corev1.Event:
		evidence.NormalizeEvent(e)
		p.addEvent(*e)
	case *eventsv1.Event:
		p.addEvent(evidence.EventFromV1(e))
	}
}
