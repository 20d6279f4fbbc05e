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
		// A run that does not finish is not a restart.
		{"why is my job not finishing", 0.69, false},
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

// A question about a run that does not finish is answered with a Job
// stopped at its deadline, not a louder Job whose pods failed until its
// backoff limit, in the ways people ask.
func TestSymptomAskedUnfinished(t *testing.T) {
	build := func() []*Hypothesis {
		crashed := &Hypothesis{Kind: KindJobFailed, Subject: "feature-backfill", Score: 0.94,
			Primary: []*Finding{{Kind: KindJobFailed, Subject: "feature-backfill", Source: SrcKubernetes, Facts: map[string]string{"reason": "BackoffLimitExceeded"}}}}
		stopped := &Hypothesis{Kind: KindJobFailed, Subject: "tile-render", Score: 0.8,
			Primary: []*Finding{{Kind: KindJobFailed, Subject: "tile-render", Source: SrcKubernetes, Facts: map[string]string{"reason": "DeadlineExceeded"}}}}
		return []*Hypothesis{crashed, stopped}
	}
	known := map[string]bool{"feature-backfill": true, "tile-render": true}
	for _, tc := range []struct {
		msg     string
		demoted bool
	}{
		{"why is my job not finishing", true},
		{"the nightly export never completes anymore", true},
		{"our cronjob didn't finish last night", true},
		{"batch job is taking forever", true},
		{"why did my job fail", false},
	} {
		t.Run(tc.msg, func(t *testing.T) {
			hs := build()
			symptomAsked(hs, Scope{Message: tc.msg, Known: known})
			if got := hs[0].elsewhere && hs[0].Score < hs[1].Score; got != tc.demoted {
				t.Errorf("crashed Job: score %.2f elsewhere %v, want demoted %v", hs[0].Score, hs[0].elsewhere, tc.demoted)
			}
		})
	}
}
