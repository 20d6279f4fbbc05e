package analyst

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/rootcause/rootcause/finding"
)

// A progressive rollout aborted by its analysis although the canary was
// never judged: the metric query of the analysis returned no data (the new
// version no longer exports the series it selects, a label was renamed, the
// canary got no traffic), so each measurement errs instead of passing or
// failing, and the controller aborts once the errors pass their limit.
// Argo Rollouts says it in the Rollout's status and RolloutAborted event
// (Metric "success-rate" assessed Error due to consecutiveErrors (5) >
// consecutiveErrorLimit (4): "Error Message: reflect: slice index out of
// range"), the AnalysisRun's measurements (phase: Error, value: '[]');
// Flagger in its log and events ("Halt advancement no values found for
// istio metric request-success-rate", "Rolling back podinfo.test failed
// checks threshold reached 5"). A metric assessed Failed is not this: the
// canary was judged, and failed.

// KindAnalysisNoData is a rollout aborted because its analysis query
// returned no data.
const KindAnalysisNoData Kind = "analysis_no_data"

var analysisNoData = &mechanism{
	kind:   KindAnalysisNoData,
	class:  classCause,
	label:  "rollout aborted: its analysis query returned no data",
	detect: detectAnalysisNoData,
	related: func(h *Hypothesis, f *Finding) bool {
		return strings.EqualFold(f.Subject, h.Subject) && f.Kind != KindDeploy && f.Kind != KindConfigChange
	},
	strictTriggers: true,
	fitsChange:     func(h *Hypothesis, c *Finding) bool { return false },
	describe:       describeAnalysisNoData,
	recommend:      recommendAnalysisNoData,
}

var (
	// argoAssessedErrorRE: Argo Rollouts' abort message of a metric whose
	// measurements erred past their limit.
	argoAssessedErrorRE = regexp.MustCompile(`Metric "([^"]+)" assessed Error due to consecutiveErrors \((\d+)\) > consecutiveErrorLimit \((\d+)\)(?::\s*"?(?:Error Message:\s*)?([^"]*))?`)
	// flaggerNoValuesRE: Flagger halting a canary whose metric query
	// returned nothing.
	flaggerNoValuesRE = regexp.MustCompile(`(?i)no values found for (?:\S+ )?metric ([\w.-]+)`)
	// flaggerTargetRE: the canary Flagger names ("podinfo.test").
	flaggerTargetRE = regexp.MustCompile(`(?i)(?:rolling back|halt(?: advancement)?|canary failed! scaling down) ([a-z0-9][a-z0-9-]*)\.([a-z0-9-]+)`)
	// noDataMsgRE: an errored measurement that had nothing to read.
	noDataMsgRE   = regexp.MustCompile(`(?i)slice index out of range|no values found|returned no data|no data|empty result|value:\s*'?\[\]'?\s*$`)
	rolloutNameRE = regexp.MustCompile(`(?:^Name:\s+(\S+)$|(?i:rollout)/([a-z0-9][a-z0-9-]*))`)
	finishedAtRE  = regexp.MustCompile(`finishedAt:\s*"?(\d{4}-\d\d-\d\dT[\d:]+Z)`)
	promQueryRE   = regexp.MustCompile(`^\s*query:\s*(.*)$`)
	promSeriesRE  = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)\{`)
)

type analysisAbort struct {
	rollout, metric, message, query, series string
	errors, limit                           int
	at                                      time.Time
	flagger                                 bool
}

// analysisAborts reads the aborts by an erring analysis from the commands
// and logs handed over.
func analysisAborts(ev *Gathered) []analysisAbort {
	var texts [][]string
	for _, c := range ev.Commands {
		texts = append(texts, append([]string{c.Command}, c.Lines...))
	}
	for _, ls := range ev.Logs {
		var lines []string
		for _, t := range ls.Templates {
			lines = append(lines, t.Example)
		}
		texts = append(texts, lines)
	}
	var out []analysisAbort
	var found *analysisAbort
	var query, series string
	var noData bool
	var last time.Time
	for _, lines := range texts {
		name := ""
		for i, l := range lines {
			if m := findSubmatch(rolloutNameRE, strings.TrimSpace(l)); m != nil && name == "" {
				name = m[1] + m[2]
			}
			if m := findSubmatch(promQueryRE, l); m != nil && query == "" {
				q := strings.TrimSpace(m[1])
				if q == "|" || q == "|-" || q == ">" {
					if i+1 < len(lines) {
						q = strings.TrimSpace(lines[i+1])
					}
				}
				query = q
				if s := findSubmatch(promSeriesRE, q); s != nil {
					series = s[1]
				}
			}
			if m := findSubmatch(finishedAtRE, l); m != nil {
				if t, err := time.Parse(time.RFC3339, m[1]); err == nil && t.After(last) {
					last = t
				}
			}
			if matchLine(noDataMsgRE, l) {
				noData = true
			}
			if found != nil {
				continue
			}
			if m := findSubmatch(argoAssessedErrorRE, l); m != nil {
				a := analysisAbort{rollout: name, metric: m[1], message: strings.TrimSpace(m[4])}
				a.errors, _ = strconv.Atoi(m[2])
				a.limit, _ = strconv.Atoi(m[3])
				if r := findSubmatch(rolloutNameRE, l); r != nil && r[2] != "" {
					a.rollout = r[2]
				}
				found = &a
			} else if m := findSubmatch(flaggerNoValuesRE, l); m != nil {
				a := analysisAbort{metric: m[1], flagger: true, message: "no values found"}
				if t := findSubmatch(flaggerTargetRE, l); t != nil {
					a.rollout = t[1]
				}
				found = &a
			}
		}
		if found != nil && found.rollout == "" {
			found.rollout = name
		}
	}
	if found == nil || !noData {
		return nil
	}
	if found.rollout == "" {
		found.rollout = ev.Scope.Service
	}
	found.query, found.series, found.at = query, series, last
	return append(out, *found)
}

func detectAnalysisNoData(ev *Gathered, found []Finding) []Finding {
	var out []Finding
	for _, a := range analysisAborts(ev) {
		if a.rollout == "" {
			continue
		}
		at := a.at
		for _, c := range ev.Changes {
			if strings.EqualFold(c.Service, a.rollout) && at.IsZero() {
				at = c.Timestamp
			}
		}
		if at.IsZero() || !ev.Window.recent(at) {
			at = ev.Window.Start
		}
		f := Finding{Kind: KindAnalysisNoData, Subject: a.rollout, Namespace: ev.Scope.Namespace, Severity: SevCritical, Weight: 0.9,
			Source: SrcKubernetes, Time: at, Object: "rollout " + a.rollout}
		f.setFact("metric", a.metric)
		f.setFact("message", a.message)
		f.setFact("query", a.query)
		f.setFact("series", a.series)
		f.setFact("controller", map[bool]string{true: "Flagger", false: "Argo Rollouts"}[a.flagger])
		if a.errors > 0 {
			f.setFact("errors", fmt.Sprintf("%d measurements erred in a row (consecutiveErrorLimit %d)", a.errors, a.limit))
		}
		f.Evidence = []string{fmt.Sprintf("the analysis metric %q of %s assessed Error, not Failed: its query returned no data (%s)", a.metric, a.rollout, a.message)}
		if a.errors > 0 {
			f.Evidence = append(f.Evidence, fmt.Sprintf("consecutiveErrors (%d) > consecutiveErrorLimit (%d): the rollout was aborted on errors of the measurement, not on a result of the canary", a.errors, a.limit))
		}
		if a.query != "" {
			f.Evidence = append(f.Evidence, fmt.Sprintf("the analysis query: %s", a.query))
		}
		f.Summary = fmt.Sprintf("the rollout of %s was aborted because its analysis metric %q returned no data", a.rollout, a.metric)
		out = append(out, f)
	}
	return out
}

func describeAnalysisNoData(h *Hypothesis, sc Scope) string {
	series := ""
	if s := h.fact("series"); s != "" {
		series = fmt.Sprintf(" (it selects %s: a series the new version may no longer export, renamed, or without the labels the query filters on)", s)
	}
	errs := ""
	if e := h.fact("errors"); e != "" {
		errs = ", " + e
	}
	return fmt.Sprintf("%s aborted the rollout of %s on its analysis, not on the canary: the query of the analysis metric %q returned no data%s, so each measurement erred (%s)%s and the abort followed; the canary was never judged, and nothing shows the new version itself failing",
		h.fact("controller"), h.Subject, h.fact("metric"), series, h.fact("message"), errs)
}

func recommendAnalysisNoData(h *Hypothesis, sc Scope, r *recommender) {
	r.add(finding.PriorityHigh, fmt.Sprintf("Fix the analysis query of metric %q (the AnalysisTemplate or MetricTemplate) to the series and labels the new version of %s exports, run it by hand against the canary, then retry the rollout", h.fact("metric"), h.Subject))
	r.add(finding.PriorityMedium, "Make an empty query result a failure the template reports clearly (check len(result) in successCondition, or a query that falls back to a value) instead of a measurement error")
	r.add(finding.PriorityLow, "Test analysis templates against each release's metrics before rollout (a CI step that queries the canary's series)")
}
