package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
)

func TestOutcomeSubject(t *testing.T) {
	cases := map[string]string{
		"Do the logs show whether last night's payment file upload to the bank SFTP went through? Finance says the bank didn't receive the 02:00 file.": "last night's payment file upload to the bank SFTP",
		"Did the nightly orders backup run?":                      "the nightly orders backup",
		"Has the invoice export completed?":                       "the invoice export",
		"Was the settlement report sent to the partner?":          "the settlement report",
		"Why is checkout slow since 14:10?":                       "",
		"Why did the invoice export fail last night?":             "",
		"How did the nightly backup fail?":                        "",
		"Are there any 413 or timeout errors in the upload logs?": "",
	}
	for q, want := range cases {
		if got := outcomeSubject(q); got != want {
			t.Errorf("outcomeSubject(%q) = %q, want %q", q, got, want)
		}
	}
}

// journalSet mines real journal lines (a host's syslog/journal: systemd
// units, a script's output) into templates per line, with their minutes.
func journalSet(source, subject string, lines map[string][]time.Time) LogSet {
	set := LogSet{Source: source, Subject: subject, Origin: SrcLogs, Host: true, HasBaseline: true}
	for l, at := range lines {
		t := analysis.LogTemplate{Template: l, Example: l, Count: len(at), Incident: len(at), FirstSeen: at[0], FirstIncident: at[0], LastSeen: at[len(at)-1], PerMinute: map[int64]int{}}
		for _, x := range at {
			t.PerMinute[x.Unix()/60]++
		}
		set.Templates = append(set.Templates, t)
	}
	return set
}

// TestDetectOutcome answers whether an operation went through from the
// lines of its runs: the failure with the reason logged by the same run, or
// the success.
func TestDetectOutcome(t *testing.T) {
	w := Window{BaselineStart: time.Date(2026, 7, 7, 4, 0, 0, 0, time.UTC), Start: time.Date(2026, 7, 7, 18, 0, 0, 0, time.UTC), End: time.Date(2026, 7, 8, 7, 30, 0, 0, time.UTC)}
	run1, run2 := time.Date(2026, 7, 8, 2, 0, 15, 0, time.UTC), time.Date(2026, 7, 8, 2, 30, 15, 0, time.UTC)
	both := []time.Time{run1, run2}
	failing := journalSet("batch-01/journal.log", "batch-01", map[string][]time.Time{
		"2026-07-08T02:00:15.000000+00:00 batch-01 bank-file-export[311204]: INFO uploading PAYOUT_20260708_0200.xml to sftp://acme-payouts@sftp.ing-partner.example:22/inbound/": both,
		"2026-07-08T02:00:15.410000+00:00 batch-01 bank-file-export[311204]: @    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @":                                         both,
		"2026-07-08T02:00:15.410000+00:00 batch-01 bank-file-export[311204]: Host key verification failed.":                                                                       both,
		"2026-07-08T02:00:15.420000+00:00 batch-01 bank-file-export[311204]: ERROR sftp upload failed (exit 255); file kept in /var/spool/bank-export for retry":                  both,
		"2026-07-08T02:00:15.500000+00:00 batch-01 systemd[1]: bank-file-export.service: Failed with result 'exit-code'.":                                                         both,
		"2026-07-08T00:41:19.000000+00:00 batch-01 ledger-snapshot[301122]: upload complete (812.4 MiB in 11m17s)":                                                                {time.Date(2026, 7, 8, 0, 41, 19, 0, time.UTC)},
	})
	succeeding := journalSet("db-01/journal.log", "db-01", map[string][]time.Time{
		"2026-07-08T01:00:02.000000+00:00 db-01 pg-backup[4121]: starting pg_dump of orders to /var/backups/orders.dump":                       {time.Date(2026, 7, 8, 1, 0, 2, 0, time.UTC)},
		"2026-07-08T01:21:40.000000+00:00 db-01 pg-backup[4121]: orders backup uploaded to s3://acme-backups/orders/2026-07-08.dump (9.2 GiB)": {time.Date(2026, 7, 8, 1, 21, 40, 0, time.UTC)},
	})
	cases := []struct {
		name, q, svc string
		logs         []LogSet
		outcome      string
		says         []string
	}{
		{"an upload refused by the remote host key", "Do the logs show whether last night's payment file upload to the bank SFTP went through?", "bank-file-export",
			[]LogSet{failing}, "failed", []string{"no:", "sftp upload failed", "Host key verification failed", "2 times"}},
		{"a backup that went through", "Did the nightly orders backup go through?", "pg-backup",
			[]LogSet{succeeding}, "succeeded", []string{"yes:", "uploaded to s3"}},
		{"not an outcome question", "Why is the bank upload slow?", "bank-file-export", []LogSet{failing}, "", nil},
		{"nothing logged about it", "Did the invoice mail go through?", "billing", []LogSet{succeeding}, "", nil},
	}
	for _, c := range cases {
		fs := detectOutcome(&Gathered{Logs: c.logs, Window: w, Scope: Scope{Message: c.q, Service: c.svc}}, nil)
		if c.outcome == "" {
			if len(fs) != 0 {
				t.Errorf("%s: %d findings, want none: %s", c.name, len(fs), fs[0].Summary)
			}
			continue
		}
		if len(fs) != 1 || fs[0].fact("outcome") != c.outcome {
			t.Errorf("%s: findings %+v, want one that %s", c.name, fs, c.outcome)
			continue
		}
		h := &Hypothesis{Kind: KindOutcome, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}, Onset: fs[0].Time}
		d := outcomeM.describe(h, Scope{})
		for _, s := range c.says {
			if !strings.Contains(d, s) {
				t.Errorf("%s: description %q does not say %q", c.name, d, s)
			}
		}
	}
}
