package analyst

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A materialized view no longer refreshed. PostgreSQL's REFRESH
// MATERIALIZED VIEW CONCURRENTLY needs a unique index (without a WHERE
// clause) on the view; a view dropped and recreated by a migration
// without that index refuses every concurrent refresh with "cannot refresh
// materialized view ... concurrently" (HINT: Create a unique index...).
// The scheduler that runs the refresh (pg_cron, a CronJob) fails quietly
// every time, and every reader of the view keeps serving its last
// contents: figures frozen since the migration, whatever the readers'
// caches or restarts. The answer names the view, the refresh that fails
// since when, the missing unique index and the change that recreated it.

// KindMatViewRefreshFailed is a materialized view whose refresh fails.
const KindMatViewRefreshFailed Kind = "matview_refresh_failed"

var matViewRefreshFailed = &mechanism{
	kind:   KindMatViewRefreshFailed,
	class:  classCause,
	label:  "materialized view not refreshed: its concurrent refresh fails",
	detect: detectMatViewRefreshFailed,
	related: exceptOwnAndChanges(KindMatViewRefreshFailed, func(h *Hypothesis, f *Finding) bool {
		v := h.fact("view")
		return v != "" && strings.Contains(f.Summary, v)
	}),
	unrelated: func(h *Hypothesis, f *Finding) bool {
		return f.Kind != KindMatViewRefreshFailed && infoOf(f.Kind).class != classChange && !strings.Contains(f.Summary, h.fact("view"))
	},
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		t := strings.ToLower(changeText(c))
		v := strings.ToLower(viewShort(h.fact("view")))
		return v != "" && strings.Contains(t, v) || strings.Contains(t, "materialized view")
	},
	describe:  describeMatViewRefreshFailed,
	recommend: recommendMatViewRefreshFailed,
}

var (
	matViewRefreshErrRE = regexp.MustCompile(`cannot refresh materialized view\s+\\?"?([\w.]+?)\\?"?\s+concurren`)
	matViewCreateRE     = regexp.MustCompile(`(?i)CREATE MATERIALIZED VIEW\s+(?:IF NOT EXISTS\s+)?"?([\w.]+)"?`)
	matViewRefreshCmdRE = regexp.MustCompile(`(?i)REFRESH MATERIALIZED VIEW CONCURRENTLY\s+"?([\w.]+)"?`)
	cronScheduleRE      = regexp.MustCompile(`\|\s*([-*/\d,]+(?:\s+[-*/\d,]+){4})\s*\|\s*REFRESH MATERIALIZED VIEW`)
)

// viewShort is a view's name without its schema.
func viewShort(v string) string {
	if i := strings.LastIndexByte(v, '.'); i >= 0 {
		return v[i+1:]
	}
	return v
}

func detectMatViewRefreshFailed(ev *Gathered, _ []Finding) []Finding {
	view, example := "", ""
	var first, last time.Time
	failures := 0
	recreated := ""
	schedule := ""
	note := func(l string, t time.Time) {
		if m := findSubmatch(matViewRefreshErrRE, l); m != nil && (view == "" || viewShort(m[1]) == viewShort(view)) {
			view = orWord(view, m[1])
			failures++
			if example == "" {
				example = l
			}
			if lt, ok := evidence.LineTime([]byte(l), ev.Window.End); ok {
				t = lt
			}
			if !t.IsZero() && (first.IsZero() || t.Before(first)) {
				first = t
			}
			if t.After(last) {
				last = t
			}
		}
	}
	each := func(f func(l string, t time.Time)) {
		for _, set := range ev.Logs {
			for _, t := range set.Templates {
				ls := t.Lines()
				for i, l := range ls {
					at := firstOf(t.FirstSeen, t.FirstIncident)
					if i > 0 {
						at = t.LastSeen
					}
					f(l, at)
				}
			}
			for _, l := range set.Lines {
				f(l.Text, l.Time)
			}
		}
		for _, c := range ev.Commands {
			for _, l := range c.Lines {
				f(l, time.Time{})
			}
		}
	}
	each(note)
	if view == "" {
		return nil
	}
	short := viewShort(view)
	each(func(l string, t time.Time) {
		if m := findSubmatch(matViewCreateRE, l); m != nil && viewShort(m[1]) == short {
			if lt, ok := evidence.LineTime([]byte(l), ev.Window.End); ok {
				t = lt
			}
			if !t.IsZero() {
				recreated = t.UTC().Format(time.RFC3339)
			} else {
				recreated = "yes"
			}
		}
		if m := findSubmatch(cronScheduleRE, l); m != nil && strings.Contains(l, short) {
			schedule = m[1]
		}
	})
	// The change that rebuilt the view, and whose view it is.
	subject, change := "", ""
	for _, c := range append(append([]evidence.Change{}, ev.Earlier...), ev.Changes...) {
		if strings.Contains(strings.ToLower(c.Description), strings.ToLower(short)) {
			subject = c.Service
			change = fmt.Sprintf("%s's change at %s (%s)", c.Service, c.Timestamp.UTC().Format(time.RFC3339), quote(c.Description, 160))
		}
	}
	subject = orWord(subject, ev.Scope.Service)
	if subject == "" {
		subject = short
	}
	if first.IsZero() {
		first = ev.Window.Start
	}
	f := Finding{Kind: KindMatViewRefreshFailed, Subject: subject, Object: "materialized view " + view, Time: first, Severity: SevCritical, Weight: 0.9, Source: SrcLogs}
	f.setFact("view", view)
	f.setFact("recreated", recreated)
	f.setFact("change", change)
	f.setFact("schedule", schedule)
	f.setFact("failures", fmt.Sprint(failures))
	if !last.IsZero() {
		f.setFact("last", last.UTC().Format(time.RFC3339))
	}
	f.Related = append(f.Related, short)
	f.Evidence = append(f.Evidence, fmt.Sprintf("REFRESH MATERIALIZED VIEW CONCURRENTLY %s fails (seen from %s): %s", view, first.UTC().Format(time.RFC3339), quote(strings.TrimSpace(example), 200)))
	if recreated != "" && recreated != "yes" {
		f.Evidence = append(f.Evidence, fmt.Sprintf("the view %s was dropped and recreated at %s", view, recreated))
	}
	if change != "" {
		f.Evidence = append(f.Evidence, "the view was rebuilt by "+change)
	}
	f.Summary = fmt.Sprintf("%s: materialized view %s not refreshed, its concurrent refresh fails (no unique index)", subject, view)
	return []Finding{f}
}

func describeMatViewRefreshFailed(h *Hypothesis, sc Scope) string {
	v := orWord(h.fact("view"), "the materialized view")
	d := fmt.Sprintf("the materialized view %s is no longer refreshed: its scheduled REFRESH MATERIALIZED VIEW CONCURRENTLY", v)
	if s := h.fact("schedule"); s != "" {
		d += " (" + s + ")"
	}
	d += fmt.Sprintf(" fails on every run (seen from %s) with \"cannot refresh materialized view ... concurrently\", because the view has no unique index (a concurrent refresh needs one without a WHERE clause)", h.Onset.UTC().Format(time.RFC3339))
	switch c := h.fact("change"); {
	case c != "":
		d += "; the view was rebuilt without its unique index by " + c
	case h.Trigger != nil:
		t := h.Trigger
		d += fmt.Sprintf("; the view was rebuilt without its unique index by %s's change at %s (%s)", t.Subject, t.Time.UTC().Format(time.RFC3339), quote(t.Summary, 160))
	case h.fact("recreated") != "":
		d += "; the view was dropped and recreated without its unique index"
	}
	d += fmt.Sprintf(". Every reader of the view (%s) serves its contents as of the last successful refresh: the figures are frozen, and restarting or clearing the readers' caches changes nothing", h.Subject)
	return d
}

func recommendMatViewRefreshFailed(h *Hypothesis, sc Scope, r *recommender) {
	v := orWord(h.fact("view"), "the materialized view")
	r.high("Create the unique index the concurrent refresh needs: CREATE UNIQUE INDEX CONCURRENTLY ON %s (its key columns, without a WHERE clause), then run REFRESH MATERIALIZED VIEW CONCURRENTLY %s", v, v)
	r.high("Until then refresh it without CONCURRENTLY once (REFRESH MATERIALIZED VIEW %s takes an exclusive lock while it runs) to unfreeze the figures", v)
	r.med("Add the unique index to the migration that recreates %s so a rebuild keeps it", v)
	r.low("Alert on failed runs of the refresh job (cron.job_run_details status failed) and on the age of the view's last refresh")
}
