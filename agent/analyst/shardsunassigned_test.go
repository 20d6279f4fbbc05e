package analyst

import (
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A search cluster red with primaries unassigned: Elasticsearch's master
// log, its health and shard table, the data node that left and why it
// cannot return; OpenSearch with a client's exception; a query error that
// fails on all shards is not it.
func TestDetectShardsUnassigned(t *testing.T) {
	esLeft := `[2026-11-25T11:27:46,101][INFO ][o.e.c.s.MasterService    ] [es-master-0] node-left[{es-data-2}{Qm2vA7c1T0yHnXk3bLw9dQ}{10.60.2.74}{10.60.2.74:9300}{d} reason: disconnected], term: 14, version: 80122`
	esRed := `[2026-11-25T11:27:46,388][INFO ][o.e.c.r.a.AllocationService] [es-master-0] Cluster health status changed from [GREEN] to [RED] (reason: [{es-data-2} reason: disconnected]).`
	esUnassigned := `[2026-11-25T11:28:47,002][WARN ][o.e.c.r.a.AllocationService] [es-master-0] [products-v7][1] primary shard is unassigned: allocate_explanation: cannot allocate because a previous copy of the primary shard existed but can no longer be found on the nodes in the cluster`
	client := `time=2026-11-25T11:31:36.913Z level=error msg="search failed" index=products status=503 err="elastic: Error 503 (Service Unavailable): all shards failed [type=search_phase_execution_exception]" cause="[products-v7][5] no_shard_available_action_exception: No shard available for [org.elasticsearch.action.search.SearchRequest]"`
	osRed := `[2026-11-25T11:27:46,388][INFO ][o.o.c.r.a.AllocationService] [os-master-1] Cluster health status changed from [YELLOW] to [RED] (reason: [{os-data-1} reason: disconnected]).`
	osClient := `2026-11-25 11:31:36.913 ERROR [catalog,,] o.s.d.e.c.ElasticsearchExceptionTranslator : OpenSearchStatusException[OpenSearch exception [type=search_phase_execution_exception, reason=all shards failed]]; nested: NoShardAvailableActionException[[orders-2026.11][2] null]`
	parseErr := `time=2026-11-25T11:31:36.913Z level=error msg="search failed" status=400 err="elastic: Error 400 (Bad Request): all shards failed [type=search_phase_execution_exception]" cause="No mapping found for [price_eur] in order to sort on"`
	cmds := []evidence.CommandOutput{
		{Command: "kubectl exec -n search es-master-0 -- curl -s localhost:9200/_cluster/health?pretty", Lines: []string{`{`, `  "cluster_name" : "search",`, `  "status" : "red",`, `  "unassigned_shards" : 5,`, `}`}},
		{Command: "kubectl exec -n search es-master-0 -- curl -s 'localhost:9200/_cat/shards/products-*?v'", Lines: []string{"index        shard prirep state      docs   store ip         node", "products-v7  0     p      STARTED    412233 3.1gb 10.60.1.21 es-data-0", "products-v7  3     p      UNASSIGNED"}},
		{Command: "kubectl exec -n search es-master-0 -- curl -s 'localhost:9200/products-v7/_settings/index.number_of_replicas?pretty'", Lines: []string{`        "number_of_replicas" : "0"`}},
		{Command: "kubectl describe pod es-data-2 -n search | tail -8", Lines: []string{"  Warning  FailedScheduling  2m13s (x9 over 37m)  default-scheduler  0/5 nodes are available: 1 node(s) were unschedulable, 4 node(s) had volume node affinity conflict."}},
		{Command: "kubectl get pv pvc-5b7e0c1a -o jsonpath='{.spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0]}'", Lines: []string{`{"key":"topology.ebs.csi.aws.com/zone","operator":"In","values":["eu-west-1b"]}`}},
	}
	cases := []struct {
		name    string
		sets    []LogSet
		cmds    []evidence.CommandOutput
		subject string
		want    []string // in the description
	}{
		{"Elasticsearch: node drained, volume bound to a zone, no replicas",
			[]LogSet{minedSet("elasticsearch-search", true, 0, esLeft, esRed, esUnassigned), minedSet("search-api", false, time.Minute, client, client)}, cmds,
			"elasticsearch-search", []string{"[products-v7][1]", "[products-v7][3]", "[products-v7][5]", "es-data-2", "volume node affinity conflict", "eu-west-1b", "0 replicas", "search-api"}},
		{"OpenSearch: red, a Java client's exception",
			[]LogSet{minedSet("opensearch", true, 0, osRed), minedSet("orders-search", false, time.Minute, osClient, osClient)}, nil,
			"opensearch", []string{"os-data-1", "[orders-2026.11][2]", "orders-search"}},
		{"a query error on all shards is not unassigned shards",
			[]LogSet{minedSet("search-api", false, 0, parseErr, parseErr)}, nil, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Logs: c.sets, Commands: c.cmds, Window: win}
			f := onlyFinding(t, detectShardsUnassigned(ev, nil), c.subject)
			if f == nil {
				return
			}
			h := &Hypothesis{Kind: KindShardsUnassigned, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, append([]string{"unassigned"}, c.want...)...)
		})
	}
}
