package analyst

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/finding"
)

func TestAlertTargetGroup(t *testing.T) {
	cases := []struct {
		name string
		a    evidence.Alert
		want string
	}{
		{"cloudwatch exporter dimension label", evidence.Alert{Name: "ALBTargetGroupNoHealthyHosts", Labels: map[string]string{"dimension_TargetGroup": "targetgroup/k8s-shop-web-0a1b2c3d4e/a41c7e09d35f2b68"}}, "k8s-shop-web-0a1b2c3d4e"},
		{"full ARN label", evidence.Alert{Name: "NoHealthyTargets", Labels: map[string]string{"target_group": "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/api-v1-tg/6d0ecf831eec9f09"}}, "api-v1-tg"},
		{"description only", evidence.Alert{Name: "HealthyHostCountZero", Annotations: map[string]string{"description": "Target group billing-old-tg has 0 healthy targets for 10m."}}, "billing-old-tg"},
		{"CloudWatch alarm name in words", evidence.Alert{Name: "UnHealthyHostCount", Annotations: map[string]string{"summary": "no healthy hosts in targetgroup/legacy-admin/0f6d3a9c81e2b457"}}, "legacy-admin"},
		{"other alert", evidence.Alert{Name: "ContainerCPUHigh", Labels: map[string]string{"pod": "web-1"}, Annotations: map[string]string{"summary": "CPU usage is high"}}, ""},
	}
	for _, c := range cases {
		if got := alertTargetGroup(c.a); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}

func TestReadTargetGroupOwners(t *testing.T) {
	cases := []struct {
		name       string
		cmd        evidence.CommandOutput
		group, own string
	}{
		{"kubectl get targetgroupbindings", evidence.CommandOutput{Command: "kubectl get targetgroupbindings -n shop", Lines: []string{
			"NAME                           SERVICE-NAME   SERVICE-PORT   TARGET-TYPE   AGE",
			"k8s-shop-webold-77aa00bb11     web-old        8080           ip            400d",
			"k8s-shop-web-0a1b2c3d4e        web            8080           ip            20d",
		}}, "k8s-shop-webold-77aa00bb11", "web-old"},
		{"kubectl get tgb -A wide", evidence.CommandOutput{Command: "kubectl get tgb -A", Lines: []string{
			"NAMESPACE   NAME              SERVICE-NAME    SERVICE-PORT   TARGET-TYPE   ARN                                                                                  AGE",
			"billing     billing-old-tg    billing-v1      80             instance      arn:aws:elasticloadbalancing:us-east-1:1:targetgroup/billing-old-tg/6d0ecf831eec9f09   2y",
		}}, "billing-old-tg", "billing-v1"},
		{"TargetGroupBinding YAML", evidence.CommandOutput{Command: "kubectl get targetgroupbinding api-v1 -n api -o yaml", Lines: []string{
			"apiVersion: elbv2.k8s.aws/v1beta1",
			"kind: TargetGroupBinding",
			"metadata:",
			"  name: api-v1",
			"spec:",
			"  serviceRef:",
			"    name: api-v1",
			"    port: 8080",
			"  targetGroupARN: arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/api-v1-tg/6d0ecf831eec9f09",
			"  targetType: ip",
		}}, "api-v1-tg", "api-v1"},
		{"describe-tags stack tag", evidence.CommandOutput{Command: "aws elbv2 describe-tags --resource-arns arn:aws:elasticloadbalancing:eu-west-1:1:targetgroup/k8s-admin-adminlg-5c5c5c5c5c/0f6d3a9c81e2b457", Lines: []string{
			`{ "TagDescriptions": [ { "ResourceArn": "arn:...", "Tags": [`,
			`  { "Key": "elbv2.k8s.aws/cluster", "Value": "prod" },`,
			`  { "Key": "ingress.k8s.aws/stack", "Value": "admin/admin-legacy" },`,
			`] } ] }`,
		}}, "k8s-admin-adminlg-5c5c5c5c5c", "admin-legacy"},
		{"a table that is no binding", evidence.CommandOutput{Command: "kubectl get svc -n shop", Lines: []string{
			"NAME   TYPE        CLUSTER-IP     EXTERNAL-IP   PORT(S)    AGE",
			"web    ClusterIP   172.20.81.14   <none>        8080/TCP   212d",
		}}, "web", ""},
	}
	for _, c := range cases {
		got := readTargetGroupOwners([]evidence.CommandOutput{c.cmd})[c.group]
		if got[0] != c.own {
			t.Errorf("%s: owner of %s = %q, want %q (%v)", c.name, c.group, got[0], c.own, got)
		}
	}
}

func TestReadTargetHealth(t *testing.T) {
	cases := []struct {
		name             string
		lines            []string
		targets, healthy int
	}{
		{"empty JSON", []string{"{", `    "TargetHealthDescriptions": []`, "}"}, 0, 0},
		{"no output", nil, 0, 0},
		{"text query", []string{"10.31.4.118\thealthy", "10.31.5.27\thealthy", "10.31.6.203\tunhealthy"}, 3, 2},
		{"full JSON", []string{`{ "TargetHealthDescriptions": [`, `  { "Target": { "Id": "10.0.1.5", "Port": 8080 },`, `    "TargetHealth": { "State": "draining", "Reason": "Target.DeregistrationInProgress" } },`, `  { "Target": { "Id": "10.0.1.6", "Port": 8080 },`, `    "TargetHealth": { "State": "healthy" } } ] }`}, 2, 1},
	}
	for _, c := range cases {
		cmd := evidence.CommandOutput{Command: "aws elbv2 describe-target-health --target-group-arn arn:aws:elasticloadbalancing:eu-west-1:1:targetgroup/tg-a/0f6d3a9c81e2b457", Lines: c.lines}
		n, h, read := readTargetHealth([]evidence.CommandOutput{cmd}, "tg-a")
		if !read || n != c.targets || h != c.healthy {
			t.Errorf("%s: got %d targets %d healthy (read %v), want %d %d", c.name, n, h, read, c.targets, c.healthy)
		}
		if _, _, read := readTargetHealth([]evidence.CommandOutput{cmd}, "tg-b"); read {
			t.Errorf("%s: another group's health read as tg-b's", c.name)
		}
	}
}

func TestHealthyHostZero(t *testing.T) {
	t0 := time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC)
	series := func(tg string, vs ...float64) evidence.Series {
		s := evidence.Series{Labels: evidence.Labels{"TargetGroup": "targetgroup/" + tg + "/0f6d3a9c81e2b457"}}
		for i, v := range vs {
			s.Points = append(s.Points, evidence.Point{T: t0.Add(time.Duration(i) * time.Minute), V: v})
		}
		return s
	}
	sets := []MetricSet{{Name: "AWS/ApplicationELB/HealthyHostCount", Series: []evidence.Series{series("live", 3, 3, 3), series("old", 2, 2, 0, 0)}},
		{Name: "AWS/ApplicationELB/UnHealthyHostCount", Series: []evidence.Series{series("live", 0, 0, 0)}}}
	if got := healthyHostZero(sets, "old"); !strings.Contains(got, "fell from 2 to 0 at 08:02") {
		t.Errorf("old: %q", got)
	}
	if got := healthyHostZero(sets, "live"); got != "" {
		t.Errorf("live group read at zero: %q", got)
	}
}

// TestAnswerStaleTargetGroup answers the alert about a group left by a
// removed owner as stale, and keeps an outage of the asked service's own
// group (its workload still there, nothing removed it) as it was.
func TestAnswerStaleTargetGroup(t *testing.T) {
	at := time.Date(2026, 3, 2, 8, 10, 0, 0, time.UTC)
	bindings := evidence.CommandOutput{Command: "kubectl get targetgroupbindings -n shop", Lines: []string{
		"NAME                        SERVICE-NAME   SERVICE-PORT   TARGET-TYPE   AGE",
		"k8s-shop-webold-77aa00bb11  web-old        8080           ip            400d",
		"k8s-shop-web-0a1b2c3d4e     web            8080           ip            20d",
	}}
	health := func(tg string, lines ...string) evidence.CommandOutput {
		return evidence.CommandOutput{Command: "aws elbv2 describe-target-health --target-group-arn arn:aws:elasticloadbalancing:eu-west-1:1:targetgroup/" + tg + "/a41c7e09d35f2b68", Lines: lines}
	}
	alert := func(tg string) evidence.Alert {
		return evidence.Alert{Name: "TargetGroupNoHealthyHosts", StartsAt: at.Add(10 * time.Minute), Labels: map[string]string{"TargetGroup": "targetgroup/" + tg + "/a41c7e09d35f2b68", "service": "web"}}
	}
	web := appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"}}
	webOld := appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web-old", Namespace: "shop"}}
	removal := evidence.Change{Timestamp: at, Service: "web-old", Kind: "deploy", Description: "retire web v1: remove Deployment web-old"}
	cases := []struct {
		name    string
		alert   evidence.Alert
		deps    []appsv1.Deployment
		changes []evidence.Change
		cmds    []evidence.CommandOutput
		stale   bool
		conf    float64
	}{
		{"removed owner, empty group", alert("k8s-shop-webold-77aa00bb11"), []appsv1.Deployment{web}, []evidence.Change{removal}, []evidence.CommandOutput{bindings, health("k8s-shop-webold-77aa00bb11", `{ "TargetHealthDescriptions": [] }`), health("k8s-shop-web-0a1b2c3d4e", "10.0.0.1\thealthy")}, true, 80},
		{"owner without workload, no change", alert("k8s-shop-webold-77aa00bb11"), []appsv1.Deployment{web}, nil, []evidence.CommandOutput{bindings, health("k8s-shop-webold-77aa00bb11", `{ "TargetHealthDescriptions": [] }`)}, true, 65},
		{"owner still running, no change", alert("k8s-shop-webold-77aa00bb11"), []appsv1.Deployment{web, webOld}, nil, []evidence.CommandOutput{bindings, health("k8s-shop-webold-77aa00bb11", `{ "TargetHealthDescriptions": [] }`)}, false, 0},
		{"the asked service's own group down", alert("k8s-shop-web-0a1b2c3d4e"), []appsv1.Deployment{web}, []evidence.Change{removal}, []evidence.CommandOutput{bindings, health("k8s-shop-web-0a1b2c3d4e", "10.0.0.1\tunhealthy")}, false, 0},
		{"no binding read", alert("k8s-shop-webold-77aa00bb11"), []appsv1.Deployment{web}, []evidence.Change{removal}, []evidence.CommandOutput{health("k8s-shop-webold-77aa00bb11", `{ "TargetHealthDescriptions": [] }`)}, false, 0},
	}
	for _, c := range cases {
		g := &gatherer{commands: c.cmds, changes: c.changes}
		g.k8s.Deployments = c.deps
		g.sc.Service = "web"
		res := &finding.Result{Verdict: finding.VerdictIdentified, RootCause: finding.RootCause{Description: "web: error rate increase", Confidence: 40}}
		got := g.answerStaleTargetGroup(res, []evidence.Alert{c.alert})
		if got != c.stale {
			t.Fatalf("%s: answered %v, want %v", c.name, got, c.stale)
		}
		if !got {
			if res.RootCause.Description != "web: error rate increase" {
				t.Errorf("%s: result changed: %q", c.name, res.RootCause.Description)
			}
			continue
		}
		d := res.RootCause.Description
		if !strings.Contains(d, "k8s-shop-webold-77aa00bb11") || !strings.Contains(d, "web-old") || res.Verdict != finding.VerdictHealthy || res.RootCause.Confidence != c.conf {
			t.Errorf("%s: %s (%v %v)", c.name, d, res.Verdict, res.RootCause.Confidence)
		}
		if len(res.AffectedSystems) == 0 || res.AffectedSystems[0] != "web-old" {
			t.Errorf("%s: affected %v", c.name, res.AffectedSystems)
		}
	}
}
