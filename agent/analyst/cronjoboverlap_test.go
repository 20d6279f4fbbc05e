package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

func TestDetectJobOverlapJoinsPoolExhaustion(t *testing.T) {
	w := testWindow()
	onset := w.Start.Add(20 * time.Minute)
	active := wseries(w, evidence.Labels{"cronjob": "invoice-export", "namespace": "billing"}, func(t time.Time) float64 {
		switch {
		case t.Before(w.Start):
			return 0
		case t.Before(onset):
			return 1
		}
		return 4
	})
	sets := []MetricSet{{Name: "kube_cronjob_status_active", Class: MetricState, Series: []evidence.Series{active}}}
	fs := DetectJobOverlap(sets, w)
	if len(fs) != 1 || fs[0].Subject != "invoice-export" || fs[0].fact("active_peak") != "4" {
		t.Fatalf("overlap findings: %+v", fs)
	}
	// One run at a time is normal: no finding.
	single := wseries(w, evidence.Labels{"job_name": "catalog-import-29700970"}, func(time.Time) float64 { return 1 })
	if got := DetectJobOverlap([]MetricSet{{Name: "kube_job_status_active", Class: MetricState, Series: []evidence.Series{single}}}, w); len(got) != 0 {
		t.Errorf("a single active Job is not an overlap: %+v", got)
	}
	db := Finding{Kind: KindDatabase, Subject: "postgresql", Time: onset.Add(5 * time.Minute), Weight: 0.9, Source: SrcLogs, Related: []string{"billing-api"},
		Facts: map[string]string{"line": "error query failed err=ERROR: query_wait_timeout (SQLSTATE 08P01)", "caller": "billing-api", "lines": "50"}}
	change := Finding{Kind: KindConfigChange, Subject: "invoice-export", Time: w.Start.Add(5 * time.Minute), Weight: 1, Source: SrcChanges,
		Summary: "config change of invoice-export", Facts: map[string]string{"description": `CronJob invoice-export schedule "0 * * * *" -> "*/10 * * * *"`}}
	a := Reason([]Finding{db, fs[0], change}, Scope{Service: "billing-api", Window: w})
	h := a.Hypotheses[0]
	d := describe(h, Scope{})
	if h.Kind != KindDatabase || h.Trigger == nil || h.Trigger.Subject != "invoice-export" {
		t.Fatalf("want the pool exhaustion triggered by the CronJob change, got %s (trigger %v)", h.Kind, h.Trigger)
	}
	for _, want := range []string{"pool", "query_wait_timeout", "CronJob invoice-export", "*/10"} {
		if !strings.Contains(d, want) {
			t.Errorf("description lacks %q: %s", want, d)
		}
	}
}
