package analyst

import (
	"testing"
)

// A question that names only the restarts it sees is answered with the
// cause of a workload that restarts: a louder failure of a workload that
// does not restart (an image pull, a failed Job) ranks below it, in the
// ways people ask; a question that names an object, asks of something
// else, or finds no cause of restarts strong enough leaves the ranking
// alone.
func TestSymptomAsked(t *testing.T) {
	build := func(restartScore float64) []*Hypothesis {
		pull := &Hypothesis{Kind: KindImagePull, Subject: "promo-preview", Score: 0.88,
			Primary: []*Finding{{Kind: KindImagePull, Subject: "promo-preview", Source: SrcKubernetes, Object: "pod staging/promo-preview-6c9d8b7f5-w2kzr"}}}
		job := &Hypothesis{Kind: KindJobFailed, Subject: "nightly-export", Score: 0.84,
			Primary: []*Finding{{Kind: KindJobFailed, Subject: "nightly-export", Source: SrcKubernetes, Object: "job staging/nightly-export-29402580"}}}
		kill := &Hypothesis{Kind: KindLivenessKill, Subject: "pricing-service", Score: restartScore,
			Primary: []*Finding{{Kind: KindLivenessKill, Subject: "pricing-service", Source: SrcKubernetes, Object: "pod staging/pricing-service-7d9c6b5f4-k2xqp"}},
			Support: []*Finding{{Kind: KindCrashLoop, Subject: "pricing-service", Source: SrcKubernetes}}}
		return []*Hypothesis{pull, job, kill}
	}
	known := map[string]bool{"promo-preview": true, "nightly-export": true, "pricing-service": true}
	for _, tc := range []struct {
		msg          string
		restartScore float64
		demoted      bool
	}{
		{"pod keeps restarting in staging", 0.69, true},
		{"why does my pod keep crashing?", 0.69, true},
		{"container stuck in a crash loop since the release", 0.69, true},
		{"CrashLoopBackOff in staging, help", 0.69, true},
		{"our api pods restart every few minutes", 0.69, true},
		{"pods keep getting killed after the upgrade", 0.69, true},
		// Not a question about restarts.
		{"staging is broken since this morning", 0.69, false},
		// The question names its object: subjectFirst judges it.
		{"promo-preview keeps restarting", 0.69, false},
		// Nothing that restarts has a cause of its own.
		{"pod keeps restarting in staging", 0.4, false},
	} {
		t.Run(tc.msg, func(t *testing.T) {
			hs := build(tc.restartScore)
			symptomAsked(hs, Scope{Message: tc.msg, Known: known})
			for _, h := range hs[:2] {
				if got := h.Score < tc.restartScore && h.elsewhere; got != tc.demoted {
					t.Errorf("%s: score %.2f elsewhere %v, want demoted %v", h.Subject, h.Score, h.elsewhere, tc.demoted)
				}
				if tc.demoted && h.unasked == "" {
					t.Errorf("%s: no symptom named", h.Subject)
				}
			}
			if hs[2].elsewhere || hs[2].Score != tc.restartScore {
				t.Errorf("the restarting workload moved: %+v", hs[2])
			}
		})
	}
}
