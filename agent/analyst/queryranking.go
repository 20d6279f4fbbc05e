package analyst

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// KindQueryRanking: a question asking which service, pod or node has the
// most of something, answered from the result of a query that counts it.
const KindQueryRanking Kind = "query_ranking"

// "Which service has the most 5xx in the last hour?" asks for a value, not
// a cause: the answer is the first entry of the query that counts what the
// question names (sum by (service) (increase(...[1h]))), read from the
// query the assistant ran against Prometheus (or Thanos, Mimir,
// VictoriaMetrics: the same HTTP API) — `curl .../api/v1/query` with its
// JSON answer, or `promtool query instant` with its text. A firing alert on
// another service is not the answer: an alert on a ratio names the service
// with the highest share, not the most. A question about the most of a
// count is answered from a query that counts (no ratio), one about the
// highest ratio, share or percentage from a ratio.
var queryRanking = &mechanism{
	kind:   KindQueryRanking,
	class:  classCause,
	label:  "ranking answered from a query result",
	detect: detectQueryRanking,
	describe: func(h *Hypothesis, sc Scope) string {
		s := fmt.Sprintf("%s ranks first: %s (%s) is %s for it", h.Subject, h.fact("measure"), h.fact("query"), h.fact("value"))
		if r := h.fact("runner_up"); r != "" {
			s += fmt.Sprintf(", ahead of %s", r)
		}
		if o := h.fact("other_ranking"); o != "" {
			s += "; " + o
		}
		return s + " (no fault is implied: the question asks for a ranking)"
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Look at %s first: it has the most %s (%s); break it down by route, status code and pod to see where it comes from", h.Subject, h.fact("measure"), h.fact("value"))
		if o := h.fact("other_top"); o != "" {
			r.med("Do not confuse the count with the share: %s leads by ratio, which is what a ratio alert fires on", o)
		}
		r.low("Keep the query that answered this (%s) as a dashboard panel", h.fact("query"))
	},
}

var (
	// rankingQuestionRE is a question asking for the first of a ranking.
	rankingQuestionRE = regexp.MustCompile(`(?i)\b(?:which|what|who)\b[^?.]*\b(?:most|highest|largest|biggest|greatest|top|worst|heaviest)\b|\b(?:top|rank(?:ing|ed)?)\s+(?:\d+\s+)?(?:services?|pods?|nodes?|apps?|workloads?|endpoints?|routes?|customers?|tenants?|consumers?|queues?|topics?)\b`)
	// ratioQuestionRE asks for a share rather than an amount.
	ratioQuestionRE = regexp.MustCompile(`(?i)\b(?:ratio|rate|share|percent(?:age)?|proportion|fraction)\b|%`)
	// promQueryArgRE is the expression of an HTTP API call: query=... in
	// --data-urlencode, -d or the URL.
	promQueryArgRE = regexp.MustCompile(`'query=([^']+)'|"query=((?:[^"\\]|\\.)+)"|[?&]query=([^&'"\s]+)|\squery=([^'"\s]+)`)
	// promtoolQueryRE is promtool's instant query: its expression is the
	// last argument.
	promtoolQueryRE = regexp.MustCompile(`promtool\s+query\s+instant\s+(?:--\S+\s+)*\S+\s+(?:'([^']+)'|"([^"]+)"|(\S+))`)
	// promtoolLineRE is one sample of promtool's text: {labels} => value @[ts].
	promtoolLineRE = regexp.MustCompile(`^\s*(\{[^}]*\})\s*=>\s*(\S+)\s*@\[(\d+(?:\.\d+)?)\]`)
	promLabelRE    = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)
	// rangeRE is the range a counting query sums over ([1h], [30m]).
	rangeRE = regexp.MustCompile(`\[(\d+[smhdw])\]`)
	// fiveXXExprRE is an expression that selects server errors.
	fiveXXExprRE = regexp.MustCompile(`(?:code|status|status_code)=~?"5|5xx`)
)

// rankedEntry is one element of an instant vector.
type rankedEntry struct {
	labels map[string]string
	value  float64
}

// rankedQuery is one instant query the assistant ran and its answer.
type rankedQuery struct {
	expr    string
	at      time.Time
	entries []rankedEntry
}

func (q rankedQuery) ratio() bool {
	return strings.Contains(q.expr, " / ") || strings.Contains(q.expr, ")/") || strings.Contains(q.expr, ") /")
}

// rankedQueries reads the instant vectors of the queries in the handed-over
// outputs.
func rankedQueries(cmds []evidence.CommandOutput) []rankedQuery {
	var out []rankedQuery
	for _, c := range cmds {
		run := c.Run
		if run == "" {
			run = c.Command
		}
		var q rankedQuery
		if m := promQueryArgRE.FindStringSubmatch(run); m != nil {
			raw := m[1] + m[2] + m[3] + m[4]
			e := raw
			if m[3] != "" {
				if u, err := url.QueryUnescape(raw); err == nil {
					e = u
				}
			}
			q.expr = e
			q.entries, q.at = promJSONVector(c.Lines)
		} else if m := promtoolQueryRE.FindStringSubmatch(run); m != nil {
			q.expr = m[1] + m[2] + m[3]
			q.entries, q.at = promtoolVector(c.Lines)
		}
		if q.expr != "" && len(q.entries) >= 2 {
			out = append(out, q)
		}
	}
	return out
}

// promJSONVector reads the HTTP API's answer to an instant query: a vector
// of {metric, value: [ts, "v"]}, printed on one line or pretty-printed.
func promJSONVector(lines []string) ([]rankedEntry, time.Time) {
	text := strings.Join(lines, "\n")
	i := strings.Index(text, "{")
	if i < 0 {
		return nil, time.Time{}
	}
	var resp struct {
		Data struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Metric map[string]string `json:"metric"`
				Value  []any             `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	dec := json.NewDecoder(strings.NewReader(text[i:]))
	if err := dec.Decode(&resp); err != nil || resp.Data.ResultType != "vector" {
		return nil, time.Time{}
	}
	var out []rankedEntry
	var at time.Time
	for _, r := range resp.Data.Result {
		if len(r.Value) != 2 {
			continue
		}
		s, _ := r.Value[1].(string)
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(v) {
			continue
		}
		if t, ok := r.Value[0].(float64); ok && at.IsZero() {
			at = time.Unix(int64(t), 0).UTC()
		}
		out = append(out, rankedEntry{labels: r.Metric, value: v})
	}
	return out, at
}

// promtoolVector reads promtool's text answer to an instant query.
func promtoolVector(lines []string) ([]rankedEntry, time.Time) {
	var out []rankedEntry
	var at time.Time
	for _, l := range lines {
		m := promtoolLineRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil || math.IsNaN(v) {
			continue
		}
		labels := map[string]string{}
		for _, lm := range promLabelRE.FindAllStringSubmatch(m[1], -1) {
			labels[lm[1]] = lm[2]
		}
		if t, err := strconv.ParseFloat(m[3], 64); err == nil && at.IsZero() {
			at = time.Unix(int64(t), 0).UTC()
		}
		out = append(out, rankedEntry{labels: labels, value: v})
	}
	return out, at
}

// rankLabelOrder is the label that names an entry when it has several.
var rankLabelOrder = []string{"service", "app", "deployment", "workload", "job_name", "pod", "container", "node", "instance", "job", "namespace"}

// entryName names an entry by the label it was grouped by.
func entryName(e rankedEntry) string {
	for _, k := range rankLabelOrder {
		if v := e.labels[k]; v != "" {
			return v
		}
	}
	var keys []string
	for k := range e.labels {
		if k != "__name__" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	if len(keys) == 0 {
		return ""
	}
	return e.labels[keys[0]]
}

// rankValue prints a ranked value: counts whole, shares as they are.
func rankValue(v float64) string {
	if v >= 100 {
		return strconv.FormatFloat(math.Round(v), 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// rankMeasure says what a counting query counts, in words.
func rankMeasure(expr string) string {
	what := "the query's value"
	switch {
	case fiveXXExprRE.MatchString(expr):
		what = "5xx responses"
	case strings.Contains(expr, "restart"):
		what = "restarts"
	case strings.Contains(expr, "error") || strings.Contains(expr, "fail"):
		what = "errors"
	}
	if m := rangeRE.FindStringSubmatch(expr); m != nil && (strings.Contains(expr, "increase(") || strings.Contains(expr, "count_over_time(")) {
		what += " over the last " + m[1]
	}
	return what
}

func detectQueryRanking(ev *Gathered, _ []Finding) []Finding {
	msg := ev.Scope.Message
	if !rankingQuestionRE.MatchString(msg) {
		return nil
	}
	qs := rankedQueries(ev.Commands)
	if len(qs) == 0 {
		return nil
	}
	wantRatio := ratioQuestionRE.MatchString(msg)
	var pick *rankedQuery
	var other *rankedQuery
	for i := range qs {
		if qs[i].ratio() == wantRatio {
			if pick == nil {
				pick = &qs[i]
			}
		} else if other == nil {
			other = &qs[i]
		}
	}
	if pick == nil {
		return nil
	}
	entries := append([]rankedEntry(nil), pick.entries...)
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].value > entries[j].value })
	top, second := entries[0], entries[1]
	name := entryName(top)
	if name == "" || top.value <= second.value {
		return nil
	}
	at := pick.at
	if at.IsZero() {
		at = ev.Window.End
	}
	start := at
	if m := rangeRE.FindStringSubmatch(pick.expr); m != nil {
		if d, err := parsePromDuration(m[1]); err == nil {
			start = at.Add(-d)
		}
	}
	measure := rankMeasure(pick.expr)
	f := Finding{
		Kind:     KindQueryRanking,
		Subject:  name,
		Object:   name,
		Time:     start,
		Severity: SevWarning,
		Summary:  fmt.Sprintf("%s has the most %s: %s", name, measure, rankValue(top.value)),
		Weight:   0.95,
		Source:   "prometheus query",
	}
	var list []string
	for i, e := range entries {
		if i == 4 {
			break
		}
		list = append(list, fmt.Sprintf("%s %s", entryName(e), rankValue(e.value)))
	}
	f.Evidence = append(f.Evidence, fmt.Sprintf("%s at %s: %s", pick.expr, ts(at), strings.Join(list, ", ")))
	f.setFact("measure", measure)
	f.setFact("query", pick.expr)
	f.setFact("value", rankValue(top.value))
	f.setFact("runner_up", fmt.Sprintf("%s (%s)", entryName(second), rankValue(second.value)))
	f.setFact("cause_at", at.UTC().Format(time.RFC3339))
	f.setFact("cause_event", fmt.Sprintf("query answered: %s first with %s, %s second with %s", name, rankValue(top.value), entryName(second), rankValue(second.value)))
	if other != nil {
		oe := append([]rankedEntry(nil), other.entries...)
		sort.SliceStable(oe, func(i, j int) bool { return oe[i].value > oe[j].value })
		if on := entryName(oe[0]); on != "" && on != name {
			f.Evidence = append(f.Evidence, fmt.Sprintf("by ratio (%s) %s leads with %s, %s has %s", other.expr, on, rankValue(oe[0].value), name, rankValue(valueOf(oe, name))))
			f.setFact("other_top", on)
			f.setFact("other_ranking", fmt.Sprintf("%s leads by ratio (%s) but with fewer in all", on, rankValue(oe[0].value)))
		}
	}
	return []Finding{f}
}

// valueOf is the value of the entry named name (NaN when absent).
func valueOf(es []rankedEntry, name string) float64 {
	for _, e := range es {
		if entryName(e) == name {
			return e.value
		}
	}
	return math.NaN()
}

// parsePromDuration reads a PromQL range (30m, 1h, 7d, 1w).
func parsePromDuration(s string) (time.Duration, error) {
	if strings.HasSuffix(s, "d") || strings.HasSuffix(s, "w") {
		n, err := strconv.Atoi(s[:len(s)-1])
		if err != nil {
			return 0, err
		}
		d := 24 * time.Hour
		if strings.HasSuffix(s, "w") {
			d *= 7
		}
		return time.Duration(n) * d, nil
	}
	return time.ParseDuration(s)
}
