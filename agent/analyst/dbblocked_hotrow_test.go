package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// tmplLast is tmpl whose last line differs from its first.
func tmplLast(first, last string, n int, at, until time.Time) analysis.LogTemplate {
	t := tmpl(first, n, at, until)
	t.Last = last
	return t
}

// TestDBBlockedHotRow: lock waits that all queue on one row (a stock
// counter during a sale) are contention on that row, not a long
// transaction; a question whether there are deadlocks is answered yes or
// no from the database's log and its deadlock counter.
func TestDBBlockedHotRow(t *testing.T) {
	w := testWindow()
	on := w.Start.Add(5 * time.Minute)
	end := w.End.Add(-time.Minute)
	pgWait := tmplLast("2026-05-01 11:05:00.000 UTC [48006] app@shop LOG:  process 48006 still waiting for ShareLock on transaction 77120391 after 1000.336 ms",
		"2026-05-01 11:59:00.000 UTC [48108] app@shop LOG:  process 48108 still waiting for ShareLock on transaction 77132821 after 1000.273 ms", 600, on, end)
	pgRow := func(first, last string) analysis.LogTemplate {
		return tmplLast(`2026-05-01 11:05:00.000 UTC [48006] app@shop CONTEXT:  while updating tuple (`+first+`) in relation "stock_levels"`,
			`2026-05-01 11:59:00.000 UTC [48108] app@shop CONTEXT:  while updating tuple (`+last+`) in relation "stock_levels"`, 900, on, end)
	}
	pgParams := tmplLast("2026-05-01 11:05:18.846 UTC [48343] app@shop DETAIL:  parameters: $1 = '1', $2 = 'SKU-4411-RED', $3 = '3'",
		"2026-05-01 11:58:54.463 UTC [48065] app@shop DETAIL:  parameters: $1 = '1', $2 = 'SKU-4411-RED', $3 = '3'", 150, on, end)
	innoWait := tmpl("2026-05-01T11:05:00.120Z 52 [Note] InnoDB: Lock wait timeout exceeded; try restarting transaction", 40, on, end)
	innoRow := tmplLast("RECORD LOCKS space id 58 page no 3 n bits 72 index PRIMARY of table `shop`.`wallets` trx id 9912 lock_mode X locks rec but not gap waiting",
		"RECORD LOCKS space id 58 page no 3 n bits 72 index PRIMARY of table `shop`.`wallets` trx id 10877 lock_mode X locks rec but not gap waiting", 40, on, end)
	innoDeadlock := tmpl("2026-05-01T11:20:00.120Z 52 [Note] InnoDB: Transactions deadlock detected, dumping detailed information.", 3, on.Add(15*time.Minute), end)
	pgDeadlocks := func(v float64) MetricSet {
		return MetricSet{Name: "pg_stat_database_deadlocks", Series: []evidence.Series{wseries(w, evidence.Labels{"instance": "pg-main-01:9187", "datname": "shop"},
			func(at time.Time) float64 {
				if at.After(on) {
					return v
				}
				return 12
			})}}
	}
	ask := Scope{Message: "Do the database logs show any deadlocks? checkout calls take 4s since the sale began"}
	cases := []struct {
		name    string
		logs    []analysis.LogTemplate
		metrics []MetricSet
		table   string   // hot table, "" for none
		want    []string // in the description answering ask
	}{
		{name: "PostgreSQL waits on one tuple, no deadlock logged or counted",
			logs: []analysis.LogTemplate{pgWait, pgRow("1822,14", "1822,14"), pgParams}, metrics: []MetricSet{pgDeadlocks(12)},
			table: "stock_levels", want: []string{"No deadlocks", "pg_stat_database_deadlocks did not rise", "hot row", "stock_levels", "tuple (1822,14)", "SKU-4411-RED"}},
		{name: "PostgreSQL deadlock counter rising: yes",
			logs: []analysis.LogTemplate{pgWait, pgRow("1822,14", "1822,14")}, metrics: []MetricSet{pgDeadlocks(15)},
			table: "stock_levels", want: []string{"Yes, deadlocks", "hot row"}},
		{name: "PostgreSQL waits on different rows: a long transaction, not a hot row",
			logs: []analysis.LogTemplate{pgWait, pgRow("1822,14", "977,3")},
			want: []string{"No deadlocks", "long transaction"}},
		{name: "InnoDB lock monitor: one record of one table",
			logs:  []analysis.LogTemplate{innoWait, innoRow},
			table: "wallets", want: []string{"No deadlocks", "hot row", "wallets"}},
		{name: "InnoDB deadlock logged: yes",
			logs:  []analysis.LogTemplate{innoWait, innoRow, innoDeadlock},
			table: "wallets", want: []string{"Yes, deadlocks", "wallets"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			set := LogSet{Source: "pg-main-01/postgresql.log", Subject: "pg-main-01", Origin: SrcLogs, Host: true, Templates: c.logs}
			fs := detectDBBlocked(&Gathered{Logs: []LogSet{set}, Metrics: c.metrics, Window: w}, nil)
			if len(fs) != 1 {
				t.Fatalf("findings = %d, want 1", len(fs))
			}
			f := fs[0]
			if got := f.fact("hot_table"); got != c.table {
				t.Errorf("hot table = %q, want %q", got, c.table)
			}
			h := &Hypothesis{Kind: KindDBBlocked, Subject: f.Subject, Primary: []*Finding{&f}, Onset: f.Time}
			d := dbBlocked.describe(h, ask)
			for _, x := range c.want {
				if !strings.Contains(d, x) {
					t.Errorf("description lacks %q: %s", x, d)
				}
			}
			// Not asked about deadlocks: no yes or no.
			if d := dbBlocked.describe(h, Scope{Message: "why is checkout slow?"}); strings.Contains(d, "eadlocks") {
				t.Errorf("unasked deadlock answer: %s", d)
			}
			// A scaling change is no trigger of a hot row; a sale is.
			hpa := &Finding{Kind: KindConfigChange, Summary: "config change of shop-api", Facts: map[string]string{"description": "HPA minReplicas 2 -> 4 for the sale"}}
			sale := &Finding{Kind: KindFeatureFlag, Summary: "feature flag", Facts: map[string]string{"description": "flash sale banner on, bundle at 299 EUR from 11:00"}}
			if c.table != "" {
				if fitsMechanism(h, hpa) || !strictTrigger(h) || !fitsMechanism(h, sale) {
					t.Errorf("hot row: scaling change fits %v, strict %v, sale fits %v", fitsMechanism(h, hpa), strictTrigger(h), fitsMechanism(h, sale))
				}
			} else if strictTrigger(h) {
				t.Errorf("a long transaction's triggers are not strict")
			}
		})
	}
}
