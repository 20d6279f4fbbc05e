package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// TestDeadlineExplained: a Job stopped at its deadline ran too long; its
// run's log says which calls took the time (a line calling itself slow
// first, "took=" and "last_bulk_took=" read as durations), what it calls
// (the hosts of its URLs) and the change to that dependency shortly before
// the run. A run whose calls stayed fast, or a change to something it does
// not call, explains nothing.
func TestDeadlineExplained(t *testing.T) {
	start := time.Date(2026, 9, 15, 3, 0, 0, 0, time.UTC)
	end := start.Add(3 * time.Hour)
	run := func(lines ...string) []LogSet {
		set := LogSet{Source: "logs/catalog-reindex.log", Subject: "catalog-reindex", Origin: SrcLogs}
		for i, l := range lines {
			set.Templates = append(set.Templates, analysis.LogTemplate{Example: l, Incident: 10, FirstSeen: start.Add(time.Duration(i) * time.Minute)})
		}
		return []LogSet{set}
	}
	opening := "2026-09-15T03:00:14.190Z INFO  reindex shard=1/4 job=catalog-reindex-29824020 source=postgres://catalog-ro@catalog-db-replica:5432/catalog target=https://vpc-catalog-search-7x2kq9.eu-west-1.es.amazonaws.com index=products-20260915"
	progress := analysis.LogTemplate{Example: "2026-09-15T03:01:56.093Z INFO  reindex shard=1/4 progress 100000/2398500 (4.2%) rate=981 docs/s last_bulk_took=714ms errors=0",
		Last: "2026-09-15T05:59:51.221Z INFO  reindex shard=3/4 progress 1300000/2401800 (54.1%) rate=121 docs/s last_bulk_took=6025ms errors=0", Incident: 70}
	slow := "2026-09-15T05:58:31.978Z WARN  opensearch bulk request slow: took=11353ms items=1000 status=200 errors=false (threshold 10000ms)"
	changes := []evidence.Change{
		{Timestamp: start.Add(-18 * time.Minute), Service: "catalog-search", Kind: "infra", Description: "terraform apply: aws_opensearch_domain.catalog_search instance_type r6g.large.search -> r6g.xlarge.search"},
		{Timestamp: start.Add(-10 * time.Hour), Service: "search-api", Kind: "deploy", Description: "search-api 8.2.0: synonym expansion for brand names"},
	}
	withProgress := run(opening, slow)
	withProgress[0].Templates = append(withProgress[0].Templates, progress)
	cases := []struct {
		name    string
		logs    []LogSet
		changes []evidence.Change
		want    []string // facts' words; nil: nothing explained
	}{
		{"slow bulk calls after the search domain changed", withProgress, changes,
			[]string{"11.35 s", "opensearch bulk request slow", "vpc-catalog-search-7x2kq9", "infrastructure change of catalog-search"}},
		{"only the progress lines' durations", func() []LogSet { l := run(opening); l[0].Templates = append(l[0].Templates, progress); return l }(), changes,
			[]string{"6.03 s", "714 ms at first", "infrastructure change of catalog-search"}},
		{"calls stayed fast", run(opening, "2026-09-15T03:01:56.093Z INFO  reindex progress rate=981 docs/s last_bulk_took=714ms errors=0"), changes, nil},
		{"a change to what the run does not call", run(opening, slow), changes[1:], []string{"11.35 s"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := Finding{Kind: KindJobFailed, Subject: "catalog-reindex", Time: end}
			f.setFact("job", "catalog-reindex-29824020")
			f.setFact("reason", "DeadlineExceeded")
			explainDeadline(&f, c.logs, []string{"catalog-reindex", "catalog-reindex-29824020"}, c.changes, start)
			h := &Hypothesis{Kind: KindJobFailed, Subject: f.Subject, Primary: []*Finding{&f}}
			d := describeDeadline(h)
			if c.want == nil {
				if d != "" {
					t.Fatalf("explained: %s", d)
				}
				return
			}
			for _, w := range c.want {
				if !strings.Contains(d, w) {
					t.Errorf("%q does not say %q", d, w)
				}
			}
			if len(c.changes) == 1 && strings.Contains(d, "search-api") {
				t.Errorf("%q blames a change to something the run does not call", d)
			}
		})
	}
}
