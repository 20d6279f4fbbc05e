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

// A date written with the week-based year: the pattern letter "Y" (Java's
// DateTimeFormatter and SimpleDateFormat, ICU, Joda's "x"; "%G" in
// strftime) is the year of the ISO or locale week, which in the last days
// of December already belongs to the next year (and in the first days of
// January may still be the previous one). A "YYYY-MM-dd" meant as
// "yyyy-MM-dd" writes 2027-12-28 on 28 December 2026: the same month and
// day, the year one ahead, for a few days a year only, so the code ran
// right since it was written. Whoever reads the date refuses it (a bank's
// DT01 invalid date, "more than 90 days in the future") or schedules it a
// year late. The service that writes it logs the wrong year beside the
// right one of its own timestamp.

// KindWeekBasedYear is a service writing dates with the week-based year.
const KindWeekBasedYear Kind = "week_based_year"

var (
	// loggedDateRE is a calendar date in a line: 2027-12-28, 20271228.
	loggedDateRE = regexp.MustCompile(`(?:^|[^0-9])((20\d{2})-?(0[1-9]|1[0-2])-?(0[1-9]|[12]\d|3[01]))(?:[^0-9]|$)`)
	// validityWordsRE marks a date a year ahead on purpose (a
	// certificate's, a subscription's end).
	// receiverRefusalRE is a receiver refusing a date.
	receiverRefusalRE = regexp.MustCompile(`(?i)(?:reject|invalid|RJCT|refus)[^\n]{0,120}(?:date|DT01|future)|(?:date|DT01|future)[^\n]{0,120}(?:reject|invalid|RJCT|refus)`)
	validityWordsRE   = regexp.MustCompile(`(?i)expir|valid (?:until|till|to)|not ?after|renew|until|\bttl\b|retention|anniversar`)
)

var weekBasedYear = &mechanism{
	kind:   KindWeekBasedYear,
	class:  classCause,
	label:  "dates written with the week-based year (YYYY instead of yyyy)",
	detect: detectWeekBasedYear,
	related: func(h *Hypothesis, f *Finding) bool {
		return (f.Kind == KindLogErrors || f.Kind == KindJobFailed) && (f.Subject == h.Subject || slices.Contains(h.Primary[0].Related, f.Subject))
	},
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("%s writes dates with the week-based year instead of the calendar year: on %s it writes %s (%s), the same day a year ahead — a date pattern with \"YYYY\" (week-based-year) where \"yyyy\" was meant; in the last days of December the week already belongs to the next year, so the pattern wrote correct dates for the rest of the year",
			h.Subject, h.fact("day"), h.fact("wrong_date"), quote(truncate(ReadableLine(h.fact("line")), 200), 210))
		if r := h.fact("rejected"); r != "" {
			d += fmt.Sprintf("; the receiver refuses the date: %s", quote(truncate(ReadableLine(r), 200), 210))
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Replace the week-based year in %s's date patterns with the calendar year (\"yyyy\" or \"uuuu\" instead of \"YYYY\"; %%Y instead of %%G) and re-create what was written with the wrong year", h.Subject)
		r.med("Test date formatting with the last days of December and the first days of January (28-31 Dec, 1-3 Jan)")
		r.low("Flag \"YYYY\" in date patterns in code review or with a linter (Error Prone's MisusedWeekYear, SonarQube S3986)")
	},
}

// detectWeekBasedYear finds a service whose lines, logged in the last
// days of December or the first of January, carry the date of their own
// day with the year one ahead (or behind): its log templates, and the
// lines of its logs an operator printed (kubectl logs of its Jobs).
func detectWeekBasedYear(ev *Gathered, _ []Finding) []Finding {
	var out []Finding
	seen := map[string]bool{}
	try := func(subject, ns, line string, at time.Time) {
		if subject == "" || seen[subject] {
			return
		}
		if f, ok := weekYearLine(ev, subject, ns, line, at); ok {
			seen[subject] = true
			out = append(out, f)
		}
	}
	for set, t := range incidentTemplates(ev) {
		try(set.Subject, set.Namespace, t.Example, orTime(t.FirstSeen, t.FirstIncident))
	}
	for _, c := range ev.Commands {
		if !strings.Contains(c.Command, "logs") {
			continue
		}
		subject := commandWorkload(&c)
		for _, j := range ev.K8s.Jobs {
			if subject == "" && strings.Contains(c.Command, j.Name) {
				subject = cronJobOf(j.Name)
			}
		}
		for _, l := range c.Lines {
			if at := evidence.ParseLogTime(l, ev.Window.End); !at.IsZero() {
				try(subject, c.Namespace, l, at)
			}
		}
	}
	return out
}

// weekYearLine reads one line logged at at for a date of its own day with
// the year off by one.
func weekYearLine(ev *Gathered, subject, ns, line string, at time.Time) (Finding, bool) {
	// A receiver's refusal quotes the date; it did not write it.
	if at.IsZero() || !yearEdge(at) || matchLine(validityWordsRE, line) || matchLine(receiverRefusalRE, line) {
		return Finding{}, false
	}
	ms := findAllSubmatch(loggedDateRE, line, -1)
	slices.SortStableFunc(ms, func(a, b []string) int { return strings.Count(b[1], "-") - strings.Count(a[1], "-") })
	for _, m := range ms {
		y, _ := strconv.Atoi(m[2])
		mo, _ := strconv.Atoi(m[3])
		dd, _ := strconv.Atoi(m[4])
		day := time.Date(y, time.Month(mo), dd, 0, 0, 0, 0, time.UTC)
		// The same month and day as the line's own day (or the days
		// after: a date for tomorrow), the year ahead in December, behind
		// in January.
		off := y - at.Year()
		if off == 1 && at.Month() != time.December || off == -1 && at.Month() != time.January || off != 1 && off != -1 {
			continue
		}
		if d := day.AddDate(-off, 0, 0).Sub(time.Date(at.Year(), at.Month(), at.Day(), 0, 0, 0, 0, time.UTC)); d < 0 || d > 72*time.Hour {
			continue
		}
		f := Finding{Kind: KindWeekBasedYear, Subject: subject, Namespace: ns, Time: at, Severity: SevCritical, Weight: 0.85, Source: SrcLogs}
		f.setFact("line", line)
		f.setFact("day", at.Format("2006-01-02"))
		f.setFact("wrong_date", m[1])
		// The receiver's refusal of a date of that year.
		for i := range ev.Logs {
			set := &ev.Logs[i]
			for _, t := range set.Templates {
				if f.fact("rejected") == "" && set.Subject != subject && strings.Contains(t.Example, m[2]+"-"+m[3]+"-") && matchLine(receiverRefusalRE, t.Example) {
					f.setFact("rejected", t.Example)
					f.Related = append(f.Related, set.Subject)
				}
			}
		}
		for _, c := range ev.Commands {
			if f.fact("rejected") != "" {
				break
			}
			for _, l := range c.Lines {
				if matchLine(receiverRefusalRE, l) && strings.Contains(l, m[2]+"-"+m[3]+"-") && !strings.Contains(l, subject) {
					f.setFact("rejected", l)
					if w := commandWorkload(&c); w != "" {
						f.Related = append(f.Related, w)
					}
					break
				}
			}
		}
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s logged on %s a date a year off: %s in %s", subject, at.Format("2006-01-02"), m[1], quote(truncate(ReadableLine(line), 200), 210)))
		if r := f.fact("rejected"); r != "" {
			f.Evidence = append(f.Evidence, "the date refused: "+quote(truncate(ReadableLine(r), 200), 210))
		}
		f.Summary = fmt.Sprintf("%s writes %s on %s: the week-based year", subject, m[1], at.Format("2006-01-02"))
		return f, true
	}
	return Finding{}, false
}

// yearEdge reports whether t lies in the days where the week-based year
// and the calendar year differ: the last days of December, the first of
// January.
func yearEdge(t time.Time) bool {
	return t.Month() == time.December && t.Day() >= 21 || t.Month() == time.January && t.Day() <= 7
}
