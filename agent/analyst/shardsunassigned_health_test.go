package analyst

import (
	"strings"
	"testing"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A red cluster read from what it says of itself when its master's log is
// not at hand: _cluster/health (JSON, named by its cluster_name),
// _cat/health, and _cluster/allocation/explain (which primary, NODE_LEFT
// since when, no valid copy left). The finding is the cluster's own state,
// named after it; a green health is nothing.
func TestShardsUnassignedFromHealth(t *testing.T) {
	health := evidence.CommandOutput{Command: "kubectl exec -n logging es-logs-master-0 -- curl -s 'localhost:9200/_cluster/health?pretty'",
		Lines: []string{`{`, `  "cluster_name" : "es-logs",`, `  "status" : "red",`, `  "unassigned_shards" : 26,`, `}`}}
	green := evidence.CommandOutput{Command: "kubectl exec -n logging es-logs-master-0 -- curl -s 'localhost:9200/_cluster/health?pretty'",
		Lines: []string{`{`, `  "cluster_name" : "es-logs",`, `  "status" : "green",`, `}`}}
	catHealth := evidence.CommandOutput{Command: "kubectl exec -n search opensearch-master-0 -- curl -s localhost:9200/_cat/health",
		Lines: []string{"1794638400 07:56:30 os-search red 5 4 311 598 0 0 26 0 - 95.8%"}}
	explain := evidence.CommandOutput{Command: `kubectl exec -n logging es-logs-master-0 -- curl -s 'localhost:9200/_cluster/allocation/explain?pretty' -d '{"index":"logs-payments-2026.11.14","shard":2,"primary":true}'`,
		Lines: []string{`{`, `  "index" : "logs-payments-2026.11.14",`, `  "shard" : 2,`, `  "primary" : true,`, `  "current_state" : "unassigned",`, `  "unassigned_info" : {`,
			`    "reason" : "NODE_LEFT",`, `    "at" : "2026-11-14T07:54:41.206Z",`, `    "details" : "node_left [Qf3kz9XlTgGm1y0o2Pq8Vw]",`, `    "last_allocation_status" : "no_valid_shard_copy"`, `  },`,
			`  "can_allocate" : "no_valid_shard_copy",`, `}`}}
	for _, tc := range []struct {
		name    string
		cmds    []evidence.CommandOutput
		subject string
		want    []string
	}{
		{"health and allocation explain", []evidence.CommandOutput{health, explain}, "es-logs", []string{"es-logs is red since 07:54", "[logs-payments-2026.11.14][2]", "no_valid_shard_copy"}},
		{"_cat/health row", []evidence.CommandOutput{catHealth}, "os-search", []string{"os-search is red"}},
		{"green", []evidence.CommandOutput{green}, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := onlyFinding(t, detectShardsUnassigned(&Gathered{Commands: tc.cmds, Window: win}, nil), tc.subject)
			if f == nil {
				return
			}
			if f.fact("caller") != tc.subject {
				t.Errorf("not the cluster's own state: caller %q", f.fact("caller"))
			}
			h := &Hypothesis{Kind: KindShardsUnassigned, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, tc.want...)
			if strings.Contains(describe(h, Scope{}), "search cluster search cluster") {
				t.Error("unnamed cluster")
			}
		})
	}
}
