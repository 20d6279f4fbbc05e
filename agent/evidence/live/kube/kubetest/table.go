package kubetest

import (
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/duration"
)

// This file answers kubectl get with meta.k8s.io/v1 Tables, as the API
// server does (kubectl prints the columns the server sends). The columns
// and cells follow kube-apiserver's printers (pkg/printers/internalversion)
// for the kinds here; kubectl formats them.

type column struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Format   string `json:"format"`
	Priority int    `json:"priority"`
}

type row struct {
	Cells  []any          `json:"cells"`
	Object map[string]any `json:"object"`
}

// wantsTable reports whether the request asks for a Table.
func wantsTable(accept string) bool {
	return strings.Contains(accept, "as=Table")
}

// age is translateTimestampSince.
func age(t time.Time, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t))
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// table converts a list of objects of a kind; ok is false for kinds it
// has no printer for.
func table(kind string, items []any, now time.Time) (map[string]any, bool) {
	var cols []column
	var rows []row
	add := func(o map[string]any, cells ...any) { rows = append(rows, row{Cells: cells, Object: o}) }
	name := column{Name: "Name", Type: "string", Format: "name"}
	ageCol := column{Name: "Age", Type: "string"}
	switch kind {
	case "Pod":
		cols = []column{name, {Name: "Ready", Type: "string"}, {Name: "Status", Type: "string"}, {Name: "Restarts", Type: "string"}, ageCol,
			{Name: "IP", Type: "string", Priority: 1}, {Name: "Node", Type: "string", Priority: 1},
			{Name: "Nominated Node", Type: "string", Priority: 1}, {Name: "Readiness Gates", Type: "string", Priority: 1}}
		for _, it := range items {
			var p corev1.Pod
			m := it.(map[string]any)
			if !decode(m, &p) {
				continue
			}
			ready, total, reason, restarts := podCells(&p, now)
			add(m, p.Name, fmt.Sprintf("%d/%d", ready, total), reason, restarts, age(p.CreationTimestamp.Time, now),
				orNone(p.Status.PodIP), orNone(p.Spec.NodeName), orNone(p.Status.NominatedNodeName), "<none>")
		}
	case "ReplicaSet":
		cols = []column{name, {Name: "Desired", Type: "integer"}, {Name: "Current", Type: "integer"}, {Name: "Ready", Type: "integer"}, ageCol,
			{Name: "Containers", Type: "string", Priority: 1}, {Name: "Images", Type: "string", Priority: 1}, {Name: "Selector", Type: "string", Priority: 1}}
		for _, it := range items {
			var rs appsv1.ReplicaSet
			m := it.(map[string]any)
			if !decode(m, &rs) {
				continue
			}
			c, i := containersImages(rs.Spec.Template.Spec.Containers)
			add(m, rs.Name, replicas(rs.Spec.Replicas), rs.Status.Replicas, rs.Status.ReadyReplicas, age(rs.CreationTimestamp.Time, now), c, i, selector(rs.Spec.Selector.MatchLabels))
		}
	case "Deployment":
		cols = []column{name, {Name: "Ready", Type: "string"}, {Name: "Up-to-date", Type: "string"}, {Name: "Available", Type: "string"}, ageCol,
			{Name: "Containers", Type: "string", Priority: 1}, {Name: "Images", Type: "string", Priority: 1}, {Name: "Selector", Type: "string", Priority: 1}}
		for _, it := range items {
			var d appsv1.Deployment
			m := it.(map[string]any)
			if !decode(m, &d) {
				continue
			}
			c, i := containersImages(d.Spec.Template.Spec.Containers)
			var sel map[string]string
			if d.Spec.Selector != nil {
				sel = d.Spec.Selector.MatchLabels
			}
			add(m, d.Name, fmt.Sprintf("%d/%d", d.Status.ReadyReplicas, replicas(d.Spec.Replicas)), d.Status.UpdatedReplicas, d.Status.AvailableReplicas,
				age(d.CreationTimestamp.Time, now), c, i, selector(sel))
		}
	case "Event":
		cols = []column{{Name: "Last Seen", Type: "string"}, {Name: "Type", Type: "string"}, {Name: "Reason", Type: "string"},
			{Name: "Object", Type: "string"}, {Name: "Subobject", Type: "string", Priority: 1}, {Name: "Source", Type: "string", Priority: 1},
			{Name: "Message", Type: "string"}, {Name: "First Seen", Type: "string", Priority: 1}, {Name: "Count", Type: "string", Priority: 1},
			{Name: "Name", Type: "string", Priority: 1}}
		for _, it := range items {
			var e corev1.Event
			m := it.(map[string]any)
			if !decode(m, &e) {
				continue
			}
			first, last := e.FirstTimestamp.Time, e.LastTimestamp.Time
			if first.IsZero() {
				first = e.EventTime.Time
			}
			if last.IsZero() {
				last = first
			}
			lastSeen := age(last, now)
			if e.Count > 1 {
				lastSeen = fmt.Sprintf("%s (x%d over %s)", lastSeen, e.Count, age(first, now))
			}
			src := e.Source.Component
			if e.Source.Host != "" {
				src += ", " + e.Source.Host
			}
			add(m, lastSeen, e.Type, e.Reason, strings.ToLower(e.InvolvedObject.Kind)+"/"+e.InvolvedObject.Name, e.InvolvedObject.FieldPath,
				src, strings.TrimSpace(e.Message), age(first, now), fmt.Sprint(e.Count), e.Name)
		}
	default:
		var ok bool
		if cols, rows, ok = moreTables(kind, items, now); !ok {
			return nil, false
		}
	}
	if rows == nil {
		rows = []row{}
	}
	return map[string]any{"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": map[string]any{"resourceVersion": "1"},
		"columnDefinitions": cols, "rows": rows}, true
}

func replicas(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

func containersImages(cs []corev1.Container) (string, string) {
	var names, images []string
	for _, c := range cs {
		names = append(names, c.Name)
		images = append(images, c.Image)
	}
	return strings.Join(names, ","), strings.Join(images, ",")
}

func selector(m map[string]string) string {
	if len(m) == 0 {
		return "<none>"
	}
	var parts []string
	for k, v := range m {
		parts = append(parts, k+"="+v)
	}
	sortStrings(parts)
	return strings.Join(parts, ",")
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// podCells is printPod's READY, STATUS and RESTARTS.
func podCells(p *corev1.Pod, now time.Time) (ready, total int, reason, restarts string) {
	total = len(p.Spec.Containers)
	reason = string(p.Status.Phase)
	if p.Status.Reason != "" {
		reason = p.Status.Reason
	}
	n := 0
	var last time.Time
	note := func(cs corev1.ContainerStatus) {
		n += int(cs.RestartCount)
		if t := cs.LastTerminationState.Terminated; t != nil && t.FinishedAt.Time.After(last) {
			last = t.FinishedAt.Time
		}
	}
	initializing := false
	for i, cs := range p.Status.InitContainerStatuses {
		note(cs)
		switch {
		case cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0:
			continue
		case cs.State.Terminated != nil:
			if cs.State.Terminated.Reason == "" {
				if cs.State.Terminated.Signal != 0 {
					reason = fmt.Sprintf("Init:Signal:%d", cs.State.Terminated.Signal)
				} else {
					reason = fmt.Sprintf("Init:ExitCode:%d", cs.State.Terminated.ExitCode)
				}
			} else {
				reason = "Init:" + cs.State.Terminated.Reason
			}
			initializing = true
		case cs.State.Waiting != nil && cs.State.Waiting.Reason != "" && cs.State.Waiting.Reason != "PodInitializing":
			reason = "Init:" + cs.State.Waiting.Reason
			initializing = true
		default:
			reason = fmt.Sprintf("Init:%d/%d", i, len(p.Spec.InitContainers))
			initializing = true
		}
		break
	}
	if !initializing {
		n = 0
		last = time.Time{}
		for _, cs := range p.Status.InitContainerStatuses {
			note(cs)
		}
		hasRunning := false
		for i := len(p.Status.ContainerStatuses) - 1; i >= 0; i-- {
			cs := p.Status.ContainerStatuses[i]
			note(cs)
			switch {
			case cs.State.Waiting != nil && cs.State.Waiting.Reason != "":
				reason = cs.State.Waiting.Reason
			case cs.State.Terminated != nil && cs.State.Terminated.Reason != "":
				reason = cs.State.Terminated.Reason
			case cs.State.Terminated != nil && cs.State.Terminated.Signal != 0:
				reason = fmt.Sprintf("Signal:%d", cs.State.Terminated.Signal)
			case cs.State.Terminated != nil:
				reason = fmt.Sprintf("ExitCode:%d", cs.State.Terminated.ExitCode)
			case cs.Ready && cs.State.Running != nil:
				hasRunning = true
				ready++
			}
		}
		if reason == "Completed" && hasRunning {
			reason = "Running"
		}
	}
	if p.DeletionTimestamp != nil {
		reason = "Terminating"
	}
	restarts = fmt.Sprint(n)
	if !last.IsZero() {
		restarts = fmt.Sprintf("%d (%s ago)", n, age(last, now))
	}
	return ready, total, reason, restarts
}
