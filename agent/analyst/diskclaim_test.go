package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// TestDiskClaim checks an alert's claim that a host's disk fills against
// node_exporter's free-space series: a temporary write whose space came
// back refutes it (and the host's log names the writer), a steady fall
// confirms it.
func TestDiskClaim(t *testing.T) {
	w := testWindow() // 10:00 baseline, 11:00-12:00 window
	const gib = float64(1 << 30)
	start, back := w.Start.Add(-10*time.Minute), w.End.Add(-8*time.Minute)
	temporary := func(at time.Time) float64 { // a dump written, uploaded, removed
		switch {
		case at.Before(start):
			return 980 * gib
		case at.Before(back):
			return 980*gib - at.Sub(start).Minutes()*5*gib
		}
		return 979 * gib
	}
	filling := func(at time.Time) float64 { return 980*gib - at.Sub(w.BaselineStart).Minutes()*4*gib }
	flat := func(time.Time) float64 { return 980 * gib }
	labels := evidence.Labels{"instance": "pg-main-01:9100", "job": "node", "device": "/dev/nvme1n1", "fstype": "ext4", "mountpoint": "/var/lib/postgresql"}
	root := evidence.Labels{"instance": "pg-main-01:9100", "job": "node", "device": "/dev/nvme0n1p1", "fstype": "ext4", "mountpoint": "/"}
	backupLog := LogSet{Source: "pg-main-01/pg-backup.log", Subject: "pg-main-01", Origin: SrcLogs, Host: true, Templates: []analysis.LogTemplate{
		tmpl("2026-05-01T10:50:05+00:00 pg-main-01 pg-backup[412233]: pg_dump -Fd -j 4 -Z 3 -f /var/lib/postgresql/backups/orders-20260501T1050 orders", 1, start.Add(5*time.Second), start.Add(5*time.Second)),
		tmpl("2026-05-01T11:51:52+00:00 pg-main-01 pg-backup[412233]: removed local staging dir /var/lib/postgresql/backups/orders-20260501T1050", 1, back.Add(-10*time.Second), back.Add(-10*time.Second)),
	}}
	msg := "Alert HostDiskWillFillIn4Hours fired for pg-main-01 at 11:41. Is it real, or can I go back to sleep?"
	cases := []struct {
		name string
		msg  string
		free func(time.Time) float64
		real bool
		says []string
	}{
		{"a temporary dump refutes the claim", msg, temporary, false, []string{"not borne out", "/var/lib/postgresql", "temporary", "pg-backup", "pg_dump", "removed"}},
		{"a steady fall confirms it", msg, filling, true, []string{"is real", "keeps falling", "full in about"}},
		{"a flat disk refutes it", msg, flat, false, []string{"not borne out", "not filling"}},
	}
	for _, c := range cases {
		sets := []MetricSet{{Name: "node_filesystem_avail_bytes", Class: MetricFree, Unit: "bytes", Series: []evidence.Series{wseries(w, labels, c.free), wseries(w, root, flat)}}}
		fs := detectDiskClaim(&Gathered{Metrics: sets, Logs: []LogSet{backupLog}, Window: w, Scope: Scope{Message: c.msg, Service: "pg-main-01", Alert: "HostDiskWillFillIn4Hours"}}, nil)
		if len(fs) != 1 {
			t.Errorf("%s: %d findings, want 1", c.name, len(fs))
			continue
		}
		if (fs[0].fact("real") != "") != c.real {
			t.Errorf("%s: real=%q, want %v", c.name, fs[0].fact("real"), c.real)
		}
		h := &Hypothesis{Kind: KindDiskClaim, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}, Onset: fs[0].Time}
		d := diskClaim.describe(h, Scope{})
		for _, s := range c.says {
			if !strings.Contains(d, s) {
				t.Errorf("%s: description %q does not say %q", c.name, d, s)
			}
		}
	}
	// Without an alert or a question about a disk, nothing is claimed.
	sets := []MetricSet{{Name: "node_filesystem_avail_bytes", Series: []evidence.Series{wseries(w, labels, temporary)}}}
	if fs := detectDiskClaim(&Gathered{Metrics: sets, Window: w, Scope: Scope{Message: "Why is pg-main-01 slow?", Service: "pg-main-01"}}, nil); len(fs) != 0 {
		t.Errorf("no claim: %d findings", len(fs))
	}
}
