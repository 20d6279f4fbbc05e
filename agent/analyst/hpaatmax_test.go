package analyst

import (
	"strconv"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDetectHPAObjects(t *testing.T) {
	end := time.Date(2026, 12, 8, 19, 42, 0, 0, time.UTC)
	w := Window{BaselineStart: end.Add(-3 * time.Hour), Start: end.Add(-time.Hour), End: end}
	i32 := func(v int32) *int32 { return &v }
	hpa := func(name string, cur, desired, max int32, limited string) autoscalingv2.HorizontalPodAutoscaler {
		h := autoscalingv2.HorizontalPodAutoscaler{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "api"},
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
				ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: name},
				MinReplicas:    i32(3), MaxReplicas: max,
				Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
					Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: i32(70)}}}},
			},
			Status: autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: cur, DesiredReplicas: desired,
				CurrentMetrics: []autoscalingv2.MetricStatus{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{
					Name: corev1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{AverageUtilization: i32(186)}}}}},
		}
		if limited != "" {
			msg := "the desired replica count is more than the maximum replica count"
			if limited == "TooFewReplicas" {
				msg = "the desired replica count is less than the minimum replica count"
			}
			h.Status.Conditions = []autoscalingv2.HorizontalPodAutoscalerCondition{{Type: autoscalingv2.ScalingLimited, Status: corev1.ConditionTrue, Reason: limited, Message: msg}}
		}
		return h
	}
	ev := func(kind, name, reason, msg string, ago time.Duration) corev1.Event {
		ts := metav1.NewTime(end.Add(-ago))
		return corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: kind, Namespace: "api", Name: name}, Type: corev1.EventTypeNormal,
			Reason: reason, Message: msg, FirstTimestamp: ts, LastTimestamp: ts, Count: 1}
	}
	rescales := []corev1.Event{
		ev("HorizontalPodAutoscaler", "search-gateway", "SuccessfulRescale", "New size: 5; reason: cpu resource utilization (percentage of request) above target", 52*time.Minute),
		ev("Deployment", "search-gateway", "ScalingReplicaSet", "Scaled up replica set search-gateway-7d8c9b5f4 to 5 from 3", 52*time.Minute),
		ev("HorizontalPodAutoscaler", "search-gateway", "SuccessfulRescale", "New size: 8; reason: cpu resource utilization (percentage of request) above target", 47*time.Minute),
		ev("Deployment", "search-gateway", "ScalingReplicaSet", "Scaled up replica set search-gateway-7d8c9b5f4 to 8 from 5", 47*time.Minute),
	}
	cases := []struct {
		name   string
		hpas   []autoscalingv2.HorizontalPodAutoscaler
		events []corev1.Event
		found  []Finding
		want   string // "subject weight from" of the finding, "" for none
		desc   []string
	}{
		{"scaled up to max in the window", []autoscalingv2.HorizontalPodAutoscaler{hpa("search-gateway", 8, 8, 8, "TooManyReplicas")}, rescales, nil,
			"search-gateway 0.92 3", []string{"maximum of 8 replicas (maxReplicas, ScalingLimited)", "scaled from 3 to 8", "cpu 186% of request, target 70%"}},
		{"at max all along", []autoscalingv2.HorizontalPodAutoscaler{hpa("search-gateway", 8, 8, 8, "")}, nil, nil, "search-gateway 0.6 ", []string{"maximum of 8 replicas (maxReplicas)"}},
		{"limited by the maximum before scaling", []autoscalingv2.HorizontalPodAutoscaler{hpa("search-gateway", 7, 8, 8, "TooManyReplicas")}, nil, nil, "search-gateway 0.6 ", nil},
		{"below max", []autoscalingv2.HorizontalPodAutoscaler{hpa("profile-api", 2, 2, 6, "")}, nil, nil, "", nil},
		{"limited by the minimum", []autoscalingv2.HorizontalPodAutoscaler{hpa("profile-api", 3, 2, 6, "TooFewReplicas")}, nil, nil, "", nil},
		{"already found in the metrics", []autoscalingv2.HorizontalPodAutoscaler{hpa("search-gateway", 8, 8, 8, "")}, nil,
			[]Finding{{Kind: KindHPAMax, Object: "hpa api/search-gateway"}}, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := detectHPAObjects(c.hpas, c.events, w, c.found)
			got := ""
			if len(fs) > 1 {
				t.Fatalf("%d findings", len(fs))
			}
			if len(fs) == 1 {
				got = fs[0].Subject + " " + strconv.FormatFloat(fs[0].Weight, 'f', -1, 64) + " " + fs[0].fact("from_replicas")
			}
			if got != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
			if len(fs) == 1 {
				h := &Hypothesis{Kind: KindHPAMax, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}}
				d := hpaMax.describe(h, Scope{})
				for _, s := range c.desc {
					if !strings.Contains(d, s) {
						t.Errorf("description %q lacks %q", d, s)
					}
				}
			}
		})
	}
}

// With the service's load measured rising, a change near the autoscaler
// reaching its maximum is its trigger only when it changes the capacity;
// a logging setting edited before the surge is a coincidence.
func TestHPAMaxLoadSurgeTrigger(t *testing.T) {
	onset := win.Start.Add(15 * time.Minute)
	logging := &Finding{Kind: KindConfigChange, Subject: "search-api", Time: onset.Add(-15 * time.Minute), Summary: "config change of search-api: SEARCH_SLOW_QUERY_LOG_MS 0 -> 500"}
	maxCut := &Finding{Kind: KindConfigChange, Subject: "search-api", Time: onset.Add(-40 * time.Minute), Summary: "config change of search-api: hpa maxReplicas 12 -> 8"}
	surge := &Finding{Kind: KindLoadSurge, Subject: "search-api", Time: onset}
	hpa := func(support ...*Finding) *Hypothesis {
		return &Hypothesis{Kind: KindHPAMax, Subject: "search-api", Onset: onset, Primary: []*Finding{{Kind: KindHPAMax, Subject: "search-api", Time: onset}}, Support: support}
	}
	cases := []struct {
		name    string
		h       *Hypothesis
		changes []*Finding
		want    *Finding
	}{
		{"load surge: the logging change is a coincidence", hpa(surge), []*Finding{logging}, nil},
		{"load surge: a cut of maxReplicas triggers", hpa(surge), []*Finding{logging, maxCut}, maxCut},
		{"no load measured: the nearest change", hpa(), []*Finding{logging}, logging},
	}
	for _, c := range cases {
		if got := nearestChange(c.h, c.changes); got != c.want {
			t.Errorf("%s: trigger %v, want %v", c.name, got, c.want)
		}
	}
}
