package analyst

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestZoneImpaired splits a service's latency per pod by the zone of the
// pod's node (AWS and Google Cloud zone labels, the beta label), keeps a
// zone whose pods alone slowed, and reads the provider's report of it:
// AWS Health's describe-events rows and event description naming the
// zone id (mapped by describe-availability-zones), its JSON output, a
// Google Cloud status line. A release to every pod is not its trigger;
// slow pods in every zone, or a zone with slow and normal pods, are not a
// zone's fault.
func TestZoneImpaired(t *testing.T) {
	node := func(name, label, zone string) corev1.Node {
		return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{label: zone}}}
	}
	pod := func(name, node string) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-6c9d-" + name, Namespace: "shop", Labels: map[string]string{"app": "web"}}, Spec: corev1.PodSpec{NodeName: node}}
	}
	series := func(p string, before, during float64) evidence.Series {
		s := evidence.Series{Labels: evidence.Labels{"pod": "web-6c9d-" + p}}
		for t := win.BaselineStart; t.Before(win.End); t = t.Add(5 * time.Minute) {
			v := before
			if !t.Before(win.Start.Add(10 * time.Minute)) {
				v = during
			}
			s.Points = append(s.Points, evidence.Point{T: t, V: v})
		}
		return s
	}
	const zl = "topology.kubernetes.io/zone"
	awsNodes := []corev1.Node{node("n-a", zl, "eu-west-1a"), node("n-b", zl, "eu-west-1b"), node("n-c", zl, "eu-west-1c")}
	gcpNodes := []corev1.Node{node("g-a", "failure-domain.beta.kubernetes.io/zone", "us-central1-a"), node("g-b", "failure-domain.beta.kubernetes.io/zone", "us-central1-b"), node("g-f", "failure-domain.beta.kubernetes.io/zone", "us-central1-f")}
	pods := func(a, b, c string) []corev1.Pod {
		return []corev1.Pod{pod("a1", a), pod("a2", a), pod("b1", b), pod("b2", b), pod("c1", c), pod("c2", c)}
	}
	lat := func(slow ...string) []MetricSet {
		set := MetricSet{Name: "http_request_duration_seconds:p99", Unit: "s"}
		for _, p := range []string{"a1", "a2", "b1", "b2", "c1", "c2"} {
			during := 0.12
			for _, s := range slow {
				if s == p {
					during = 0.9
				}
			}
			set.Series = append(set.Series, series(p, 0.12, during))
		}
		return []MetricSet{set}
	}
	awsText := []evidence.CommandOutput{
		{Command: "aws health describe-events --output text", Lines: []string{"AWS_EC2_OPERATIONAL_ISSUE\teu-west-1b\t2026-11-10T09:37:00+00:00\topen", "AWS_RDS_OPERATIONAL_ISSUE\tNone\t2026-11-10T09:52:00+00:00\topen"}},
		{Command: "aws health describe-event-details --output text", Lines: []string{"[09:58 AM PST] We are investigating increased network latency and packet loss for some instances in a single Availability Zone (euw1-az1) in the EU-WEST-1 Region. Other Availability Zones are not affected."}},
		{Command: "aws ec2 describe-availability-zones --output text", Lines: []string{"eu-west-1a\teuw1-az3\tavailable", "eu-west-1b\teuw1-az1\tavailable", "eu-west-1c\teuw1-az2\tavailable"}},
	}
	awsJSON := []evidence.CommandOutput{{Command: "aws health describe-events --output json", Lines: []string{`        "eventTypeCode": "AWS_EC2_OPERATIONAL_ISSUE",`, `        "availabilityZone": "eu-west-1c",`, `        "statusCode": "open"`, `        "eventTypeCode": "AWS_EC2_OPERATIONAL_ISSUE", "availabilityZone": "eu-west-1c", "statusCode": "open"`}}}
	gcpStatus := []evidence.CommandOutput{{Command: "curl -s https://status.cloud.google.com/incidents.json | jq -r '.[0].most_recent_update.text'", Lines: []string{"We are experiencing elevated latency and packet loss for Compute Engine instances in us-central1-f."}}}
	release := evidence.Change{Timestamp: win.Start.Add(-5 * time.Minute), Service: "web", Kind: "deploy", Description: "web 7.4.2"}
	cases := []struct {
		name, zone, id string
		ev             Gathered
		health         bool
	}{
		{"AWS Health text naming the zone id, mapped to its name", "eu-west-1b", "euw1-az1",
			Gathered{K8s: K8sEvidence{Nodes: awsNodes, Pods: pods("n-a", "n-b", "n-c")}, Metrics: lat("b1", "b2"), Commands: awsText, Changes: []evidence.Change{release}}, true},
		{"AWS Health JSON naming the zone", "eu-west-1c", "",
			Gathered{K8s: K8sEvidence{Nodes: awsNodes, Pods: pods("n-a", "n-b", "n-c")}, Metrics: lat("c1", "c2"), Commands: awsJSON}, true},
		{"Google Cloud zone on the beta label, status line", "us-central1-f", "",
			Gathered{K8s: K8sEvidence{Nodes: gcpNodes, Pods: pods("g-a", "g-b", "g-f")}, Metrics: lat("c1", "c2"), Commands: gcpStatus}, true},
		{"no report: the split alone", "eu-west-1a", "",
			Gathered{K8s: K8sEvidence{Nodes: awsNodes, Pods: pods("n-a", "n-b", "n-c")}, Metrics: lat("a1", "a2")}, false},
		{"a report of another zone is not quoted", "eu-west-1a", "",
			Gathered{K8s: K8sEvidence{Nodes: awsNodes, Pods: pods("n-a", "n-b", "n-c")}, Metrics: lat("a1", "a2"), Commands: awsJSON}, false},
		{"every zone slowed: not a zone's fault", "", "",
			Gathered{K8s: K8sEvidence{Nodes: awsNodes, Pods: pods("n-a", "n-b", "n-c")}, Metrics: lat("a1", "a2", "b1", "b2", "c1", "c2"), Commands: awsText}, false},
		{"a zone with slow and normal pods", "", "",
			Gathered{K8s: K8sEvidence{Nodes: awsNodes, Pods: pods("n-a", "n-b", "n-c")}, Metrics: lat("b1"), Commands: awsText}, false},
		{"nodes without zone labels", "", "",
			Gathered{K8s: K8sEvidence{Nodes: []corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "n-a"}}}, Pods: pods("n-a", "n-a", "n-a")}, Metrics: lat("b1", "b2")}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := c.ev
			ev.Window = win
			ev.Scope = Scope{Service: "web", Namespace: "shop"}
			f, ok := oneFinding(t, detectZoneImpaired(&ev, nil), c.zone != "")
			if !ok {
				return
			}
			if f.fact("zone") != c.zone || (f.fact("health") != "") != c.health || c.id != "" && f.fact("zone_id_paren") != "("+c.id+")" {
				t.Fatalf("finding %+v facts %v", f, f.Facts)
			}
			if c.health && f.Weight <= 0.9 || !c.health && f.Weight > 0.85 {
				t.Errorf("weight %.2f with health %v", f.Weight, c.health)
			}
			h := &Hypothesis{Kind: KindZoneImpaired, Subject: f.Subject, Primary: []*Finding{&f}}
			d := zoneImpaired.describe(h, Scope{})
			for _, w := range []string{"availability zone", c.zone, "2 pods", "4 pods"} {
				if !strings.Contains(d, w) {
					t.Errorf("description lacks %q: %s", w, d)
				}
			}
			if len(ev.Changes) > 0 && !strings.Contains(d, "every zone alike") {
				t.Errorf("the release is not set aside: %s", d)
			}
			if zoneImpaired.fitsChange(h, &Finding{Kind: KindDeploy, Subject: "web", Facts: map[string]string{"description": release.Description}}) {
				t.Error("a release to every pod triggers a zone's degradation")
			}
		})
	}
}
