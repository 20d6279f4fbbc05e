package kubetext_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/evidence/kubetext"
)

// Forms recorded tool outputs are full of, printed by real kubectl from
// testdata/cluster (goldens in testdata/transcripts-forms): tables without
// their header (--no-headers), kubectl's own warning before a table (the
// short name "ev" is ambiguous on servers that serve events.k8s.io), and
// the logs of every container of one pod, and a pod table with its labels
// and no header (`kubectl get -A --show-labels -o wide pod`, filtered).

var formCommands = []string{
	"kubectl get ev -A",
	"kubectl get events -n shop --no-headers",
	"kubectl get pods -n shop --no-headers",
	"kubectl get pods -A -o wide --no-headers",
	"kubectl logs checkout-6d8f9c7b5-x2x9k -n shop --all-containers",
	"kubectl get -A --show-labels -o wide pod --no-headers",
}

// checkForms parses a transcript of formCommands: nothing skipped, every
// object and event read sound against the source, the warning kept as
// text.
func checkForms(t *testing.T, text []byte, capturedAt time.Time) {
	t.Helper()
	s, res := parseAgainst(t, "testdata/cluster", text, capturedAt)
	pods := 0
	for _, o := range res.Objects {
		p, ok := o.(*corev1.Pod)
		if !ok {
			t.Errorf("%T read", o)
			continue
		}
		pods++
		src := find(s.Objects("Pod"), p.Namespace, p.Name)
		if src == nil {
			t.Errorf("pod %s/%s: not in the source objects", p.Namespace, p.Name)
			continue
		}
		// a table row names no container: its one status (READY 1/1,
		// RESTARTS) stands for the pod's only container
		q := p.DeepCopy()
		q.Status.ContainerStatuses = nil
		checkSound(t, "Pod/"+p.Name, toJSONMap(t, q), canonical(t, src), capturedAt)
		if p.Annotations[kubetext.SourceAnnotation] != "get-wide" || p.Status.PodIP == "" && p.Name != "report-28511430-7xk2p" || len(p.Labels) == 0 {
			t.Errorf("pod %s/%s: the -o wide row not read: %+v", p.Namespace, p.Name, p.Status)
		}
	}
	if want := len(s.Objects("Pod")); pods != want {
		t.Errorf("%d pods read, want %d", pods, want)
	}
	evs := s.Objects("Event")
	for _, e := range res.Events {
		var src map[string]any
		for _, o := range evs {
			io, _ := o["involvedObject"].(map[string]any)
			if o["reason"] == e.Reason && io["name"] == e.InvolvedObject.Name && o["message"] == e.Message {
				src = o
			}
		}
		if src == nil {
			t.Errorf("event %s %s/%s: not in the source", e.Reason, e.InvolvedObject.Kind, e.InvolvedObject.Name)
			continue
		}
		if io, _ := src["involvedObject"].(map[string]any); io["kind"] != e.InvolvedObject.Kind || io["namespace"] != nil && io["namespace"] != e.InvolvedObject.Namespace {
			t.Errorf("event %s: object %+v, want %v", e.Reason, e.InvolvedObject, io)
		}
	}
	// get ev -A: every event; --no-headers -n shop: the shop ones, merged
	shop := 0
	for _, o := range evs {
		if m, _ := o["metadata"].(map[string]any); m["namespace"] == "shop" {
			shop++
		}
	}
	if len(res.Events) != len(evs) || shop == 0 {
		t.Errorf("%d events read, want %d", len(res.Events), len(evs))
	}
	if len(res.Outputs) != 1 || !strings.HasPrefix(res.Outputs[0].Lines[0], `Warning: short name "ev"`) {
		t.Errorf("outputs %+v: want kubectl's warning kept as text", res.Outputs)
	}
	if len(res.Logs) != 1 || res.Logs[0].Pod != "checkout-6d8f9c7b5-x2x9k" || res.Logs[0].Container != "" || len(res.Logs[0].Lines) == 0 {
		t.Errorf("logs %+v: want the pod's, container unknown", res.Logs)
	}
}

func TestFormsGoldens(t *testing.T) {
	updateGolden(t, "transcripts-forms", "testdata/cluster", formCommands)
	checkGoldens(t, "transcripts-forms", 1, checkForms)
}

func TestKubectlMatchesFormsGoldens(t *testing.T) {
	matchKubectl(t, kubectlPath(t), "testdata/cluster", formCommands, checkForms)
}
