package analyst

import (
	"fmt"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/finding"
)

// replicaSeries writes kube-state-metrics' available and desired replicas
// of one deployment, one sample a minute over two hours, with available at
// low from minute dipFrom to dipTo (exclusive; -1: no dip).
func replicaSeries(name string, start time.Time, desired, low, dipFrom, dipTo int) string {
	var b strings.Builder
	b.WriteString("# TYPE kube_deployment_status_replicas_available gauge\n")
	for m := 0; m < 120; m++ {
		v := desired
		if m >= dipFrom && m < dipTo {
			v = low
		}
		fmt.Fprintf(&b, "kube_deployment_status_replicas_available{namespace=\"pay\",deployment=%q} %d %d\n", name, v, start.Add(time.Duration(m)*time.Minute).Unix())
	}
	b.WriteString("# TYPE kube_deployment_spec_replicas gauge\n")
	for m := 0; m < 120; m++ {
		fmt.Fprintf(&b, "kube_deployment_spec_replicas{namespace=\"pay\",deployment=%q} %d %d\n", name, desired, start.Add(time.Duration(m)*time.Minute).Unix())
	}
	b.WriteString("# EOF\n")
	return b.String()
}

func deployment(name string, want, avail, updated, unavailable int32) appsv1.Deployment {
	return appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "pay"}, Spec: appsv1.DeploymentSpec{Replicas: &want},
		Status: appsv1.DeploymentStatus{Replicas: want, AvailableReplicas: avail, UpdatedReplicas: updated, UnavailableReplicas: unavailable}}
}

func TestAnswerRolloutOver(t *testing.T) {
	start := time.Date(2026, 11, 25, 2, 0, 0, 0, time.UTC)
	now := start.Add(2 * time.Hour)
	rollout := evidence.Change{Service: "settler", Kind: "deploy", Revision: "4.2.0", Description: "settler 4.2.0", Timestamp: start.Add(30 * time.Minute)}
	nearby := []finding.Candidate{{Subject: "fx-sync", Kind: string(KindImagePull), Score: 30}, {Subject: "settler", Kind: string(KindProbeFailure), Score: 12}}
	cases := []struct {
		name       string
		msg        string
		dep        appsv1.Deployment
		metrics    string
		candidates []finding.Candidate
		want       []string
	}{
		{"a rollout's dip, over; a louder failure nearby", "alert SettlerBelowDesired fired around 02:30. is it real, is settler ok now?",
			deployment("settler", 6, 6, 6, 0), replicaSeries("settler", start, 6, 5, 30, 42), nearby,
			[]string{"settler is healthy now: its Deployment has 6 of 6 replicas available", "fell to 5 of 6 from 02:30 to 02:42 UTC and are back", "rolling update to 4.2.0", "A failure nearby, not of settler: fx-sync"}},
		{"no metrics: the state and the rollout", "is settler fine now?", deployment("settler", 3, 3, 3, 0), "", nearby,
			[]string{"settler is healthy now: its Deployment has 3 of 3 replicas available", "The alert is over"}},
		{"still short of replicas", "is settler ok now?", deployment("settler", 6, 5, 6, 1), replicaSeries("settler", start, 6, 5, 30, 120), nearby, nil},
		{"the metrics still below desired", "is settler ok now?", deployment("settler", 6, 6, 6, 0), replicaSeries("settler", start, 6, 4, 100, 120), nearby, nil},
		{"a cause found on the subject itself", "is settler ok now?", deployment("settler", 6, 6, 6, 0), replicaSeries("settler", start, 6, 5, 30, 42),
			[]finding.Candidate{{Subject: "settler", Kind: string(KindOOMKilled), Score: 80}}, nil},
		{"not a question about now", "why did settler fall below desired?", deployment("settler", 6, 6, 6, 0), replicaSeries("settler", start, 6, 5, 30, 42), nearby, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fsys := fstest.MapFS{"bundle.json": {Data: []byte(`{"captured_at":"` + now.Format(time.RFC3339) + `"}`)}}
			if c.metrics != "" {
				fsys["prometheus/ksm.om"] = &fstest.MapFile{Data: []byte(c.metrics)}
			}
			sc := Scope{Service: "settler", Namespace: "pay", Message: c.msg, Window: Window{BaselineStart: start, Start: start.Add(20 * time.Minute), End: now}}
			g := newGatherer(Options{}, sc, bundleSources(t, fsys, now))
			g.k8s.Deployments = []appsv1.Deployment{c.dep}
			g.changes = []evidence.Change{rollout}
			res := &finding.Result{Verdict: finding.VerdictInconclusive, Summary: "fx-sync: image pull failure", Candidates: c.candidates,
				RootCause: finding.RootCause{Description: "fx-sync pods cannot start because the image pull fails", Confidence: 26}}
			got := g.answerRolloutOver(t.Context(), res)
			if got != (c.want != nil) {
				t.Fatalf("answered %v, want %v: %s", got, c.want != nil, res.RootCause.Description)
			}
			if !got {
				if res.Verdict == finding.VerdictHealthy {
					t.Fatal("verdict changed")
				}
				return
			}
			if res.Verdict != finding.VerdictHealthy || res.RootCause.Confidence > 70 {
				t.Errorf("verdict %s at %v", res.Verdict, res.RootCause.Confidence)
			}
			for _, w := range c.want {
				if !strings.Contains(res.RootCause.Description, w) {
					t.Errorf("description lacks %q:\n%s", w, res.RootCause.Description)
				}
			}
		})
	}
}
