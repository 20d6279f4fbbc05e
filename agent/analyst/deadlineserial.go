package analyst

import (
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
)

// A Job stopped at its deadline whose completions run one after another:
// completions above parallelism (1 unless set) mean the job controller
// starts the next pod only when one finishes, so the run lasts as long as
// its completions' pods together, divided by the parallelism. A Job split
// into several completions (an Indexed Job, one index per region or shard)
// with parallelism left at 1 takes as long as the whole work did before
// and more (each pod repeats its start-up), and an activeDeadlineSeconds
// sized for one pass stops it with some completions done: "2 of 3". The
// Job's spec (describe job's Parallelism, Completions and Active Deadline
// Seconds, or its YAML) and its status (the succeeded count) say so.

// explainDeadlineSerial adds to a Job finding stopped at its deadline that
// its completions ran one after another, when its spec says so.
func explainDeadlineSerial(f *Finding, jobs []batchv1.Job) {
	for i := range jobs {
		j := &jobs[i]
		if j.Name != f.fact("job") || j.Spec.Completions == nil || j.Spec.ActiveDeadlineSeconds == nil {
			continue
		}
		c := int(*j.Spec.Completions)
		p := 1
		if j.Spec.Parallelism != nil {
			p = int(*j.Spec.Parallelism)
		}
		if c < 2 || p < 1 || p >= c {
			return
		}
		done := int(j.Status.Succeeded)
		if done >= c {
			return
		}
		dl := time.Duration(*j.Spec.ActiveDeadlineSeconds) * time.Second
		f.setFact("serial_completions", fmt.Sprint(c))
		f.setFact("serial_parallelism", fmt.Sprint(p))
		f.setFact("serial_done", fmt.Sprint(done))
		f.setFact("serial_deadline", fmt.Sprintf("%ds (%s)", *j.Spec.ActiveDeadlineSeconds, durationWords(dl)))
		if mode := j.Spec.CompletionMode; mode != nil && *mode == batchv1.IndexedCompletion {
			f.setFact("serial_indexed", "true")
		}
		// With some completions done, each took about the deadline's
		// share: the whole would need that many times more.
		if done > 0 {
			per := dl * time.Duration(p) / time.Duration(done)
			need := per * time.Duration(c) / time.Duration(p)
			f.setFact("serial_each", durationWords(per.Round(time.Minute)))
			f.setFact("serial_need", durationWords(need.Round(time.Minute)))
		}
		f.Evidence = append(f.Evidence, fmt.Sprintf("Job %s: parallelism %d, completions %d, activeDeadlineSeconds %d: %d of %d completions succeeded before the deadline stopped it", j.Name, p, c, *j.Spec.ActiveDeadlineSeconds, done, c))
		f.Weight = max(f.Weight, 0.9)
		return
	}
}

// describeDeadlineSerial says that the run's completions ran one after
// another past its deadline.
func describeDeadlineSerial(h *Hypothesis) string {
	c := h.fact("serial_completions")
	if c == "" {
		return ""
	}
	p := h.fact("serial_parallelism")
	at := "one after another"
	if p != "1" {
		at = "at most " + p + " at a time"
	}
	mode := ""
	if h.fact("serial_indexed") != "" {
		mode = " Indexed"
	}
	d := fmt.Sprintf("; its %s%s completions run %s (parallelism %s, completions %s), so the run lasts as long as all its pods together, and activeDeadlineSeconds %s stopped it with %s of %s completions done",
		c, mode, at, p, c, h.fact("serial_deadline"), h.fact("serial_done"), c)
	if e := h.fact("serial_each"); e != "" {
		d += fmt.Sprintf(" (at that pace about %s each, about %s for all of them)", e, h.fact("serial_need"))
	}
	return d
}

// recommendDeadlineSerial recommends for a run whose completions ran one
// after another past its deadline; false when they did not.
func recommendDeadlineSerial(h *Hypothesis, r *recommender) bool {
	c := h.fact("serial_completions")
	if c == "" {
		return false
	}
	what := orWord(h.fact("cronjob"), h.fact("job"))
	r.high("Let the completions of the Job %s run side by side: set parallelism to %s (its completions), or raise activeDeadlineSeconds (now %s) to cover all of them one after another (about %s), then re-run it", what, c, h.fact("serial_deadline"), orWord(h.fact("serial_need"), "the sum of their run times"))
	r.med("When a Job is split into completions, size its parallelism and deadline together, and check the nodes can run that many pods at once")
	return true
}
