package analyst

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// Metric classes.
const (
	MetricErrors     = "errors"
	MetricLatency    = "latency"
	MetricSaturation = "saturation"
	MetricFree       = "free" // free/available capacity: falling is bad
	MetricRestarts   = "restarts"
	MetricUp         = "up"
	MetricRequests   = "requests" // request counters split by status code
)

// MetricSet is the series of one metric, transformed for analysis (rates
// for counters), with its class.
type MetricSet struct {
	Name   string // metric name as queried
	Class  string
	Unit   string // "s", "bytes", "/s", "%", ""
	Origin string // SrcMetrics or SrcCloudWatch
	Series []evidence.Series
}

// ClassifyMetric sorts a metric name into a class ("" when it says nothing
// about health) and its unit.
func ClassifyMetric(name string) (class, unit string) {
	n := strings.ToLower(name)
	has := func(words ...string) bool {
		for _, w := range words {
			if strings.Contains(n, w) {
				return true
			}
		}
		return false
	}
	unit = ""
	switch {
	case strings.HasSuffix(n, "_seconds") || strings.HasSuffix(n, "_seconds_sum") || strings.HasSuffix(n, "_seconds_count") || strings.HasSuffix(n, "_seconds_bucket") || has("duration", "latency") && !has("bytes"):
		unit = "s"
	case has("bytes"):
		unit = "bytes"
	case has("percent", "utilization", "ratio"):
		unit = "%"
	}
	if strings.HasSuffix(n, "_bucket") {
		return "", unit
	}
	switch {
	case has("restarts"):
		return MetricRestarts, ""
	case n == "up":
		return MetricUp, ""
	case has("error", "errors", "failed", "failure", "exception", "5xx", "fault", "dropped", "rejected", "timeouts", "throttle", "oomkill"):
		if strings.HasSuffix(n, "_seconds") || has("bucket") {
			return "", unit
		}
		return MetricErrors, "/s"
	case has("latency", "duration", "response_time", "responsetime", "_seconds_sum", "_seconds_count") && !has("cpu"):
		return MetricLatency, "s"
	case has("requests_total", "_handled_total", "http_requests", "requests_count", "grpc_server_handled"):
		return MetricRequests, "/s"
	case has("avail", "free", "remaining", "headroom"):
		return MetricFree, unit
	case has("cpu", "memory", "heap", "connections", "conns", "pool", "in_use", "inuse", "active", "queue", "lag", "backlog",
		"pending", "threads", "goroutines", "disk", "filesystem", "open_fds", "saturation", "utilization", "usage", "working_set", "load"):
		if has("limit", "capacity", "max_", "_max", "spec_") {
			return "", unit
		}
		return MetricSaturation, unit
	}
	return "", unit
}

// IsServerError reports whether a status label value is a 5xx.
func IsServerError(code string) bool {
	c := strings.ToLower(code)
	return len(c) == 3 && c[0] == '5' || c == "5xx" || c == "error" || c == "internal" || c == "unavailable" || c == "deadlineexceeded"
}

// statusLabel returns the status-code label of a series, if any.
func statusLabel(l evidence.Labels) (string, bool) {
	for _, k := range []string{"code", "status", "status_code", "http_status", "response_code", "grpc_code", "outcome"} {
		if v, ok := l[k]; ok {
			return v, true
		}
	}
	return "", false
}

// SubjectOfLabels names the service or workload a series is about.
func SubjectOfLabels(l evidence.Labels) string {
	for _, k := range []string{"service", "service_name", "app", "app_kubernetes_io_name", "deployment", "workload", "statefulset", "daemonset",
		"FunctionName", "DBInstanceIdentifier", "DBClusterIdentifier", "LoadBalancer", "TargetGroup", "QueueName", "TableName", "CacheClusterId",
		"ClusterName", "ServiceName", "ApiName", "destination_service_name", "job"} {
		if v := l[k]; v != "" {
			return v
		}
	}
	if c := l["container"]; c != "" && c != "POD" {
		return c
	}
	if p := l["pod"]; p != "" {
		return workloadOfName(p)
	}
	if n := l["node"]; n != "" {
		return n
	}
	if i := l["instance"]; i != "" {
		return DependencyName(i)
	}
	return ""
}

// formatValue renders a metric value with its unit.
func formatValue(v float64, unit string) string {
	switch unit {
	case "s":
		if math.Abs(v) < 1 {
			return fmt.Sprintf("%.0f ms", v*1000)
		}
		return fmt.Sprintf("%.2f s", v)
	case "bytes":
		switch a := math.Abs(v); {
		case a >= 1<<30:
			return fmt.Sprintf("%.2f GiB", v/(1<<30))
		case a >= 1<<20:
			return fmt.Sprintf("%.0f MiB", v/(1<<20))
		case a >= 1<<10:
			return fmt.Sprintf("%.0f KiB", v/(1<<10))
		}
		return fmt.Sprintf("%.0f B", v)
	case "/s":
		return fmt.Sprintf("%.3g/s", v)
	case "%":
		if math.Abs(v) <= 1 {
			return fmt.Sprintf("%.0f%%", v*100)
		}
		return fmt.Sprintf("%.0f%%", v)
	}
	return fmt.Sprintf("%.4g", v)
}

func labelString(l evidence.Labels) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		if k != "__name__" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%q", k, l[k]))
	}
	return l["__name__"] + "{" + strings.Join(parts, ",") + "}"
}

// shift is an anomaly or change point reduced to what a finding needs.
type shift struct {
	start, peakAt  time.Time
	before, peak   float64
	score          float64
	up             bool
	byChangePoint  bool
	incidentPoints int
}

// seriesShift finds how a series left its normal level: a robust band
// anomaly of the incident window against the baseline when the baseline
// has enough points, else the most significant change point inside the
// incident window.
func seriesShift(s evidence.Series, w Window) (shift, bool) {
	as := analysis.DetectAnomalies([]evidence.Series{s}, w.BaselineStart, w.Start, w.Start, w.End, analysis.AnomalyOptions{})
	if len(as) > 0 {
		a := as[0]
		return shift{start: a.Start, peakAt: a.PeakTime, before: a.BaselineMedian, peak: a.PeakValue, score: a.Score, up: a.Direction == analysis.Up, incidentPoints: a.Points}, true
	}
	nBase := 0
	for _, p := range s.Points {
		if !p.T.Before(w.BaselineStart) && p.T.Before(w.Start) {
			nBase++
		}
	}
	if nBase >= 5 {
		return shift{}, false // the band found nothing despite a baseline
	}
	cp, ok := analysis.FindChangePoint(s, 3, 5)
	if !ok || cp.Time.Before(w.Start) && !w.Start.IsZero() && cp.Time.Before(w.BaselineStart) {
		return shift{}, false
	}
	sh := shift{start: cp.Time, before: cp.Before, peak: cp.After, peakAt: cp.Time, score: cp.Score, up: cp.Direction == analysis.Up, byChangePoint: true}
	for _, p := range s.Points {
		if !p.T.Before(cp.Time) && (sh.up && p.V > sh.peak || !sh.up && p.V < sh.peak) {
			sh.peak, sh.peakAt = p.V, p.T
		}
	}
	return sh, true
}

// DetectMetrics finds error rates, latencies, saturation and restarts that
// left their baseline in the incident window, in the direction that hurts.
func DetectMetrics(sets []MetricSet, w Window) []Finding {
	type key struct {
		kind    Kind
		subject string
	}
	best := map[key]*Finding{}
	var order []key
	for _, ms := range sets {
		var totals map[string]map[time.Time]float64
		if ms.Class == MetricRequests {
			totals = requestTotals(ms.Series)
		}
		for _, s := range ms.Series {
			kind, badUp := metricKind(ms.Class, s.Labels)
			if kind == "" {
				continue
			}
			sh, ok := seriesShift(s, w)
			if !ok || sh.up != badUp {
				continue
			}
			if !meaningful(sh, ms.Class) {
				continue
			}
			subject := SubjectOfLabels(s.Labels)
			share := ""
			if totals != nil {
				// Server errors matter as a share of the traffic: a few
				// stray 5xx on a busy service are noise.
				tot := totals[SubjectOfLabels(s.Labels)][sh.peakAt]
				if tot <= 0 || sh.peak/tot < minErrorShare {
					continue
				}
				share = fmt.Sprintf(", %.0f%% of requests", 100*sh.peak/tot)
			}
			verb := "rose"
			if !sh.up {
				verb = "fell"
			}
			how := fmt.Sprintf("robust z-score %.1f against the baseline", math.Abs(sh.score))
			if sh.byChangePoint {
				how = fmt.Sprintf("level shift of %.1f robust units", math.Abs(sh.score))
			}
			name := labelString(s.Labels)
			if s.Labels["__name__"] == "" {
				name = ms.Name + name
			}
			ev := fmt.Sprintf("%s %s from %s to %s%s (peak at %s; first beyond normal at %s; %s)",
				name, verb, formatValue(sh.before, ms.Unit), formatValue(sh.peak, ms.Unit), share, ts(sh.peakAt), ts(sh.start), how)
			weight := math.Min(1, 0.55+math.Abs(sh.score)/40)
			k := key{kind, subject}
			f := best[k]
			if f == nil {
				f = &Finding{Kind: kind, Subject: subject, Object: ms.Origin + " " + ms.Name, Time: sh.start, Severity: SevWarning,
					Weight: weight, Source: ms.Origin, Namespace: s.Labels["namespace"]}
				f.Summary = fmt.Sprintf("%s of %s %s from %s to %s", humanMetric(ms.Name, ms.Class), orDash(subject), verb, formatValue(sh.before, ms.Unit), formatValue(sh.peak, ms.Unit))
				f.setFact("metric", ms.Name)
				f.setFact("peak", formatValue(sh.peak, ms.Unit))
				f.setFact("baseline", formatValue(sh.before, ms.Unit))
				best[k] = f
				order = append(order, k)
			}
			if sh.start.Before(f.Time) {
				f.Time = sh.start
			}
			f.Weight = math.Max(f.Weight, weight)
			if len(f.Evidence) < 2 {
				f.Evidence = append(f.Evidence, ev)
			}
			if math.Abs(sh.score) > 10 {
				f.Severity = SevCritical
			}
		}
	}
	out := make([]Finding, 0, len(order))
	for _, k := range order {
		out = append(out, *best[k])
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out
}

func humanMetric(name, class string) string {
	switch class {
	case MetricErrors, MetricRequests:
		return "error rate (" + name + ")"
	case MetricLatency:
		return "latency (" + name + ")"
	case MetricRestarts:
		return "restarts (" + name + ")"
	case MetricUp:
		return "scrape target (" + name + ")"
	}
	return name
}

// metricKind maps a class (and labels) to a finding kind and whether a
// rise is the bad direction.
func metricKind(class string, l evidence.Labels) (Kind, bool) {
	switch class {
	case MetricErrors:
		if code, ok := statusLabel(l); ok && !IsServerError(code) && !strings.HasPrefix(code, "4") {
			return "", true
		}
		if strings.Contains(strings.ToLower(l["__name__"]), "throttl") {
			return KindThrottling, true
		}
		return KindErrorRate, true
	case MetricRequests:
		if code, ok := statusLabel(l); ok && IsServerError(code) {
			return KindErrorRate, true
		}
		return "", true
	case MetricLatency:
		return KindLatency, true
	case MetricSaturation:
		return KindSaturation, true
	case MetricFree:
		return KindSaturation, false
	case MetricRestarts:
		return KindRestarts, true
	case MetricUp:
		return KindTargetDown, false
	}
	return "", true
}

// meaningful filters statistically significant but practically tiny
// shifts (a latency rising from 10 to 12 ms).
func meaningful(sh shift, class string) bool {
	before, peak := math.Abs(sh.before), math.Abs(sh.peak)
	switch class {
	case MetricErrors, MetricRequests, MetricRestarts:
		return peak > 0 && (before == 0 || peak >= 2*before)
	case MetricUp:
		return sh.peak < 0.5
	case MetricFree:
		return before > 0 && peak <= 0.7*before
	}
	if before == 0 {
		return peak > 0
	}
	return peak >= 1.5*before
}

// minErrorShare is the least share of requests that must fail for a rise
// of server errors to count.
const minErrorShare = 0.05

// requestTotals sums request rates per subject and time across status codes.
func requestTotals(ss []evidence.Series) map[string]map[time.Time]float64 {
	out := map[string]map[time.Time]float64{}
	for _, s := range ss {
		sub := SubjectOfLabels(s.Labels)
		m := out[sub]
		if m == nil {
			m = map[time.Time]float64{}
			out[sub] = m
		}
		for _, p := range s.Points {
			m[p.T] += p.V
		}
	}
	return out
}
