package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// KindLambdaOOM is a serverless function whose invocations run out of the
// memory they are given.
const KindLambdaOOM Kind = "lambda_out_of_memory"

// A Lambda function's memory size is its whole memory: an invocation that
// needs more is killed by the sandbox. Its log says so in the platform's
// own lines: the REPORT line of the invocation with "Max Memory Used"
// equal to "Memory Size" (with "Status: error  Error Type:
// Runtime.OutOfMemory" in newer runtimes), and "Runtime exited with
// error: signal: killed" followed by "Runtime.ExitError". The failing
// invocations are the large ones (a big batch, a big file): the small ones
// still succeed, so the function looks intermittent. The cause is the
// memory size: cut by a change (a rightsizing by Compute Optimizer, a
// Terraform or SAM memory_size, an update-function-configuration) or
// outgrown by the work. Earlier REPORT lines with a larger Memory Size show
// the cut.
var lambdaOOM = &mechanism{
	kind:   KindLambdaOOM,
	class:  classCause,
	label:  "serverless function out of memory",
	detect: detectLambdaOOM,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return matchLine(fnMemoryChangeRE, changeText(c))
	},
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("the Lambda function %s runs out of memory (OOM): its failing invocations use all of their %s MB (Max Memory Used %s MB of Memory Size %s MB) and the sandbox kills the runtime (%s) — %s invocations failed",
			h.Subject, h.fact("size"), h.fact("used"), h.fact("size"), quote(h.fact("line"), 120), orWord(h.fact("count"), "its"))
		if p := h.fact("prev_size"); p != "" {
			d += fmt.Sprintf("; its memory size was %s MB before (its invocations then used up to %s MB), so it was cut from %s to %s MB", p, orWord(h.fact("prev_used"), "?"), p, h.fact("size"))
		}
		if c := h.fact("change"); c != "" {
			d += "; the memory size was set by " + c
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		size := orWord(h.fact("prev_size"), "a larger size")
		r.high("Raise the memory size of %s back to %s MB (aws lambda update-function-configuration --memory-size, or the memory_size of its template) and retry the failed invocations", h.Subject, strings.TrimSuffix(size, " MB"))
		r.med("Exclude %s from automatic rightsizing or size it on its largest invocations (the maximum of Max Memory Used, not the average), and pin its memory size in code", h.Subject)
		r.low("Alert on invocations with Max Memory Used at the Memory Size and on Runtime.OutOfMemory / Runtime.ExitError errors")
	},
}

var (
	// lambdaReportRE is the platform's REPORT line of an invocation: its
	// memory size and the most it used.
	lambdaReportRE = regexp.MustCompile(`Memory Size: (\d+) MB\s+Max Memory Used: (\d+) MB`)
	// lambdaOOMRE: the platform's words for an invocation killed for its
	// memory.
	lambdaOOMRE = regexp.MustCompile(`Error Type: Runtime\.OutOfMemory|"errorType"\s*:\s*"Runtime\.OutOfMemory"|Runtime exited with error: signal: killed`)
	// fnMemoryChangeRE is a change that sets a function's memory.
	fnMemoryChangeRE = regexp.MustCompile(`(?i)memory[ _-]?size|\bmemory\b|rightsiz|right-siz|compute optimizer|over-?provisioned`)
)

// detectLambdaOOM reads the platform lines of each function's log.
func detectLambdaOOM(ev *Gathered, _ []Finding) []Finding {
	var out []Finding
	for i := range ev.Logs {
		set := &ev.Logs[i]
		if set.Host {
			continue
		}
		var (
			line, size, used string
			count            int
			at               time.Time
			killed           string
		)
		for _, t := range set.Templates {
			if t.Incident == 0 {
				continue
			}
			l := templateLine(t, lambdaOOMRE)
			if l == "" {
				continue
			}
			if m := findSubmatch(lambdaReportRE, l); m != nil {
				if m[1] != m[2] && !strings.Contains(l, "OutOfMemory") {
					continue
				}
				size, used = m[1], m[2]
				count += t.Incident
				if line == "" || !strings.Contains(line, "OutOfMemory") {
					line = strings.TrimSpace(l)
				}
			} else if killed == "" {
				killed = strings.TrimSpace(l)
			}
			if s := firstOf(t.FirstIncident, t.FirstSeen); at.IsZero() || s.Before(at) {
				at = s
			}
		}
		// "signal: killed" alone is the runtime killed: out of memory when
		// a REPORT line says every MB was used.
		if size == "" {
			for _, t := range set.Templates {
				for _, l := range []string{t.Example, t.Last} {
					if m := findSubmatch(lambdaReportRE, l); m != nil && m[1] == m[2] && t.Incident > 0 {
						size, used = m[1], m[2]
						count += t.Incident
						line = strings.TrimSpace(l)
					}
				}
			}
		}
		if size == "" {
			continue
		}
		if killed != "" {
			line = killed
		}
		f := Finding{Kind: KindLambdaOOM, Subject: set.Subject, Object: "function " + set.Subject, Namespace: set.Namespace,
			Severity: SevCritical, Weight: 0.9, Source: SrcCloudWatch, Time: at}
		f.setFact("size", size)
		f.setFact("used", used)
		f.setFact("line", line)
		f.setFact("count", strconv.Itoa(count))
		f.Evidence = append(f.Evidence, fmt.Sprintf("log of %s: %s (%d invocations out of memory from %s)", set.Source, quote(line, 200), count, ts(at)))
		// A larger memory size on the function's earlier invocations.
		prev, prevUsed := 0, 0
		cur, _ := strconv.Atoi(size)
		for _, t := range set.Templates {
			for _, l := range []string{t.Example, t.Last} {
				m := findSubmatch(lambdaReportRE, l)
				if m == nil {
					continue
				}
				s, _ := strconv.Atoi(m[1])
				u, _ := strconv.Atoi(m[2])
				if s > cur && s >= prev {
					if s > prev {
						prevUsed = 0
					}
					prev, prevUsed = s, max(prevUsed, u)
				}
			}
		}
		if prev > 0 {
			f.setFact("prev_size", strconv.Itoa(prev))
			if prevUsed > 0 {
				f.setFact("prev_used", strconv.Itoa(prevUsed))
			}
			f.Evidence = append(f.Evidence, fmt.Sprintf("earlier invocations of %s ran with Memory Size %d MB (using up to %d MB); the failing ones with %s MB", set.Subject, prev, prevUsed, size))
		}
		if c := memoryChangeOf(ev, set.Subject, at); c != nil {
			f.setFact("change", fmt.Sprintf("the %s change %q at %s", orWord(c.Kind, "recorded"), c.Description, ts(c.Timestamp)))
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s change at %s: %q", orWord(c.Kind, "recorded"), ts(c.Timestamp), c.Description))
		}
		f.Summary = fmt.Sprintf("%s runs out of memory (%s of %s MB used, %d invocations)", set.Subject, used, size, count)
		out = append(out, f)
	}
	return out
}

// memoryChangeOf is the latest change before at that sets the memory of
// functions: one of fn, or of many (a rightsizing applied to an account).
func memoryChangeOf(ev *Gathered, fn string, at time.Time) *evidence.Change {
	var best *evidence.Change
	for _, c := range slices.Concat(ev.Earlier, ev.Changes) {
		if c.Timestamp.After(at) || !matchLine(fnMemoryChangeRE, c.Description) {
			continue
		}
		d := strings.ToLower(c.Description)
		mine := strings.EqualFold(c.Service, fn) || strings.Contains(d, strings.ToLower(fn))
		fleet := strings.Contains(d, "function") || strings.Contains(d, "lambda") || strings.Contains(strings.ToLower(c.Service), "lambda")
		if !mine && !fleet {
			continue
		}
		if best == nil || c.Timestamp.After(best.Timestamp) {
			best = &c
		}
	}
	return best
}
