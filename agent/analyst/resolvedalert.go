package analyst

import (
	"context"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/finding"
)

// An alert that fired and has since resolved, asked about when nothing is
// wrong any more ("the lag alert fired overnight, is X healthy?"), needs
// more than "no fault found": the subject is healthy now, and the alert
// fired because its series rose and came back while something else ran
// (a batch job in a host's log, a change). explainResolvedAlert reads the
// alerts handed to the investigation, finds the alerting series among the
// metrics gathered, the episode in it (rise, peak, back to its baseline)
// and what coincided with the rise, and says so in a healthy result.

// alertEpisode is a resolved alert explained by its series and what
// coincided with it.
type alertEpisode struct {
	Alert            string
	StartsAt, EndsAt time.Time
	Metric           string // the alerting series' name
	Rise, Peak, Back time.Time
	Base, PeakV, Now float64
	Cause            string    // what coincided: a job's log line, a change
	CauseAt          time.Time // when it began
	CauseSource      string
	// Load: the cause is the load one client sent (Client), a load test
	// of the tool LoadTest when it names one (loadepisode.go).
	Load     bool
	LoadTest string
	Client   *episodeClient
}

// bulkWorkRE is a line of a batch job's heavy work: what makes a database
// lag, a disk fill or a node's CPU rise while it runs.
var bulkWorkRE = regexp.MustCompile(`(?i)\b(delete|update|insert|copy|vacuum|analyze|reindex|rebuild|backup|dump|restore|archiv\w*|import\w*|export\w*|migrat\w*|compact\w*|snapshot|purge|truncate|bulk|batch|cron|nightly|retention)\b`)

// metricNameRE finds the metric names in an alert's expression.
var metricNameRE = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)

// explainResolvedAlerts finds the first resolved alert about the
// question's subject whose series rose and came back, and what coincided
// with the rise; nil when none is explained.
func explainResolvedAlerts(alerts []evidence.Alert, metrics []MetricSet, logs []LogSet, changes []evidence.Change, sc Scope) *alertEpisode {
	subjects := sc.Subjects()
	for _, a := range alerts {
		if !alertResolved(a, sc.Window.End) || !alertAbout(a, subjects, sc.Alert) {
			continue
		}
		ep := alertSeriesEpisode(a, metrics)
		if ep == nil {
			continue
		}
		if !coincident(ep, logs, changes, subjects) {
			continue
		}
		return ep
	}
	return nil
}

// alertResolved: Alertmanager says resolved, or its end lies in the past.
func alertResolved(a evidence.Alert, now time.Time) bool {
	if strings.EqualFold(a.Status, "resolved") {
		return true
	}
	return !a.EndsAt.IsZero() && !now.IsZero() && a.EndsAt.Before(now)
}

// alertAbout reports whether an alert concerns one of the subjects (a
// label names it) or is the alert the question names.
func alertAbout(a evidence.Alert, subjects []string, named string) bool {
	if named != "" && strings.EqualFold(strings.TrimSpace(named), a.Name) {
		return true
	}
	for _, v := range a.Labels {
		for _, s := range subjects {
			if s != "" && (strings.EqualFold(v, s) || strings.HasPrefix(strings.ToLower(v), strings.ToLower(s)+"-")) {
				return true
			}
		}
	}
	return false
}

// alertMetricNames are the metric names of the alert's expression (its
// generator URL's g0.expr).
func alertMetricNames(a evidence.Alert) []string {
	u, err := url.Parse(a.GeneratorURL)
	if err != nil {
		return nil
	}
	return findAllString(metricNameRE, u.Query().Get("g0.expr"), -1)
}

// alertSeriesEpisode finds the alerting series (named by the alert's
// expression, or carrying its pod or instance) and its episode around the
// alert: it rose well above its baseline and is back near it now.
func alertSeriesEpisode(a evidence.Alert, metrics []MetricSet) *alertEpisode {
	names := alertMetricNames(a)
	var best *alertEpisode
	for _, m := range metrics {
		named := slices.Contains(names, m.Name)
		for _, s := range m.Series {
			if !named && !sameInstance(a.Labels, s.Labels) {
				continue
			}
			if len(names) > 0 && !named {
				continue
			}
			if ep := seriesEpisode(s.Points, a.StartsAt, a.EndsAt); ep != nil {
				// The series of the alert's own pod or instance first,
				// then the highest peak.
				if best == nil || (sameInstance(a.Labels, s.Labels) && ep.PeakV > best.PeakV) {
					ep.Alert, ep.StartsAt, ep.EndsAt, ep.Metric = a.Name, a.StartsAt, a.EndsAt, m.Name
					best = ep
				}
			}
		}
	}
	return best
}

// sameInstance: the series carries the alert's pod or instance.
func sameInstance(al, sl map[string]string) bool {
	for _, k := range []string{"pod", "instance"} {
		if al[k] != "" && al[k] == sl[k] {
			return true
		}
	}
	return false
}

// seriesEpisode reads a rise and recovery around [start, end]: the peak
// near the alert at least three times the baseline before it (and clearly
// above it), the last point back within a fifth of the way up. Rise and
// Back are where the series crossed a tenth of the way up.
func seriesEpisode(ps []evidence.Point, start, end time.Time) *alertEpisode {
	if len(ps) < 6 || start.IsZero() {
		return nil
	}
	if end.IsZero() {
		end = start
	}
	var before []float64
	pk := -1
	for i, p := range ps {
		if p.T.Before(start.Add(-30 * time.Minute)) {
			before = append(before, p.V)
		}
		if !p.T.Before(start.Add(-30*time.Minute)) && !p.T.After(end.Add(30*time.Minute)) && (pk < 0 || p.V > ps[pk].V) {
			pk = i
		}
	}
	if pk < 0 || len(before) < 3 {
		return nil
	}
	sort.Float64s(before)
	base := before[len(before)/2]
	peak, last := ps[pk].V, ps[len(ps)-1].V
	rise := peak - base
	if peak < 3*math.Abs(base) || rise <= 0 || last > base+0.2*rise || !ps[len(ps)-1].T.After(end) {
		return nil
	}
	low := base + 0.1*rise
	i := pk
	for i > 0 && ps[i-1].V > low {
		i--
	}
	j := pk
	for j < len(ps)-1 && ps[j].V > low {
		j++
	}
	return &alertEpisode{Rise: ps[i].T, Peak: ps[pk].T, Back: ps[j].T, Base: base, PeakV: peak, Now: last}
}

// coincident finds what ran when the series rose: a log source other than
// the subject's own whose lines begin within 30 minutes before the rise
// (a job's heavy work preferred), or a change in that time.
func coincident(ep *alertEpisode, logs []LogSet, changes []evidence.Change, subjects []string) bool {
	from, to := ep.Rise.Add(-30*time.Minute), ep.Rise.Add(2*time.Minute)
	// Who sent the load while the series was up, when the access log
	// in front of the service says (loadepisode.go).
	if c := loadOfEpisode(ep, logs); c != nil {
		ep.Client = c
		loadCause(ep, c, "", "")
		return true
	}
	own := func(s string) bool {
		for _, x := range subjects {
			if strings.EqualFold(s, x) {
				return true
			}
		}
		return false
	}
	bestScore := 0
	for _, ls := range logs {
		if own(ls.Subject) {
			continue
		}
		var began, lineAt time.Time
		var line string
		var work bool
		for _, t := range ls.Templates {
			if t.FirstSeen.IsZero() || t.FirstSeen.After(ep.Back) {
				continue
			}
			if t.FirstSeen.Before(from) {
				continue // ran before the episode too
			}
			if !t.FirstSeen.After(to) && (began.IsZero() || t.FirstSeen.Before(began)) {
				began = t.FirstSeen
			}
			// The job's heavy work closest before the rise (what started
			// it), else its first line.
			ex := strings.TrimSpace(t.Example)
			if matchLine(bulkWorkRE, ex) && !t.FirstSeen.After(to) && (!work || t.FirstSeen.After(lineAt)) {
				line, lineAt, work = ex, t.FirstSeen, true
			} else if !work && (line == "" || t.FirstSeen.Before(lineAt)) {
				line, lineAt = ex, t.FirstSeen
			}
		}
		if began.IsZero() || line == "" {
			continue
		}
		score := 1
		if work {
			score = 2
		}
		if score > bestScore {
			bestScore = score
			ep.Cause, ep.CauseAt, ep.CauseSource = fmt.Sprintf("%s ran from %s UTC: %q", ls.Subject, began.UTC().Format("15:04"), clip(line, 160)), began, ls.Source
		}
	}
	if bestScore > 0 {
		return true
	}
	for _, c := range changes {
		if !c.Timestamp.Before(from) && !c.Timestamp.After(to) {
			ep.Cause, ep.CauseAt, ep.CauseSource = fmt.Sprintf("a %s change to %s at %s UTC: %s", orWord(c.Kind, "change"), orWord(c.Service, "the system"), c.Timestamp.UTC().Format("15:04"), clip(c.Description, 160)), c.Timestamp, orWord(c.Source, "changes")
			return true
		}
	}
	return false
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// explainResolvedAlert turns a healthy result about a subject whose alert
// has resolved into "healthy now; the alert fired because ...".
func (g *gatherer) explainResolvedAlert(ctx context.Context, res *finding.Result) {
	if res == nil {
		return
	}
	w := g.sc.Window
	var alerts []evidence.Alert
	var err error
	if g.src != nil && g.src.Alerts != nil {
		alerts, err = g.src.Alerts.List(ctx, w.BaselineStart, w.End)
	}
	// A no-healthy-targets alert about a target group left over by a
	// decommissioned owner (staletargetgroup.go).
	if err == nil && g.answerStaleTargetGroup(res, alerts) {
		return
	}
	// A failed-Job alert kept firing by one past run of a CronJob whose
	// later runs completed (stalejobalert.go).
	if err == nil && g.answerStaleJobFailure(res, alerts) {
		return
	}
	// A workload whose replicas went missing when their node was removed,
	// all back now (noderemovedover.go).
	if g.answerNodeRemovedOver(ctx, res, alerts) {
		return
	}
	// A failure asked about that is over: healthy now, with its cause
	// (overnow.go).
	if res.Verdict != finding.VerdictHealthy && err == nil && answerOverNow(res, g.logSets, alerts, g.sc) {
		return
	}
	// A workload asked about that is fully available now, its alert a
	// rollout's passing dip (rolloutover.go).
	if res.Verdict != finding.VerdictHealthy && g.answerRolloutOver(ctx, res) {
		return
	}
	// A storage alert that cleared when the platform grew the storage,
	// while nothing identified a cause (storagegrown.go).
	if err == nil && answerStorageGrown(res, g.gathered(), alerts) {
		if g.src != nil && g.src.Kubernetes != nil {
			if pods, err := evidence.List[corev1.Pod](ctx, g.src.Kubernetes, "", ""); err == nil {
				for _, f := range failingElsewhere(pods, g.sc.Namespace) {
					res.RuledOut = append(res.RuledOut, finding.RuledOut{Hypothesis: "another failure: " + f, Reason: "unrelated to " + orWord(strings.Join(g.sc.Subjects(), ", "), "the subject") + " and to the storage alert: a separate problem, handle it apart"})
				}
			}
		}
		return
	}
	if res.Verdict != finding.VerdictHealthy && res.Verdict != finding.VerdictInconclusive || g.src == nil || g.src.Alerts == nil {
		return
	}
	if err != nil || len(alerts) == 0 {
		return
	}
	ep := explainResolvedAlerts(alerts, g.metricSets, g.logSets, g.changes, g.sc)
	if ep == nil {
		return
	}
	// A result that found only a symptom, within the episode, found the
	// episode's own symptom: it is over with it (loadepisode.go).
	if res.Verdict != finding.VerdictHealthy && !symptomOfEpisode(res, ep) {
		return
	}
	if ep.Client != nil {
		if pods, tool := loadTestPods(g.allPods(ctx), ep); pods != "" {
			loadCause(ep, ep.Client, pods, tool)
		}
	}
	applyAlertEpisode(res, ep, g.sc)
}

// applyAlertEpisode writes the explanation into a healthy result.
func applyAlertEpisode(res *finding.Result, ep *alertEpisode, sc Scope) {
	what := strings.Join(sc.Subjects(), ", ")
	if what == "" {
		what = "the system"
	}
	hm := func(t time.Time) string { return t.UTC().Format("15:04") }
	ts := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	expl := fmt.Sprintf("%s is healthy now; %s fired %s–%s UTC and resolved: %s rose from %.3g to %.3g between %s and %s and was back to %.3g by %s, as %s.",
		what, ep.Alert, hm(ep.StartsAt), hm(ep.EndsAt), ep.Metric, ep.Base, ep.PeakV, hm(ep.Rise), hm(ep.Peak), ep.Now, hm(ep.Back), ep.Cause)
	res.Summary = expl + " " + res.Summary
	res.RootCause.Description = expl + " A transient load, recovered; " + res.RootCause.Description
	res.RootCause.Evidence = append(res.RootCause.Evidence,
		fmt.Sprintf("alert %s resolved at %s UTC (fired %s UTC)", ep.Alert, hm(ep.EndsAt), hm(ep.StartsAt)),
		fmt.Sprintf("%s: %.3g before, %.3g at %s UTC, %.3g now", ep.Metric, ep.Base, ep.PeakV, hm(ep.Peak), ep.Now),
		fmt.Sprintf("%s: %s", ep.CauseSource, ep.Cause))
	res.Timeline = append(res.Timeline,
		finding.TimelineEvent{Timestamp: ts(ep.CauseAt), Event: ep.Cause},
		finding.TimelineEvent{Timestamp: ts(ep.Rise), Event: fmt.Sprintf("%s rises above its baseline %.3g", ep.Metric, ep.Base)},
		finding.TimelineEvent{Timestamp: ts(ep.StartsAt), Event: "alert " + ep.Alert + " fires"},
		finding.TimelineEvent{Timestamp: ts(ep.Peak), Event: fmt.Sprintf("%s peaks at %.3g", ep.Metric, ep.PeakV)},
		finding.TimelineEvent{Timestamp: ts(ep.Back), Event: fmt.Sprintf("%s back near its baseline", ep.Metric)},
		finding.TimelineEvent{Timestamp: ts(ep.EndsAt), Event: "alert " + ep.Alert + " resolved"})
	sort.SliceStable(res.Timeline, func(i, j int) bool { return res.Timeline[i].Timestamp < res.Timeline[j].Timestamp })
	res.RootCause.Confidence = max(res.RootCause.Confidence, 60)
	if res.Verdict != finding.VerdictHealthy {
		// The symptom found was the episode's: over, nothing to fix.
		res.Verdict = finding.VerdictHealthy
		res.Recommendations = nil
	}
	if ep.Load {
		res.Recommendations = append(loadEpisodeRecommendations(ep, what), res.Recommendations...)
	} else {
		res.Recommendations = append([]finding.Recommendation{{Priority: finding.PriorityLow,
			Action: fmt.Sprintf("No fix needed on %s; to keep %s from paging for it, spread the job's work into smaller batches or schedule it off-peak, or hold the alert for longer than the job's burst", what, ep.Alert)}},
			res.Recommendations...)
	}
	res.Normalize()
}
