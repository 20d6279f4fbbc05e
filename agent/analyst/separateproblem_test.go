package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/finding"
)

// A question about a whole namespace lists a second, unrelated failure as
// a separate problem (beside the root cause, with what to do, among the
// affected systems), not as ruled out; a failure that the root cause
// explains, one tied to it, a weak signal, or any other failure when the
// question names the root's subject, stays where it was.
func TestSeparateProblems(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 9, 9, 9, 0, time.UTC)
	root := func() *Hypothesis {
		f := &Finding{Kind: KindPrivilegedPort, Subject: "api-gateway", Severity: SevCritical, Weight: 0.95, Time: t0,
			Summary: "api-gateway exits: bind() to 0.0.0.0:80 failed (13: Permission denied)", Facts: map[string]string{"line": "bind() to 0.0.0.0:80 failed (13: Permission denied)", "port": "80"}}
		return &Hypothesis{Kind: KindPrivilegedPort, Subject: "api-gateway", Primary: []*Finding{f}, Onset: t0, Score: 0.97}
	}
	jobFailed := func(score float64, sev int, related ...string) *Hypothesis {
		f := &Finding{Kind: KindJobFailed, Subject: "reports-nightly", Severity: sev, Weight: 0.8, Time: t0.Add(-7 * time.Hour), Related: related,
			Summary: "Job staging/reports-nightly-29927640 failed (pods failed): upload to s3://acme-staging-reports-v2/daily/ failed: AccessDenied: Access Denied"}
		return &Hypothesis{Kind: KindJobFailed, Subject: "reports-nightly", Primary: []*Finding{f}, Onset: f.Time, Score: score}
	}
	nsWide := Scope{Message: "is anything unhealthy in staging? QA says the staging site is down", Namespace: "staging"}
	for _, tc := range []struct {
		name     string
		second   func(w *Hypothesis) *Hypothesis
		sc       Scope
		separate bool
	}{
		{"namespace-wide, unrelated Job failure", func(*Hypothesis) *Hypothesis { return jobFailed(0.76, SevCritical) }, nsWide, true},
		{"the question names the root's subject", func(*Hypothesis) *Hypothesis { return jobFailed(0.76, SevCritical) },
			Scope{Message: "why is api-gateway down?", Service: "api-gateway", Namespace: "staging"}, false},
		{"tied to the root (its finding relates to it)", func(*Hypothesis) *Hypothesis { return jobFailed(0.76, SevCritical, "api-gateway") }, nsWide, false},
		{"a question that names a service", func(*Hypothesis) *Hypothesis { return jobFailed(0.76, SevCritical) },
			Scope{Message: "storefront is down, what's broken?", Service: "storefront", Namespace: "staging"}, false},
		{"the same kind on another workload", func(*Hypothesis) *Hypothesis {
			h := jobFailed(0.76, SevCritical)
			h.Kind, h.Primary[0].Kind = KindPrivilegedPort, KindPrivilegedPort
			return h
		}, nsWide, false},
		{"a subject sharing a word with the root's", func(*Hypothesis) *Hypothesis {
			h := jobFailed(0.76, SevCritical)
			h.Subject, h.Primary[0].Subject = "api-gateway-canary", "api-gateway-canary"
			return h
		}, nsWide, false},
		{"a failing call", func(*Hypothesis) *Hypothesis {
			h := jobFailed(0.76, SevCritical)
			h.Kind, h.Primary[0].Kind = KindConnRefused, KindConnRefused
			return h
		}, nsWide, false},
		{"a weak signal", func(*Hypothesis) *Hypothesis { return jobFailed(0.3, SevCritical) }, nsWide, false},
		{"a warning only", func(*Hypothesis) *Hypothesis { return jobFailed(0.76, SevWarning) }, nsWide, false},
		{"explained by the root", func(w *Hypothesis) *Hypothesis {
			h := jobFailed(0.76, SevCritical)
			w.Support = append(w.Support, h.Primary[0])
			return h
		}, nsWide, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := root()
			h := tc.second(w)
			a := &Analysis{Hypotheses: []*Hypothesis{w, h}, Findings: []Finding{*w.Primary[0], *h.Primary[0]}}
			r := Build(a, tc.sc, nil, "pods")
			ruledOut := false
			for _, x := range r.RuledOut {
				ruledOut = ruledOut || strings.HasPrefix(x.Hypothesis, h.Subject+":")
			}
			named := strings.Contains(r.RootCause.Description, "Also failing, a separate problem not caused by this one: reports-nightly: Job failed")
			affected := strings.Contains(strings.Join(r.AffectedSystems, " "), "reports-nightly")
			rec := false
			for _, x := range r.Recommendations {
				rec = rec || strings.HasPrefix(x.Action, "Separately from api-gateway, handle reports-nightly") && x.Priority == finding.PriorityMedium
			}
			if tc.separate != named || tc.separate == ruledOut || tc.separate && !affected || tc.separate != rec {
				t.Errorf("separate %v: named %v, ruled out %v, affected %v, recommended %v\n%s\n%+v", tc.separate, named, ruledOut, affected, rec, r.RootCause.Description, r.RuledOut)
			}
		})
	}
}
