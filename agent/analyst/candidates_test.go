package analyst

import (
	"testing"
	"time"
)

// TestCandidatesRanked checks that a result lists its hypotheses best
// first, the first being the root cause, one per subject and kind, each
// with a subject, a score and its onset.
func TestCandidatesRanked(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	sc := Scope{Service: "checkout", Namespace: "shop", Window: Window{BaselineStart: t0.Add(-2 * time.Hour), Start: t0.Add(-time.Hour), End: t0}}
	fs := []Finding{
		{Kind: KindOOMKilled, Subject: "checkout", Object: "pod shop/checkout-1", Namespace: "shop", Time: t0.Add(-30 * time.Minute), Weight: 0.95, Source: SrcKubernetes, Summary: "checkout OOMKilled"},
		{Kind: KindOOMKilled, Subject: "checkout", Object: "pod shop/checkout-2", Namespace: "shop", Time: t0.Add(-29 * time.Minute), Weight: 0.95, Source: SrcKubernetes, Summary: "checkout OOMKilled"},
		{Kind: KindImagePull, Subject: "reports", Object: "pod shop/reports-1", Namespace: "shop", Time: t0.Add(-20 * time.Minute), Weight: 0.9, Source: SrcKubernetes, Summary: "reports image pull"},
		{Kind: KindTimeout, Subject: "redis", Object: "logs cart", Namespace: "shop", Time: t0.Add(-10 * time.Minute), Weight: 0.6, Source: SrcLogs, Summary: "cart logs timeouts", Facts: map[string]string{"lines": "40"}},
	}
	a := Reason(fs, sc)
	r := Build(a, sc, nil, "kubernetes")
	if len(r.Candidates) != 3 {
		t.Fatalf("candidates %+v, want 3", r.Candidates)
	}
	if c := r.Candidates[0]; c.Subject != "checkout" || c.Kind != string(KindOOMKilled) || c.FirstSeen != ts(t0.Add(-30*time.Minute)) {
		t.Errorf("first candidate %+v, want checkout oom_killed since the first kill", c)
	}
	for i := 1; i < len(r.Candidates); i++ {
		if r.Candidates[i].Score > r.Candidates[i-1].Score {
			t.Errorf("candidates not ranked: %+v", r.Candidates)
		}
	}
	if err := r.Validate(); err != nil {
		t.Errorf("result invalid: %v", err)
	}
}
