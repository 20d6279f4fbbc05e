package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent"
	"github.com/rootcause/rootcause/agent/tools"
	"github.com/rootcause/rootcause/db"
	"github.com/rootcause/rootcause/finding"
)

func TestHistorySimilar(t *testing.T) {
	ctx := context.Background()
	store := db.MustOpen(t)
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	n := 0
	add := func(team, status, msg, summary, cause string) string {
		n++
		inv := &db.Investigation{ID: fmt.Sprintf("inv-%03d", n), Team: team, Agent: tools.AgentInvestigation,
			Message: msg, Status: status, CreatedAt: base.Add(time.Duration(n) * time.Minute)}
		if status == db.StatusCompleted {
			inv.Result = &finding.Result{Summary: summary, RootCause: finding.RootCause{Description: cause, Confidence: 80}}
		}
		if err := store.CreateInvestigation(ctx, inv); err != nil {
			t.Fatal(err)
		}
		return inv.ID
	}
	oom := add("payments", db.StatusCompleted, "checkout pods restarting",
		"checkout-7d9 was OOMKilled 14 times", "checkout container exceeded its 512Mi memory limit (OOMKilled)")
	add("payments", db.StatusCompleted, "slow API responses",
		"p99 latency rose after deploy v42", "database connection pool exhausted after deploy v42")
	add("payments", db.StatusCompleted, "certificate warnings",
		"TLS certificate for api.example.com expires in 2 days", "expiring certificate")
	// The same words in another team, in a failed run and in a running one
	// must not be found.
	add("search", db.StatusCompleted, "checkout OOMKilled memory limit",
		"OOMKilled", "memory limit exceeded OOMKilled")
	add("payments", db.StatusFailed, "checkout OOMKilled memory limit", "", "")
	add("payments", db.StatusRunning, "checkout OOMKilled memory limit", "", "")
	// Filler so paging (100 per page) is exercised.
	for i := 0; i < 250; i++ {
		add("payments", db.StatusCompleted, fmt.Sprintf("routine check %d", i), "nothing wrong", "no issue found")
	}

	h := agent.NewHistory(store, "payments")
	got, err := h.Similar(ctx, "pods OOMKilled, memory limit reached", 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].InvestigationID != oom {
		t.Fatalf("Similar = %+v, want only %s", got, oom)
	}
	p := got[0]
	if p.RootCause == "" || p.Summary == "" || p.Message != "checkout pods restarting" || p.Score <= 0 || p.CreatedAt == "" {
		t.Fatalf("incident = %+v", p)
	}

	got, err = h.Similar(ctx, "connection pool exhausted", 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 || got[0].RootCause != "database connection pool exhausted after deploy v42" {
		t.Fatalf("Similar(pool) = %+v", got)
	}

	// Nothing like it, and an empty query: an empty list, not nil.
	for _, q := range []string{"kafka consumer lag", "   "} {
		got, err = h.Similar(ctx, q, 5)
		if err != nil || got == nil || len(got) != 0 {
			t.Fatalf("Similar(%q) = %+v, %v", q, got, err)
		}
	}

	// A team with no history.
	got, err = agent.NewHistory(store, "nobody").Similar(ctx, "OOMKilled", 5)
	if err != nil || len(got) != 0 {
		t.Fatalf("empty team: %+v, %v", got, err)
	}

	// Through the tool, as an agent calls it.
	tool, _ := tools.Builtin().Get("similar_incidents")
	res, err := tool.Run(ctx, &tools.Env{History: h}, json.RawMessage(`{"query":"OOMKilled memory","limit":2}`))
	if err != nil {
		t.Fatal(err)
	}
	if list := res.([]tools.PastIncident); len(list) != 1 || list[0].InvestigationID != oom {
		t.Fatalf("similar_incidents = %+v", list)
	}
}

// TestHistoryDepth: only the most recent HistoryDepth completed
// investigations are ranked.
func TestHistoryDepth(t *testing.T) {
	ctx := context.Background()
	store := db.MustOpen(t)
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	total := agent.HistoryDepth + 20
	for i := 0; i < total; i++ {
		msg := "routine check"
		if i == 0 {
			msg = "ancient zookeeper outage" // the oldest: beyond the depth
		}
		if i == total-1 {
			msg = "recent zookeeper outage"
		}
		inv := &db.Investigation{ID: fmt.Sprintf("inv-%04d", i), Team: "t", Message: msg, Status: db.StatusCompleted,
			CreatedAt: base.Add(time.Duration(i) * time.Second), Result: &finding.Result{Summary: "s"}}
		if err := store.CreateInvestigation(ctx, inv); err != nil {
			t.Fatal(err)
		}
	}
	got, err := agent.NewHistory(store, "t").Similar(ctx, "zookeeper", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Message != "recent zookeeper outage" {
		t.Fatalf("Similar = %+v", got)
	}
}
