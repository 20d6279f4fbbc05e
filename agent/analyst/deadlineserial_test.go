package analyst

import (
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A Job stopped at its deadline whose completions run one after another
// (parallelism below completions, 1 when unset; Indexed or NonIndexed)
// is explained by its spec; a Job run side by side, a single completion,
// one that completed and one without a deadline are not.
func TestDeadlineSerial(t *testing.T) {
	i32 := func(n int32) *int32 { return &n }
	i64 := func(n int64) *int64 { return &n }
	indexed := batchv1.IndexedCompletion
	job := func(par, comp *int32, deadline *int64, done int32, mode *batchv1.CompletionMode) batchv1.Job {
		return batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "tile-render-29927880", Namespace: "maps"},
			Spec:   batchv1.JobSpec{Parallelism: par, Completions: comp, ActiveDeadlineSeconds: deadline, CompletionMode: mode},
			Status: batchv1.JobStatus{Succeeded: done}}
	}
	for _, tc := range []struct {
		name string
		job  batchv1.Job
		want []string
	}{
		{"indexed, parallelism 1", job(i32(1), i32(3), i64(7200), 2, &indexed), []string{"its 3 Indexed completions run one after another", "parallelism 1, completions 3", "2 of 3 completions done", "about one hour each, about 3 hours for all of them"}},
		{"parallelism unset, four completions", job(nil, i32(4), i64(3600), 1, nil), []string{"its 4 completions run one after another", "1 of 4 completions done"}},
		{"two at a time of six", job(i32(2), i32(6), i64(5400), 2, nil), []string{"at most 2 at a time", "about 90 minutes each"}},
		{"none done yet", job(i32(1), i32(2), i64(1800), 0, nil), []string{"0 of 2 completions done"}},
		{"side by side", job(i32(3), i32(3), i64(7200), 2, &indexed), nil},
		{"one completion", job(i32(1), i32(1), i64(7200), 0, nil), nil},
		{"all completed", job(i32(1), i32(3), i64(7200), 3, nil), nil},
		{"no deadline", job(i32(1), i32(3), nil, 2, nil), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := Finding{Kind: KindJobFailed, Subject: "tile-render", Weight: 0.8}
			f.setFact("job", "tile-render-29927880")
			f.setFact("cronjob", "tile-render")
			f.setFact("reason", "DeadlineExceeded")
			explainDeadlineSerial(&f, []batchv1.Job{tc.job})
			if tc.want == nil {
				if f.fact("serial_completions") != "" || f.Weight != 0.8 {
					t.Fatalf("explained: %+v", f.Facts)
				}
				return
			}
			h := &Hypothesis{Kind: KindJobFailed, Subject: f.Subject, Primary: []*Finding{&f}}
			wantDescribed(t, h, Scope{}, append(tc.want, "activeDeadlineSeconds")...)
			if recs := recommend(h, Scope{}); len(recs) == 0 || !strings.Contains(recs[0].Action, "set parallelism to") {
				t.Errorf("recommendations %+v", recs)
			}
		})
	}
}
