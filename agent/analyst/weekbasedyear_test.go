package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// Dates written with the week-based year, as services log them: a Spring
// Boot line naming a file and an ISO date, a Python logging line with a
// compact date, a Go slog line in January with the year behind, and the
// lines an operator printed from a Job's log; the receiver's refusal is
// quoted when a log shows it. A date a year ahead on purpose (an expiry),
// the right year, and a line outside the turn of the year are not it.
func TestWeekBasedYear(t *testing.T) {
	dec := time.Date(2026, 12, 28, 6, 0, 40, 0, time.UTC)
	w := Window{BaselineStart: dec.Add(-48 * time.Hour), Start: dec.Add(-24 * time.Hour), End: dec.Add(2 * time.Hour)}
	refusal := `2026-12-28T06:31:12.006Z WARN poller: group rejected OrgnlMsgId=PO-20271228-0600 Rsn/Cd=DT01 AddtlInf="ReqdExctnDt 2027-12-28 is more than 90 days in the future"`
	for _, tc := range []struct {
		name string
		at   time.Time
		line string
		cmd  bool
		want []string // nil: no finding
	}{
		{"spring boot, iso date", dec, `2026-12-28 06:00:44.902  INFO 1 --- [main] c.e.payouts.sepa.PainFileWriter : wrote PAYOUT_20271228_0600.xml ReqdExctnDt=2027-12-28 NbOfTxs=6034`, false,
			[]string{"on 2026-12-28 it writes 2027-12-28", `"YYYY" (week-based-year)`, "the receiver refuses the date", "DT01"}},
		{"python, compact date for tomorrow", time.Date(2026, 12, 30, 22, 0, 0, 0, time.UTC), `2026-12-30 22:00:01,114 INFO exporter: wrote settlement_20271231.csv rows=4410`, false,
			[]string{"on 2026-12-30 it writes 20271231"}},
		{"go slog in january, the year behind", time.Date(2027, 1, 2, 8, 0, 0, 0, time.UTC), `time=2027-01-02T08:00:00Z level=INFO msg="invoice batch" due=2026-01-02`, false,
			[]string{"on 2027-01-02 it writes 2026-01-02"}},
		{"a job's log printed by the operator", dec, `2026-12-28 06:00:44.902  INFO 1 --- [main] c.e.payouts.sepa.PainFileWriter : wrote PAYOUT_20271228_0600.xml ReqdExctnDt=2027-12-28`, true,
			[]string{"it writes 2027-12-28"}},
		{"an expiry a year ahead", dec, `2026-12-28 06:00:00 INFO certificate renewed, valid until 2027-12-28`, false, nil},
		{"the right year", dec, `2026-12-28 06:00:44 INFO wrote PAYOUT_20261228_0600.xml ReqdExctnDt=2026-12-28`, false, nil},
		{"not at the turn of the year", time.Date(2026, 6, 10, 6, 0, 0, 0, time.UTC), `2026-06-10 06:00:44 INFO wrote report 2027-06-10`, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &Gathered{Window: w, Logs: []LogSet{{Source: "bank-status-poller-7d6c9b8f5-q2xkw", Subject: "bank-status-poller", Templates: []analysis.LogTemplate{{Example: refusal, Incident: 1, FirstIncident: dec.Add(30 * time.Minute)}}}}}
			if tc.cmd {
				g.Commands = []evidence.CommandOutput{{Command: "kubectl logs -n payments job/payout-file-29973960", Run: "kubectl logs -n payments job/payout-file-29973960", Target: "job/payout-file", Lines: []string{tc.line}}}
			} else {
				g.Logs = append(g.Logs, LogSet{Source: "payout-file-29973960-abcde", Subject: "payout-file", Templates: []analysis.LogTemplate{{Example: tc.line, Incident: 1, FirstSeen: tc.at, FirstIncident: tc.at}}})
			}
			fs := detectWeekBasedYear(g, nil)
			if tc.want == nil {
				if len(fs) != 0 {
					t.Fatalf("findings %+v", fs)
				}
				return
			}
			f := onlyFinding(t, fs, "payout-file")
			h := &Hypothesis{Kind: f.Kind, Subject: f.Subject, Primary: []*Finding{f}}
			d := weekBasedYear.describe(h, Scope{})
			for _, s := range tc.want {
				if !strings.Contains(d, s) {
					t.Errorf("description lacks %q:\n%s", s, d)
				}
			}
		})
	}
}
