package analyst

import (
	"testing"
	"time"
)

// TestConfidenceCalibration checks how sure the analyst says it is: a
// root seen directly with no close rival keeps its score; a close rival,
// a symptom with no mechanism behind it, a dependency only its callers
// report, and a change with no mechanism all lower the confidence, so a
// wrong answer on weak evidence does not look certain.
func TestConfidenceCalibration(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	hyp := func(k Kind, subject string, score float64, fs ...*Finding) *Hypothesis {
		if len(fs) == 0 {
			fs = []*Finding{{Kind: k, Subject: subject, Time: t0, Weight: 0.9, Source: SrcKubernetes}}
		}
		return &Hypothesis{Kind: k, Subject: subject, Score: score, Onset: t0, Primary: fs}
	}
	// A caller's log reporting a timeout calling pg-main.
	callerTimeout := &Finding{Kind: KindTimeout, Subject: "pg-main", Time: t0, Weight: 0.8, Source: SrcLogs, Facts: map[string]string{"caller": "orders"}}
	// pg-main's own metrics.
	ownTimeout := &Finding{Kind: KindTimeout, Subject: "pg-main", Time: t0, Weight: 0.6, Source: SrcMetrics}
	cases := []struct {
		name string
		hs   []*Hypothesis
		want float64
	}{
		{"direct cause, no rival", []*Hypothesis{hyp(KindOOMKilled, "api", 0.92), hyp(KindLatency, "web", 0.4)}, 92},
		{"rival at 80%", []*Hypothesis{hyp(KindOOMKilled, "api", 0.9), hyp(KindDiskFull, "db", 0.72)}, 85},
		{"rival at 90%", []*Hypothesis{hyp(KindOOMKilled, "api", 0.9), hyp(KindDiskFull, "db", 0.81)}, 80},
		{"rival as strong", []*Hypothesis{hyp(KindOOMKilled, "api", 0.9), hyp(KindDiskFull, "db", 0.88)}, 75},
		{"symptom without a mechanism", []*Hypothesis{hyp(KindErrorRate, "api", 0.9)}, 65},
		{"dependency only its callers report", []*Hypothesis{hyp(KindTimeout, "pg-main", 0.9, callerTimeout)}, 70},
		{"dependency seen itself", []*Hypothesis{hyp(KindTimeout, "pg-main", 0.9, callerTimeout, ownTimeout)}, 90},
		{"change without a mechanism", []*Hypothesis{hyp(KindConfigChange, "api", 0.9)}, 60},
	}
	for _, c := range cases {
		if got := confidence(&Analysis{Hypotheses: c.hs}); got != c.want {
			t.Errorf("%s: confidence %.0f, want %.0f", c.name, got, c.want)
		}
	}
}
