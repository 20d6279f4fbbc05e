package analyst

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A batch job splits its rows into batches of a configured size, and each
// batch pays a cost that does not shrink with it: a commit, a round trip,
// a materialized view refresh, an index rebuild, an API call. Cut the size
// tenfold (for shorter locks, smaller transactions) and the job runs ten
// times as many batches, each paying the fixed cost again: nothing fails,
// the job only takes many times longer. The run's own log counts the
// batches ("batch 17/412", "in 412 batches", "chunk 3 of 40") and states
// the size it ran with (batch_size=500); its Jobs show how long each run
// took. The change that lowered the size, between a normal run and the
// slow one, is the cause; a deploy of the job at the same time is not,
// unless it changes the batching.

// KindBatchSizeCut is a job that ran many more batches, each with a
// fixed cost, after its batch size was lowered.
const KindBatchSizeCut Kind = "batch_size_cut"

var batchSizeCut = &mechanism{
	kind:   KindBatchSizeCut,
	class:  classCause,
	label:  "batch size lowered: many more batches, each paying a fixed cost",
	detect: detectBatchSizeCut,
	// Only a change that lowers the size triggers it; an image or a
	// library bump between the runs is a coincidence.
	strictTriggers: true,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return sizeCutOf(changeText(c)) != nil
	},
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("%s runs %s batches since its batch size was lowered from %s to %s by the %s: each batch pays the same fixed cost, so the same work takes many times longer",
			h.Subject, orWord(h.fact("batches"), "many more"), orWord(h.fact("from"), "its old value"), orWord(h.fact("to"), "a lower one"), orWord(h.fact("change"), "a change"))
		return d + h.clause("; ", "runs") + h.clause("; ", "counted") + h.clause("; the fixed cost per batch: ", "step") + h.wrapped("; ", "others", " changes nothing of the batching")
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Restore %s's batch size (%s back to %s), or keep the smaller batches and move the per-batch step (%s) to once per run", h.Subject, orWord(h.fact("key"), "the size"), orWord(h.fact("from"), "its old value"), orWord(h.fact("step_name"), "the refresh, commit or call each batch repeats"))
		r.med("If smaller batches were wanted for shorter locks, choose a size whose batch count times the fixed per-batch cost stays within the job's time budget")
		r.low("Alert on the job's duration against its usual runs (kube_job_status_completion_time - kube_job_status_start_time)")
	},
}

var (
	// sizeCutRE: a change setting a batch, chunk, page or bulk size from
	// one value to another (REPORT_BATCH_SIZE 5000 -> 500, chunk_size: 10000 → 1000,
	// batch.size from 16384 to 1024, --page-size 1000 => 100).
	sizeCutRE = regexp.MustCompile(`(?i)\b([\w.-]*(?:batch|chunk|page|bulk|fetch|flush|commit|insert)[\w.-]*?[._ -]?(?:size|rows|count|limit)[\w.-]*)\b["']?\s*(?::|=|from)?\s*["']?(\d[\d_,]*)["']?\s*(?:->|→|=>|to)\s*["']?(\d[\d_,]*)`)
	// batchOfRE: a progress line's "batch 17/412", "chunk 3 of 40",
	// "page 12/120".
	batchOfRE = regexp.MustCompile(`(?i)\b(batch|chunk|page|part|slice)(?:es)?["']?\s*[:=]?\s*["']?#?\s*(\d+)\s*(?:/|of|out of)\s*(\d+)\b`)
	// batchesInRE: a summary's "in 412 batches", "batches=412",
	// "412 chunks".
	batchesInRE = regexp.MustCompile(`(?i)\b(\d+)\s+(batch|chunk|page)(?:es|s)\b|\b(batch|chunk|page)(?:es|s|[_ ]?(?:count|total))["']?\s*[=:]\s*(\d+)\b`)
	// batchIndexRE: a line about one batch by its index (chunk=17,
	// "batch": 17).
	batchIndexRE = regexp.MustCompile(`(?i)\b(?:batch|chunk|page)(?:_?(?:no|num|index|id))?["']?\s*[=:]\s*["']?\d+\b`)
	// batchSizeLineRE: a line stating the size it runs with
	// (batch_size=500, "batchSize": 500, chunksize 500).
	batchSizeLineRE = regexp.MustCompile(`(?i)\b(?:batch|chunk|page|bulk)[_ .-]?size["']?\s*[=:]?\s*["']?(\d+)\b`)
	// stepTimeRE: the time a step of a batch took ("refreshed mv in 5.43s",
	// "commit took 812ms", "took":"5.6s", commit_ms=4900).
	stepTimeRE = regexp.MustCompile(`(?i)\b(?:in|took|elapsed|duration)["']?\s*[=:]?\s*["']?(\d+(?:\.\d+)?)\s*(ms|s)\b|\b\w+_(ms|s|secs|seconds)["']?\s*[=:]\s*["']?(\d+(?:\.\d+)?)\b`)
)

// sizeCut is a lowered size a change sets.
type sizeCut struct {
	key      string
	from, to int
}

func atoiLoose(s string) int {
	n, _ := strconv.Atoi(strings.NewReplacer("_", "", ",", "").Replace(s))
	return n
}

// sizeCutOf reads a lowered batch size from a change's text (nil when it
// lowers none).
func sizeCutOf(text string) *sizeCut {
	for _, m := range findAllSubmatch(sizeCutRE, text, -1) {
		a, b := atoiLoose(m[2]), atoiLoose(m[3])
		if b > 0 && a >= 2*b {
			return &sizeCut{key: m[1], from: a, to: b}
		}
	}
	return nil
}

// batchCount is what a job's log says of one run's batching.
type batchCount struct {
	total, size int
	line        string
	step        string  // the slowest step repeated per batch, as logged
	stepSecs    float64 // its time
}

// countBatches reads the batch count, the size and the slowest per-batch
// step from a log set's templates (each template's first and last line).
func countBatches(ls *LogSet) batchCount {
	var bc batchCount
	for _, t := range ls.Templates {
		for _, line := range t.Lines() {
			of := findSubmatch(batchOfRE, line)
			if of != nil {
				if n := atoiLoose(of[3]); n > bc.total {
					bc.total, bc.line = n, line
				}
			} else if m := findSubmatch(batchesInRE, line); m != nil {
				if n := atoiLoose(m[1] + m[4]); n > bc.total {
					bc.total, bc.line = n, line
				}
			}
			if of != nil || matchLine(batchIndexRE, line) {
				if s := findSubmatch(stepTimeRE, line); s != nil {
					num, unit := s[1]+s[4], strings.ToLower(s[2]+s[3])
					v, _ := strconv.ParseFloat(num, 64)
					if unit == "ms" {
						v /= 1000
					}
					if v > bc.stepSecs {
						bc.stepSecs, bc.step = v, line
					}
				}
			}
			if m := findSubmatch(batchSizeLineRE, line); m != nil && bc.size == 0 {
				bc.size = atoiLoose(m[1])
			}
		}
	}
	return bc
}

// detectBatchSizeCut ties a job's runs grown long, or its log counting
// many batches of a lowered size, to the change that lowered the size.
func detectBatchSizeCut(ev *Gathered, found []Finding) []Finding {
	changes := append(append([]evidence.Change(nil), ev.Earlier...), ev.Changes...)
	var out []Finding
	// The jobs: a CronJob's runs, and the workloads and hosts whose logs
	// were read (a Job or worker without its runs listed, a host's batch).
	all := cronRuns(ev.K8s)
	for i := range ev.Logs {
		if ls := &ev.Logs[i]; ls.Subject != "" {
			if k := ls.Namespace + "/" + ls.Subject; all[k] == nil {
				all[k] = nil
			}
		}
	}
	for key, runs := range all {
		ns, name, _ := strings.Cut(key, "/")
		var cut *sizeCut
		var by *evidence.Change
		for j := range changes {
			c := &changes[j]
			if !strings.EqualFold(c.Service, name) && !mentionsName(c.Description, name) {
				continue
			}
			if sc := sizeCutOf(c.Description); sc != nil && (by == nil || c.Timestamp.After(by.Timestamp)) {
				cut, by = sc, c
			}
		}
		if cut == nil {
			continue
		}
		// The runs before and after the change, as its Jobs timed them.
		var before []time.Duration
		var slow *cronRun
		for i := range runs {
			r := &runs[i]
			d := r.ran(time.Time{})
			if d <= 0 {
				continue
			}
			if r.Scheduled.Before(by.Timestamp) {
				before = append(before, d)
			} else if slow == nil || d > slow.ran(time.Time{}) {
				slow = r
			}
		}
		var usual time.Duration
		if len(before) > 0 {
			slices.Sort(before)
			usual = before[len(before)/2]
		}
		grown := slow != nil && usual > 0 && slow.ran(time.Time{}) >= 2*usual
		// The job's own log.
		var bc batchCount
		var src string
		for i := range ev.Logs {
			ls := &ev.Logs[i]
			if ls.Namespace != "" && ls.Namespace != ns || !strings.EqualFold(ls.Subject, name) && !strings.HasPrefix(ls.Source, name+"-") {
				continue
			}
			if c := countBatches(ls); c.total > bc.total {
				bc, src = c, orWord(ls.Subject, ls.Source)
			}
		}
		counted := bc.total > 0 && (bc.size == 0 || bc.size == cut.to)
		// Runs timed before and after that did not grow: the job is not
		// slower, whatever it counts.
		if !grown && (!counted || slow != nil && usual > 0) {
			continue
		}
		f := Finding{Kind: KindBatchSizeCut, Subject: name, Object: "cronjob " + key, Namespace: ns,
			Source: SrcChanges, Severity: SevCritical, Weight: 0.88, Time: by.Timestamp}
		if slow != nil && !slow.Start.IsZero() {
			f.Time = slow.Start
		}
		if s := ev.Scope.Service; s != "" && !strings.EqualFold(s, name) {
			f.Related = []string{s}
		}
		f.setFact("key", cut.key)
		f.setFact("from", strconv.Itoa(cut.from))
		f.setFact("to", strconv.Itoa(cut.to))
		f.setFact("change", fmt.Sprintf("%s change of %s at %s: %q", changeKindWords(by.Kind), by.Service, ts(by.Timestamp), by.Description))
		f.Evidence = []string{fmt.Sprintf("%s lowered from %d to %d by the %s", cut.key, cut.from, cut.to, f.fact("change"))}
		var why []string
		if grown {
			x := float64(slow.ran(time.Time{})) / float64(usual)
			f.setFact("runs", fmt.Sprintf("%s ran %s against %s before the change (%.0fx)", slow.Job.Name, roundDur(slow.ran(time.Time{})), roundDur(usual), x))
			f.Evidence = append(f.Evidence, "runs: "+f.fact("runs"))
			why = append(why, fmt.Sprintf("the run took %.0fx its usual time", x))
		}
		if counted {
			f.setFact("batches", strconv.Itoa(bc.total))
			c := fmt.Sprintf("its log counts %d batches", bc.total)
			if bc.size > 0 {
				c += fmt.Sprintf(" of %d rows", bc.size)
			}
			if est := int(math.Round(float64(bc.total) * float64(cut.to) / float64(cut.from))); est > 0 {
				c += fmt.Sprintf(" (about %d at %d)", est, cut.from)
			}
			f.setFact("counted", c)
			f.Evidence = append(f.Evidence, fmt.Sprintf("logs of %s: %s", src, quote(ReadableLine(bc.line), 200)))
			why = append(why, fmt.Sprintf("%d batches of %d", bc.total, cut.to))
			if bc.step != "" {
				f.setFact("step", fmt.Sprintf("%s (%.1f s, paid once per batch)", quote(ReadableLine(bc.step), 160), bc.stepSecs))
				f.setFact("step_name", stepName(bc.step))
				f.Evidence = append(f.Evidence, fmt.Sprintf("logs of %s: %s", src, quote(ReadableLine(bc.step), 200)))
			}
		}
		// The other changes of the job between its runs.
		var others []string
		for j := range changes {
			c := &changes[j]
			if c == by || !strings.EqualFold(c.Service, name) || sizeCutOf(c.Description) != nil {
				continue
			}
			if slow != nil && c.Timestamp.After(slow.Scheduled) || len(before) > 0 && c.Timestamp.Before(by.Timestamp.Add(-48*time.Hour)) {
				continue
			}
			others = append(others, fmt.Sprintf("the %s %q", changeKindWords(c.Kind), c.Description))
		}
		if len(others) > 0 {
			f.setFact("others", strings.Join(others, " and "))
		}
		f.setFact("why", strings.Join(why, ", ")+" after "+cut.key+" was lowered")
		f.Summary = fmt.Sprintf("%s: %s lowered %d -> %d, %s", name, cut.key, cut.from, cut.to, strings.Join(why, ", "))
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b Finding) int { return strings.Compare(a.Object, b.Object) })
	return out
}

// roundDur prints a run's duration to the second.
func roundDur(d time.Duration) string {
	return d.Round(time.Second).String()
}

// stepNameRE: the words of a per-batch step before its time ("refreshed
// mv_revenue_daily (CONCURRENTLY)").
var stepNameRE = regexp.MustCompile(`(?i)(?:batch|chunk|page)\s*#?\s*\d+\s*(?:/|of)\s*\d+\s*:?\s*(.*?)\s*\b(?:in|took)\s*\d`)

// stepName is what a per-batch step does, as its line says.
func stepName(line string) string {
	if m := findSubmatch(stepNameRE, ReadableLine(line)); m != nil && m[1] != "" {
		return strings.TrimSpace(m[1])
	}
	return ""
}
