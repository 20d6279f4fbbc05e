package analyst

import (
	"testing"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A search cluster at its shard limit, seen in its shippers' logs:
// Fluent Bit's bulk response (Elasticsearch 8), Logstash's (OpenSearch's
// "maximum shards open"), Vector's; the cluster named by its health
// output; the retention job that fails named as why shards piled up. A
// bulk rejected for another reason is not this cause.
func TestDetectShardLimit(t *testing.T) {
	fluentBit := []string{
		`[2026/11/26 00:00:03] [error] [output:es:es.0] HTTP status=400 URI=/_bulk, response: {"error":{"root_cause":[{"type":"validation_exception","reason":"Validation Failed: 1: this action would add [2] shards, but this cluster currently has [1000]/[1000] maximum normal shards open;"}],"status":400}`,
	}
	logstash := []string{
		`[2026-11-26T00:00:04,118][WARN ][logstash.outputs.opensearch][main] Could not index event to OpenSearch. {:status=>400, :action=>["index", {:_index=>"app-2026.11.26"}], :response=>{"index"=>{"error"=>{"type"=>"validation_exception", "reason"=>"Validation Failed: 1: this action would add [10] total shards, but this cluster currently has [2995]/[3000] maximum shards open;"}}}}`,
	}
	vector := []string{
		`2026-11-26T00:00:05.220Z ERROR sink{component_kind="sink" component_id=es component_type=elasticsearch}: vector::sinks::elasticsearch::service: Response contained errors. error_code="http_response_400" response=Response { status: 400, body: b"{\"error\":{\"reason\":\"Validation Failed: 1: this action would add [2] shards, but this cluster currently has [600]/[600] maximum normal shards open;\"}}" }`,
	}
	other := []string{
		`[2026/11/26 00:00:03] [error] [output:es:es.0] HTTP status=400 URI=/_bulk, response: {"error":{"type":"mapper_parsing_exception","reason":"failed to parse field [level] of type [long]"}}`,
	}
	health := []evidence.CommandOutput{{Command: "curl -s https://localhost:9200/_cluster/health?pretty", Lines: []string{"{", `  "cluster_name" : "logs-es",`, `  "status" : "green"`, "}"}}}
	curator := Finding{Kind: KindAuth, Subject: "index-curator", Severity: SevCritical,
		Evidence: []string{`AuthenticationException(401, 'security_exception', 'unable to authenticate user [curator] for REST request [/]')`}}
	cases := []struct {
		name    string
		set     LogSet
		cmds    []evidence.CommandOutput
		found   []Finding
		subject string // "" for no finding
		want    []string
	}{
		{"Fluent Bit, Elasticsearch 8, curator failing", minedSet("fluent-bit", false, 0, fluentBit...), health, []Finding{curator},
			"logs-es", []string{"logs-es is at its shard limit", "1000/1000", "fluent-bit", "retention job index-curator fails", "401"}},
		{"Logstash, OpenSearch", minedSet("logstash", false, 0, logstash...), nil, nil,
			"elasticsearch", []string{"2995/3000", "logstash"}},
		{"Vector", minedSet("vector", false, 0, vector...), health, nil, "logs-es", []string{"600/600", "vector"}},
		{"a mapping error is not the shard limit", minedSet("fluent-bit", false, 0, other...), health, nil, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := detectShardLimit(&Gathered{Logs: []LogSet{c.set}, Commands: c.cmds, Window: win}, c.found)
			if c.subject == "" {
				if len(fs) != 0 {
					t.Fatalf("finding %+v", fs)
				}
				return
			}
			if len(fs) != 1 || fs[0].Subject != c.subject {
				t.Fatalf("findings %+v", fs)
			}
			h := &Hypothesis{Kind: KindShardLimit, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}}
			wantDescribed(t, h, Scope{}, c.want...)
			if recs := recommend(h, Scope{}); len(recs) != 3 {
				t.Errorf("recommendations %v", recs)
			}
		})
	}
}
