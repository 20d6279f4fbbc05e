package analyst

import (
	"strings"
	"testing"
	"time"
)

// TestSubjectFirst checks that the question's subject leads: a louder pod
// failure of another workload is demoted below the subject's own failing
// dependency, and when nothing bears on the subject it is reported
// healthy with the other failure listed nearby.
func TestSubjectFirst(t *testing.T) {
	t0 := time.Date(2026, 1, 27, 14, 0, 0, 0, time.UTC)
	w := Window{BaselineStart: t0.Add(-2 * time.Hour), Start: t0.Add(-time.Hour), End: t0.Add(time.Hour)}
	oom := Finding{Kind: KindOOMKilled, Subject: "recommender", Object: "pod shop/recommender-5d7f8c9b6-kw2hz", Namespace: "shop", Time: t0.Add(20 * time.Minute),
		Weight: 0.95, Source: SrcKubernetes, Severity: SevCritical, Summary: "recommender OOMKilled"}
	refused := Finding{Kind: KindConnRefused, Subject: "redis-cache", Object: "logs inventory-sync-7b9d6c8f45-4xw9q", Namespace: "shop", Time: t0.Add(-12 * time.Minute),
		Weight: 0.8, Source: SrcLogs, Related: []string{"inventory-sync"}, Summary: "inventory-sync logs connection refused to redis-cache:6379",
		Facts: map[string]string{"caller": "inventory-sync", "lines": "75", "target": "redis-cache:6379"}}
	known := map[string]bool{"recommender": true, "inventory-sync": true, "redis-cache": true, "recommender-5d7f8c9b6-kw2hz": true}
	cases := []struct {
		name     string
		findings []Finding
		sc       Scope
		winner   Kind
		healthy  bool
	}{
		{name: "the subject's dependency beats a louder failure elsewhere", findings: []Finding{oom, refused},
			sc: Scope{Service: "inventory-sync", Message: "Can you check inventory-sync?", Window: w, Known: known}, winner: KindConnRefused},
		{name: "without a subject the loudest failure wins", findings: []Finding{oom, refused},
			sc: Scope{Message: "What is wrong in shop?", Window: w, Known: known}, winner: KindOOMKilled},
		{name: "a subject named only in the message", findings: []Finding{oom, refused},
			sc: Scope{Message: "stock stopped updating, is inventory-sync broken?", Window: w, Known: known}, winner: KindConnRefused},
		{name: "a healthy subject is reported healthy", findings: []Finding{oom},
			sc: Scope{Service: "inventory-sync", Message: "Is inventory-sync ok?", Window: w, Known: known}, healthy: true},
		{name: "a subject the evidence does not know is not judged", findings: []Finding{oom},
			sc: Scope{Service: "billing", Message: "Is billing ok?", Window: w, Known: known}, winner: KindOOMKilled},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := Reason(append([]Finding(nil), c.findings...), c.sc)
			if a.Healthy != c.healthy {
				t.Fatalf("healthy %v, want %v (top %s %.2f)", a.Healthy, c.healthy, a.Hypotheses[0].Kind, a.Hypotheses[0].Score)
			}
			r := Build(a, c.sc, nil, "kubernetes")
			if c.healthy {
				if !strings.Contains(r.RootCause.Description, "No fault found in inventory-sync") || !strings.Contains(r.RootCause.Description, "recommender") {
					t.Errorf("description %q: want the subject healthy and the failure nearby named", r.RootCause.Description)
				}
				return
			}
			if a.Hypotheses[0].Kind != c.winner {
				t.Errorf("winner %s, want %s", a.Hypotheses[0].Kind, c.winner)
			}
		})
	}
}

// TestObjectNames tells a workload's own pods from another workload whose
// name begins with the same word.
func TestObjectNames(t *testing.T) {
	for _, c := range []struct {
		object, name string
		want         bool
	}{
		{"pod/messaging/nats-2", "nats", true},
		{"pod/messaging/nats-2", "nats-2", true},
		{"pod/messaging/nats-surveyor-7f8c9d6b4-k2wxj", "nats", false},
		{"pod/messaging/nats-surveyor-7f8c9d6b4-k2wxj", "nats-surveyor", true},
		{"pod/shop/checkout-7d9f8b6c5-x2k4p", "checkout", true},
		{"deployment/shop/checkout", "checkout", true},
		{"deployment/shop/checkout-worker", "checkout", false},
		{"pod/shop/redis-0 (container redis)", "redis", true},
		{"pod/payments/payments-api-smoke-test-gm8vh", "payments-api", true},
		{"job/payments/payments-api-db-migrate", "payments-api", true},
		{"statefulset/messaging/nats-box", "nats", false},
		{"pod/shop/payments-api-5c9d7b8f6-qk2vd", "", false},
	} {
		if got := objectNames(c.object, c.name); got != c.want {
			t.Errorf("objectNames(%q, %q) = %v, want %v", c.object, c.name, got, c.want)
		}
	}
}
