package analyst

import (
	"testing"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A live index with refresh disabled, read from Elasticsearch's pretty
// _settings, OpenSearch's flat settings and a reindex job's log of a
// failed restore; an index refreshing every second, and a load that
// restored its settings, are none.
func TestDetectRefreshDisabled(t *testing.T) {
	pretty := evidence.CommandOutput{Command: `curl -s "$ES/catalog_v7/_settings?filter_path=**.refresh_interval&pretty"`, Lines: []string{
		"{", `  "catalog_v7" : {`, `    "settings" : {`, `      "index" : {`, `        "refresh_interval" : "-1"`, "      }", "    }", "  }", "}"}}
	flat := evidence.CommandOutput{Command: `curl -s "https://os:9200/_all/_settings?flat_settings=true&pretty"`, Lines: []string{
		"{", `  "orders-2026.11" : {`, `    "settings" : {`, `      "index.number_of_replicas" : "0",`, `      "index.refresh_interval" : "-1",`, "    }", "  }", "}"}}
	healthy := evidence.CommandOutput{Command: `curl -s "$ES/catalog_v7/_settings?pretty"`, Lines: []string{`  "catalog_v7" : {`, `        "refresh_interval" : "1s"`}}
	aliases := evidence.CommandOutput{Command: `curl -s "$ES/_cat/aliases?v"`, Lines: []string{"alias   index      filter routing.index routing.search is_write_index", "catalog catalog_v7 -      -             -              -"}}
	pyJob := []string{
		"2026-11-25 18:30:04,642 INFO created catalog_v7 (settings: refresh_interval=-1, number_of_replicas=0)",
		"2026-11-25 19:41:15,131 WARNING restore settings on catalog_v7 failed: ConnectionTimeout caused by - ReadTimeoutError(Read timed out. (read timeout=10))",
	}
	javaJob := []string{
		`2026-11-25T19:41:15.131Z ERROR 1 --- [main] c.e.reindex.Reindexer : update settings of index catalog_v7 failed: java.net.SocketTimeoutException: 30,000 milliseconds timeout on connection`,
		`2026-11-25T18:30:04.642Z INFO 1 --- [main] c.e.reindex.Reindexer : created index catalog_v7 with {"index.refresh_interval":"-1","index.number_of_replicas":0}`,
	}
	restored := []string{
		"2026-11-25 18:30:04,642 INFO created catalog_v7 (settings: refresh_interval=-1, number_of_replicas=0)",
		"2026-11-25 19:41:15,131 INFO restored settings on catalog_v7: refresh_interval=1s, number_of_replicas=1",
	}
	for _, tc := range []struct {
		name  string
		cmds  []evidence.CommandOutput
		sets  []LogSet
		index string
		want  []string
	}{
		{"Elasticsearch pretty settings, aliased, the job's restore failed", []evidence.CommandOutput{pretty, aliases}, []LogSet{minedSet("reindex-catalog", false, 0, pyJob...)}, "catalog_v7",
			[]string{"catalog_v7 of search-api runs with index.refresh_interval -1", "alias catalog points at it", "failed to restore"}},
		{"OpenSearch flat settings", []evidence.CommandOutput{flat}, nil, "orders-2026.11", []string{"orders-2026.11"}},
		{"a Java job's failed restore only", nil, []LogSet{minedSet("reindexer", false, 0, javaJob...)}, "", []string{"refresh disabled", "update settings of index catalog_v7 failed"}},
		{"refreshing every second", []evidence.CommandOutput{healthy, aliases}, nil, "-", nil},
		{"the load restored its settings", nil, []LogSet{minedSet("reindex-catalog", false, 0, restored...)}, "-", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := detectRefreshDisabled(&Gathered{Logs: tc.sets, Commands: tc.cmds, Window: win, Scope: Scope{Service: "search-api"}}, nil)
			if tc.index == "-" {
				if len(fs) != 0 {
					t.Fatalf("want none, got %s", fs[0].Summary)
				}
				return
			}
			f := onlyFinding(t, fs, "search-api")
			if f.fact("index") != tc.index {
				t.Errorf("index %q, want %q", f.fact("index"), tc.index)
			}
			h := &Hypothesis{Kind: KindRefreshDisabled, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, tc.want...)
		})
	}
}
