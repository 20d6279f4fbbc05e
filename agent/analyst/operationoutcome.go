package analyst

import (
	"fmt"

	"github.com/rootcause/rootcause/agent/analysis"
	"regexp"
	"sort"
	"strings"
	"time"
)

// A question whether an operation went through ("did last night's upload
// to the bank go through?", "has the backup run?", "was the report
// sent?") has an answer in the logs of that operation: its lines, whether
// they end in success or failure, and when it failed, the lines around the
// failure that say why (the first specific error of the same run, not the
// generic "upload failed" that follows it).

// KindOutcome is the logged outcome of an operation a question asks about.
const KindOutcome Kind = "operation_outcome"

var outcomeM = &mechanism{
	kind:     KindOutcome,
	class:    classCause,
	label:    "the logged outcome of the operation asked about",
	detect:   detectOutcome,
	describe: describeOutcome,
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		op := orWord(h.fact("operation"), "the operation")
		if h.fact("outcome") == "succeeded" {
			r.low("Nothing to do for %s: the logs show it succeeded; if the other side still reports it missing, check on their side with the time and identifiers logged", op)
			return
		}
		r.high("Fix what the logs give as the reason %s failed (%s), then run it again and check that it succeeds", op, orWord(ReadableLine(h.fact("reason")), "the error logged"))
		r.med("Confirm with the receiving side once %s has gone through, and check the retries did not leave partial results", op)
		r.low("Alert when %s fails (its unit's failure, its error line), not only when someone notices the missing result", op)
	},
}

var (
	// Questions about whether an operation went through, capturing it.
	outcomeQuestionRE = []*regexp.Regexp{
		regexp.MustCompile(`(?i)\bwhether (.{3,90}?) (?:went|go(?:es)?|got) through\b`),
		regexp.MustCompile(`(?i)\bwhether (.{3,90}?) (?:succeeded|completed|finished|ran|worked|failed|was (?:sent|uploaded|delivered|done|successful))\b`),
		regexp.MustCompile(`(?i)\bdid (.{3,90}?) (?:go through|succeed|complete|finish|run|work|fail|get (?:sent|uploaded|delivered))\b`),
		regexp.MustCompile(`(?i)\b(?:has|have) (.{3,90}?) (?:gone through|succeeded|completed|finished|run|been (?:sent|uploaded|delivered|done))\b`),
		regexp.MustCompile(`(?i)\b(?:was|were) (.{3,90}?) (?:sent|uploaded|delivered|successful|processed|completed)\b`),
	}
	whyDidRE    = regexp.MustCompile(`(?i)\b(why|how|what|when|where)\b[^.?!]{0,40}\b(did|has|have|was|were)\b`)
	outcomeStop = map[string]bool{"the": true, "a": true, "an": true, "last": true, "night": true, "night's": true, "nights": true, "today": true, "today's": true,
		"yesterday": true, "yesterday's": true, "this": true, "morning": true, "morning's": true, "our": true, "my": true, "to": true, "of": true, "for": true,
		"from": true, "in": true, "on": true, "nightly": true, "daily": true, "hourly": true, "weekly": true, "scheduled": true, "usual": true, "at": true, "and": true, "it": true, "its": true, "job": false, "logs": true, "log": true, "show": true}
	outcomeFailRE = regexp.MustCompile(`(?i)\b(failed|failure|error|refused|denied|aborted|exit(?:ed)?(?: code| status)?[ =:]*[1-9]\d*|status=[1-9]\d*/|rejected|unable|could not|cannot|timed out|timeout)\b`)
	outcomeOKRE   = regexp.MustCompile(`(?i)\b(succeeded|successful(?:ly)?|completed?|uploaded|sent|delivered|acknowledged|accepted|finished|done|status=(?:ok|success|uploaded|acknowledged|sent))\b`)
	// A line giving a reason: what was wrong, not only that it failed.
	outcomeReasonRE = regexp.MustCompile(`(?i)verification failed|has changed|\bchanged\b|denied|refused|expired|invalid|not found|no such|permission|timed out|timeout|unreachable|reset by peer|mismatch|rejected|unknown|could not|cannot|unable|not allowed|quota|no space|too large|too many|unauthori[sz]ed|forbidden|certificate|host key|known_hosts|identification`)
)

// outcomeSubject is the operation a question asks about, or "".
func outcomeSubject(text string) string {
	// "Why did the export fail?" asks for a cause, not whether it went
	// through.
	if matchLine(whyDidRE, text) {
		return ""
	}
	for _, re := range outcomeQuestionRE {
		if m := findSubmatch(re, text); m != nil {
			return strings.TrimSpace(m[1])
		}
	}
	return ""
}

// operationWords are the words naming the operation ("payment", "file",
// "upload", "bank", "sftp"), as stems that match their inflections.
func operationWords(op string) []string {
	var out []string
	for _, w := range strings.Fields(strings.ToLower(op)) {
		w = strings.Trim(w, `"'.,;:!?()`)
		if len(w) < 3 || outcomeStop[w] {
			continue
		}
		w = strings.TrimSuffix(w, "'s")
		for _, suf := range []string{"ing", "ed", "es", "s"} {
			if len(w) > len(suf)+3 && strings.HasSuffix(w, suf) {
				w = strings.TrimSuffix(w, suf)
				break
			}
		}
		out = append(out, w)
	}
	return out
}

type outcomeLine struct {
	set   *LogSet
	t     *analysis.LogTemplate
	line  string
	first time.Time
	last  time.Time
	n     int
	fail  bool
	ok    bool
	score int
}

// detectOutcome answers a question whether an operation went through.
func detectOutcome(ev *Gathered, _ []Finding) []Finding {
	op := outcomeSubject(ev.Scope.Message + " " + ev.Scope.Hint)
	// The service's own name is in every line of its log: it tells no
	// line of the operation from another.
	var words []string
	svc := strings.ToLower(ev.Scope.Service)
	for _, w := range operationWords(op) {
		if svc == "" || !strings.Contains(svc, w) {
			words = append(words, w)
		}
	}
	if len(words) == 0 {
		return nil
	}
	need := min(2, len(words))
	var hits []outcomeLine
	for i := range ev.Logs {
		set := &ev.Logs[i]
		for j := range set.Templates {
			t := &set.Templates[j]
			if t.Incident == 0 {
				continue
			}
			low := strings.ToLower(t.Example)
			score := 0
			for _, w := range words {
				if strings.Contains(low, w) {
					score++
				}
			}
			if score < need {
				continue
			}
			l := outcomeLine{set: set, t: t, line: t.Example, first: firstOf(t.FirstIncident, t.FirstSeen), last: t.LastSeen, n: t.Incident, score: score}
			l.fail = matchLine(outcomeFailRE, t.Example)
			l.ok = !l.fail && matchLine(outcomeOKRE, t.Example)
			hits = append(hits, l)
		}
	}
	if len(hits) == 0 {
		return nil
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].first.Before(hits[j].first) })
	// The failure is the line naming the operation best, then the most
	// repeated (every run and retry), then the latest.
	better := func(a, b *outcomeLine) bool {
		if a.score != b.score {
			return a.score > b.score
		}
		if a.n != b.n {
			return a.n > b.n
		}
		return a.last.After(b.last)
	}
	var lastFail, lastOK *outcomeLine
	for i := range hits {
		h := &hits[i]
		if h.fail && (lastFail == nil || better(h, lastFail)) {
			lastFail = h
		}
		if h.ok && (lastOK == nil || h.last.After(lastOK.last)) {
			lastOK = h
		}
	}
	var f Finding
	switch {
	case lastFail != nil && (lastOK == nil || !lastOK.last.After(lastFail.last)):
		f = outcomeFinding(ev, lastFail, "failed")
		f.setFact("failures", fmt.Sprintf("%d", lastFail.n))
		if reasons := failureReasons(ev, lastFail); len(reasons) > 0 {
			f.setFact("reason", reasons[0])
			for _, r := range reasons {
				f.Evidence = append(f.Evidence, fmt.Sprintf("the same run logged why: %s", quote(ReadableLine(r), 220)))
			}
			if len(reasons) > 1 {
				f.setFact("reason2", reasons[1])
			}
		}
		if lastOK != nil {
			f.setFact("last_success", ts(lastOK.last))
		}
	case lastOK != nil:
		f = outcomeFinding(ev, lastOK, "succeeded")
		f.Weight = 0.7
		f.Severity = SevInfo
	default:
		return nil
	}
	f.setFact("operation", op)
	return []Finding{f}
}

func outcomeFinding(ev *Gathered, l *outcomeLine, outcome string) Finding {
	subject := l.set.Subject
	if svc := ev.Scope.Service; svc != "" && strings.Contains(strings.ToLower(l.line), strings.ToLower(svc)) {
		subject = svc
	}
	f := Finding{Kind: KindOutcome, Subject: subject, Object: l.set.Origin + " " + l.set.Source, Namespace: l.set.Namespace,
		Time: l.first, Severity: SevCritical, Weight: 0.9, Source: l.set.Origin}
	f.setFact("outcome", outcome)
	f.setFact("line", l.line)
	f.setFact("first", ts(l.first))
	f.setFact("last", ts(l.last))
	f.setFact("caller", subject)
	if l.set.Subject != subject && l.set.Subject != "" {
		f.Related = append(f.Related, l.set.Subject)
	}
	f.Evidence = []string{fmt.Sprintf("%s %s logged %s, %s from %s to %s: %s", l.set.Origin, l.set.Source, plural(l.n, "line", "lines"), outcome, ts(l.first), ts(l.last), quote(ReadableLine(l.line), 240))}
	f.Summary = fmt.Sprintf("%s: the operation asked about %s (%s)", subject, outcome, plural(l.n, "line", "lines"))
	return f
}

// failureReasons are the lines of the same source, logged within a minute
// before a failure (or with it), that say what was wrong: the most
// specific first.
func failureReasons(ev *Gathered, fail *outcomeLine) []string {
	type cand struct {
		line  string
		score int
		at    time.Time
	}
	var cs []cand
	// The minutes the operation failed in (each run, each retry).
	failMinutes := map[int64]bool{fail.first.Unix() / 60: true}
	for m := range fail.t.PerMinute {
		failMinutes[m] = true
	}
	for _, t := range fail.set.Templates {
		if t.Example == fail.line || t.Incident == 0 {
			continue
		}
		at := firstOf(t.FirstIncident, t.FirstSeen)
		with := false
		minutes := t.PerMinute
		if len(minutes) == 0 {
			minutes = map[int64]int{at.Unix() / 60: 1}
		}
		for m := range minutes {
			if failMinutes[m] || failMinutes[m+1] {
				with = true
				break
			}
		}
		if !with {
			continue
		}
		ms := findAllString(outcomeReasonRE, t.Example, -1)
		if len(ms) == 0 {
			continue
		}
		score := len(ms)
		if _, isErr := ClassifyLine(t.Example); isErr {
			score++
		}
		cs = append(cs, cand{t.Example, score, at})
	}
	sort.SliceStable(cs, func(i, j int) bool {
		if cs[i].score != cs[j].score {
			return cs[i].score > cs[j].score
		}
		return cs[i].at.Before(cs[j].at)
	})
	var out []string
	for _, c := range cs {
		if len(out) >= 3 {
			break
		}
		out = append(out, c.line)
	}
	return out
}

func describeOutcome(h *Hypothesis, sc Scope) string {
	op := orWord(h.fact("operation"), "the operation")
	if h.fact("outcome") == "succeeded" {
		return fmt.Sprintf("yes: the logs of %s show %s went through (last at %s): %s", h.Subject, op, h.fact("last"), quote(ReadableLine(h.fact("line")), 220))
	}
	d := fmt.Sprintf("no: %s failed — the logs of %s show it failing", op, h.Subject)
	if n := h.fact("failures"); n != "" && n != "1" {
		d += fmt.Sprintf(" %s times (retries failed the same way)", n)
	}
	d += fmt.Sprintf(", first at %s, last at %s: %s", h.fact("first"), h.fact("last"), quote(ReadableLine(h.fact("line")), 200))
	if r := h.fact("reason"); r != "" {
		d += "; the reason logged with it: " + quote(ReadableLine(r), 200)
		d += h.quoteClause(", ", "reason2", 200)
	}
	if s := h.fact("last_success"); s != "" {
		d += fmt.Sprintf("; the last success logged was at %s", s)
	} else {
		d += "; no success was logged after it"
	}
	return d
}
