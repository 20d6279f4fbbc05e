package analyst

import (
	"strings"
	"testing"
	"time"
)

// The service a question asks after beside a failure it names, in the
// ways on-call people ask it; a question about the named failure itself
// asks after nothing.
func TestAskedAfter(t *testing.T) {
	known := map[string]bool{"es-logs": true, "inventory-api": true, "kafka-pay": true, "billing-worker": true, "redis-cache": true, "checkout-api": true, "payments-db": true}
	for _, tc := range []struct {
		msg, service, want string
	}{
		{"es-logs went red at 07:55 and #ops is on fire. is inventory-api affected? it's the one I'm on call for", "inventory-api", "inventory-api"},
		{"does the kafka-pay outage affect billing-worker?", "", "billing-worker"},
		{"redis-cache is down. should I worry about checkout-api?", "checkout-api", "checkout-api"},
		{"payments-db alert is firing, is checkout-api ok?", "checkout-api", "checkout-api"},
		{"payments-db alert is firing, are checkout-api's requests impacted?", "", "checkout-api"},
		{"es-logs went red at 07:55, why?", "", ""},
		{"is inventory-api affected?", "inventory-api", ""}, // names no other failure
	} {
		sc := Scope{Message: tc.msg, Service: tc.service, Known: known}
		if got := askedAfter(sc); got != tc.want {
			t.Errorf("askedAfter(%q) = %q, want %q", tc.msg, got, tc.want)
		}
	}
}

// "X is red, is Y affected?" with nothing bearing on Y is answered
// healthy for Y, X's failure listed nearby; a failure of Y's own, or a
// question about X, is not.
func TestAskedBesideHealthy(t *testing.T) {
	at := time.Date(2026, 11, 14, 7, 54, 41, 0, time.UTC)
	red := Finding{Kind: KindShardsUnassigned, Subject: "es-logs", Object: "cluster es-logs", Source: SrcLogs, Time: at, Severity: SevCritical, Weight: 0.9,
		Summary: "es-logs red: primary shards [logs-payments-2026.11.14][2] unassigned", Facts: map[string]string{"caller": "es-logs"}}
	own := Finding{Kind: KindCrashLoop, Subject: "inventory-api", Object: "pod inventory/inventory-api-69c8d7b5f4-6hxkq", Source: SrcKubernetes, Time: at, Severity: SevCritical, Weight: 0.85,
		Summary: "pod inventory/inventory-api-69c8d7b5f4-6hxkq in CrashLoopBackOff"}
	known := map[string]bool{"es-logs": true, "inventory-api": true}
	for _, tc := range []struct {
		name     string
		msg      string
		findings []Finding
		healthy  bool
	}{
		{"asked after a quiet service", "es-logs went red at 07:55 and #ops is on fire. is inventory-api affected?", []Finding{red}, true},
		{"asked after a service failing itself", "es-logs went red at 07:55 and #ops is on fire. is inventory-api affected?", []Finding{red, own}, false},
		{"asked about the red cluster", "es-logs went red at 07:55, what happened?", []Finding{red}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := Scope{Message: tc.msg, Service: "inventory-api", Namespace: "inventory", Known: known}
			a := Reason(tc.findings, sc)
			if a.Healthy != tc.healthy {
				t.Fatalf("healthy %v, want %v", a.Healthy, tc.healthy)
			}
			if !tc.healthy {
				return
			}
			r := Build(a, sc, nil, "4 pods")
			d := r.RootCause.Description
			if !strings.Contains(d, "No fault found in inventory-api:") || strings.Contains(d, "inventory-api, es-logs") || !strings.Contains(d, "es-logs") {
				t.Errorf("description: %s", d)
			}
		})
	}
}
