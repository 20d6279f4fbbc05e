package analyst

import (
	"fmt"
	"iter"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// Metric classes.
const (
	MetricErrors      = "errors"
	MetricLatency     = "latency"
	MetricSaturation  = "saturation"
	MetricFree        = "free" // free/available capacity: falling is bad
	MetricRestarts    = "restarts"
	MetricUp          = "up"
	MetricRequests    = "requests"     // request counters split by status code
	MetricCPUThrottle = "cpu_throttle" // CFS quota throttling (periods or seconds throttled)
	MetricHPA         = "hpa"          // autoscaler replicas, limits and conditions (kube-state-metrics)
	MetricCertExpiry  = "cert_expiry"  // certificate expiry timestamps or seconds left
	// MetricState is a kube-state-metrics status gauge (a Job active, a
	// pod phase, a deployment's replica counts): a state, not an anomaly.
	MetricState = "state"
	// MetricCache is a cache server's memory, eviction and hit/miss
	// counters (redis_exporter, memcached_exporter, ElastiCache's
	// CloudWatch metrics).
	MetricCache = "cache"
)

// IsCacheMetric reports whether a metric describes a cache's memory use
// against its maxmemory, its evictions, or its hits and misses.
func IsCacheMetric(name string) bool {
	n := strings.ToLower(name)
	// ElastiCache and MemoryDB publish theirs to CloudWatch per node:
	// Evictions, CacheHits, CacheMisses, CacheHitRate,
	// DatabaseMemoryUsagePercentage (used memory against maxmemory).
	for _, ns := range []string{"aws/elasticache/", "aws/memorydb/"} {
		if m, ok := strings.CutPrefix(n, ns); ok {
			switch m {
			case "evictions", "cachehits", "cachemisses", "cachehitrate", "databasememoryusagepercentage", "bytesusedforcache", "curritems", "reclaimed":
				return true
			}
			return false
		}
	}
	if !strings.HasPrefix(n, "redis_") && !strings.HasPrefix(n, "memcached_") {
		return false
	}
	for _, w := range []string{"memory_used_bytes", "memory_max_bytes", "evicted_keys", "keyspace_hits", "keyspace_misses",
		"evictions", "items_evicted", "expired_keys", "items_reclaimed", "limit_maxbytes", "limit_bytes", "commands_total", "current_bytes", "get_hits", "get_misses", "commands_get_hits", "commands_get_misses", "db_keys", "current_items"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// IsStateMetric reports whether a metric is a kube-state-metrics status
// gauge: Job and CronJob activity, pod phases, workload replica counts,
// info and creation gauges. A Job becoming active is normal; these
// describe states, and are never anomalies of their own.
func IsStateMetric(name string) bool {
	n := strings.ToLower(name)
	if !strings.HasPrefix(n, "kube_") || strings.Contains(n, "restarts") || isHPAMetric(n) {
		return false
	}
	// A container's requests and a node's allocatable are what the
	// cluster reserves and holds (requestovercommit.go), never
	// a shift of their own.
	for _, p := range []string{"kube_pod_container_resource_requests", "kube_node_status_allocatable"} {
		if strings.HasPrefix(n, p) {
			return true
		}
	}
	for _, p := range []string{"kube_job_", "kube_cronjob_", "kube_pod_status_phase", "kube_deployment_status_", "kube_statefulset_status_", "kube_daemonset_status_", "kube_replicaset_status_", "kube_persistentvolumeclaim_status_phase", "kube_namespace_status_"} {
		if strings.HasPrefix(n, p) {
			return true
		}
	}
	return strings.HasSuffix(n, "_info") || strings.HasSuffix(n, "_created") || strings.Contains(n, "_metadata_")
}

// MetricSet is the series of one metric, transformed for analysis (rates
// for counters), with its class.
type MetricSet struct {
	Name   string // metric name as queried
	Class  string
	Unit   string // "s", "bytes", "/s", "%", ""
	Origin string // SrcMetrics or SrcCloudWatch
	Series []evidence.Series
	// Requests are the request rates behind a mean latency (its _count's
	// rate, per series): the traffic an errors-per-second series is a
	// share of (errorshare.go).
	Requests []evidence.Series
}

// metricSeries yields every series of sets with its metric's name: the
// series' own __name__, else the name its set was queried by.
func metricSeries(sets []MetricSet) iter.Seq2[string, evidence.Series] {
	return func(yield func(string, evidence.Series) bool) {
		for _, set := range sets {
			for _, s := range set.Series {
				if !yield(orWord(s.Labels["__name__"], set.Name), s) {
					return
				}
			}
		}
	}
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
	if isHPAMetric(n) {
		return MetricHPA, ""
	}
	if isCertExpiryMetric(n) {
		return MetricCertExpiry, ""
	}
	if IsStateMetric(n) {
		return MetricState, ""
	}
	// A node's connection-tracking entries and their limit are read
	// against each other (conntrackfull.go), never as a shift of their own.
	if has("nf_conntrack_entries") {
		return MetricState, ""
	}
	// A connection pool's maximum is read against its connections in use
	// (poolheld.go), never as a shift of its own.
	if matchLine(poolMaxMetricRE, n) {
		return MetricState, ""
	}
	// So is a request thread pool's maximum against its busy threads
	// (threadsheld.go).
	if matchLine(threadMaxMetricRE, n) {
		return MetricState, ""
	}
	// A node's PIDs and their limit, and its processes by state
	// (zombies), are read against each other (pidexhaustion.go).
	if has("node_processes_") {
		return MetricState, ""
	}
	// An edge cache's hit ratio, or the hit counter it is read from
	// (cachebypassed.go).
	if IsEdgeHitMetric(n) {
		return MetricHitRatio, "%"
	}
	if IsCacheMetric(n) {
		return MetricCache, unit
	}
	// CFS throttling is a CPU-limit cause, not an error rate; the total
	// periods are its denominator.
	if has("cfs_throttled", "cpu_throttled", "throttled_periods", "throttled_seconds", "throttled_time") {
		return MetricCPUThrottle, ""
	}
	if has("cfs_periods") {
		return "", ""
	}
	switch {
	case has("restarts"):
		return MetricRestarts, ""
	case n == "up":
		return MetricUp, ""
	case has("error", "errors", "failed", "failure", "exception", "5xx", "fault", "dropped", "rejected", "timeouts", "throttle", "oomkill", "deadlock"):
		if strings.HasSuffix(n, "_seconds") || has("bucket") {
			return "", unit
		}
		return MetricErrors, "/s"
	case has("latency", "duration", "response_time", "responsetime", "_seconds_sum", "_seconds_count") && !has("cpu"):
		return MetricLatency, "s"
	case has("requests_total", "_handled_total", "http_requests", "requests_count", "grpc_server_handled", "_rq_total") || strings.HasSuffix(n, "_requests") && !has("flight", "active", "current", "pending", "concurrent", "queued"):
		// (ingress-nginx's nginx_ingress_controller_requests and Envoy's
		// upstream_rq_total count requests too.)
		return MetricRequests, "/s"
	case has("avail", "free", "remaining", "headroom"):
		return MetricFree, unit
	case has("pg_stat_activity", "threads_connected"):
		return MetricSaturation, ""
	// What a database's replication slots retain of its WAL.
	case has("replication_slot", "wal_size", "wal_retained"):
		return MetricSaturation, "bytes"
	// A replica's replication threads running (1) or stopped (0):
	// replicastopped.go reads their fall.
	case has("slave_sql_running", "replica_sql_running", "slave_io_running", "replica_io_running"):
		return MetricSaturation, ""
	// Sessions waiting for locks, a replica's delay: a database blocking.
	case has("lock_waits", "lock_current_waits", "row_lock_time", "locks_waiting", "seconds_behind_", "replication_lag", "replica_lag", "replay_lag"):
		return MetricSaturation, unit
	// A DNS probe's lookup time: a resolver that waits for its timeout.
	case has("dns_lookup_time"):
		return MetricLatency, "s"
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

// meshSidecars are the container names of the proxies a mesh (or a
// database's connector) injects into pods of any workload: the workload's
// traffic passes through them.
var meshSidecars = []string{"istio-proxy", "linkerd-proxy", "envoy", "envoy-sidecar", "consul-dataplane", "consul-connect-envoy", "kuma-sidecar", "cloud-sql-proxy"}

// sidecarOfLabels is the mesh sidecar a series of a pod is about, if any.
func sidecarOfLabels(l evidence.Labels) string {
	if c := l["container"]; l["pod"] != "" && slices.Contains(meshSidecars, c) {
		return c
	}
	return ""
}

// SubjectOfLabels names the service or workload a series is about.
func SubjectOfLabels(l evidence.Labels) string {
	for _, k := range []string{"service", "service_name", "app", "application", "app_kubernetes_io_name", "deployment", "workload", "statefulset", "daemonset",
		"horizontalpodautoscaler", "consumergroup", "consumer_group", "queue",
		"FunctionName", "DBInstanceIdentifier", "DBClusterIdentifier", "LoadBalancer", "TargetGroup", "QueueName", "TableName", "CacheClusterId",
		"VolumeId", "InstanceId", "AutoScalingGroupName", "ClusterName", "ServiceName", "ApiName", "BucketName", "StreamName", "destination_service_name", "cronjob", "job"} {
		if v := l[k]; v != "" {
			return v
		}
	}
	if c := l["container"]; c != "" && c != "POD" {
		// A mesh or helper sidecar has the same name in every pod it is
		// injected into: the series is about the pod's workload.
		return c
	}
	if j := l["job_name"]; j != "" {
		return workloadOfName(j)
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
	if a := math.Abs(v); a >= 1e4 && a < 1e12 {
		return fmt.Sprintf("%.0f", v)
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
	unit           string
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
		var totals reqTotals
		series := ms.Series
		if ms.Class == MetricRequests {
			// Server errors are judged per service over all its series
			// (versions, pods, handlers): a new version's series has no
			// baseline of its own, and the share is of all its requests.
			totals = requestTotals(ms.Series)
			series = serverErrorSeries(ms.Series)
		}
		if ms.Class == MetricUp {
			series = targetsUpByService(ms.Series)
		}
		for _, s := range series {
			kind, badUp := metricKind(ms.Class, s.Labels)
			if kind == "" {
				continue
			}
			sh, ok := seriesShift(s, w)
			if !ok || sh.up != badUp {
				continue
			}
			sh.unit = ms.Unit
			if !meaningful(sh, ms.Class) {
				continue
			}
			// An error series' rise must matter against its own history
			// (errorshare.go).
			if kind == KindErrorRate && ms.Class == MetricErrors && !errorRiseMatters(ms.Name, s, sh, w) {
				continue
			}
			subject := SubjectOfLabels(s.Labels)
			if ms.Class == MetricCPUThrottle && sidecarOfLabels(s.Labels) != "" {
				// A mesh sidecar has the same name in every pod it is
				// injected into: its throttling is its workload's.
				subject = workloadOfName(s.Labels["pod"])
			}
			if kind == KindErrorRate && ms.Class == MetricErrors && ms.Unit == "/s" && errorShareNegligible(ms.Series, sets, subject, sh.peakAt) {
				continue
			}
			share := ""
			if totals != nil {
				// Server errors matter as a share of the traffic: a few
				// stray 5xx on a busy service are noise.
				tot := totals.at(SubjectOfLabels(s.Labels), sh.peakAt)
				if tot <= 0 || sh.peak/tot < minErrorShare {
					continue
				}
				// The share must also step up from the baseline's share:
				// a steady trickle of errors is not an incident.
				if base := totals.at(SubjectOfLabels(s.Labels), w.BaselineStart.Add(w.Start.Sub(w.BaselineStart)/2)); base > 0 && sh.before/base >= minErrorShare && sh.peak/tot < 5*sh.before/base {
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
			// A client series measures the server it calls: the caller's
			// view of its callee.
			if callee := calleeOfLabels(s.Labels); callee != "" && !strings.EqualFold(callee, subject) {
				f.setFact("callee", callee)
				if !slices.Contains(f.Related, callee) {
					f.Related = append(f.Related, callee)
				}
			} else {
				f.setFact("own", "true")
			}
			// The containers whose series shifted, when one is a mesh
			// sidecar named for the workload (its proxy throttled, not
			// the application).
			if c := s.Labels["container"]; c != "" && c != "POD" {
				if !slices.Contains(strings.Split(f.fact("shifted_containers"), ","), c) {
					f.setFact("shifted_containers", strings.Trim(f.fact("shifted_containers")+","+c, ","))
				}
				if sidecarOfLabels(s.Labels) != "" {
					f.setFact("sidecar_shifted", c)
				}
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
	out = append(out, DetectMemoryGrowth(sets, w)...)
	for _, m := range mechanisms {
		if m.metrics != nil {
			out = append(out, m.metrics(sets, w)...)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out
}

// Growth is a steady upward trend of a series: linear segments between
// resets (a restarted container starts low again).
type Growth struct {
	PerSecond float64 // mean slope of the segments, units per second
	R2        float64 // mean fit of the segments
	Segments  int
	Start     time.Time
	Peak      float64
	PeakAt    time.Time
}

// SteadyGrowth fits lines to the segments of a series between resets (a
// drop of more than 30%) and reports a steady rise: every long segment
// rising with a good linear fit (R² ≥ 0.9), covering most of the points.
func SteadyGrowth(pts []evidence.Point) (Growth, bool) {
	var g Growth
	if len(pts) < 10 {
		return g, false
	}
	var segs [][]evidence.Point
	cur := []evidence.Point{pts[0]}
	for i := 1; i < len(pts); i++ {
		if pts[i-1].V > 0 && pts[i].V < 0.7*pts[i-1].V {
			segs = append(segs, cur)
			cur = nil
		}
		cur = append(cur, pts[i])
	}
	segs = append(segs, cur)
	covered, n := 0, 0
	var slopes, r2s float64
	for _, sg := range segs {
		if len(sg) < 8 {
			continue
		}
		slope, r2 := linearFit(sg)
		if slope <= 0 || r2 < 0.9 {
			return g, false
		}
		// The rise must be substantial over the segment (≥ 20%).
		if first := sg[0].V; first > 0 && sg[len(sg)-1].V < 1.2*first {
			return g, false
		}
		n++
		covered += len(sg)
		slopes += slope
		r2s += r2
		if g.Start.IsZero() {
			g.Start = sg[0].T
		}
	}
	if n == 0 || covered*10 < len(pts)*6 {
		return g, false
	}
	for _, p := range pts {
		if p.V > g.Peak {
			g.Peak, g.PeakAt = p.V, p.T
		}
	}
	g.PerSecond, g.R2, g.Segments = slopes/float64(n), r2s/float64(n), n
	return g, true
}

// linearFit returns the least-squares slope (per second) and R².
func linearFit(pts []evidence.Point) (slope, r2 float64) {
	t0 := pts[0].T
	var sx, sy, sxx, sxy, syy float64
	n := float64(len(pts))
	for _, p := range pts {
		x := p.T.Sub(t0).Seconds()
		sx += x
		sy += p.V
		sxx += x * x
		sxy += x * p.V
		syy += p.V * p.V
	}
	den := n*sxx - sx*sx
	if den == 0 {
		return 0, 0
	}
	slope = (n*sxy - sx*sy) / den
	vy := n*syy - sy*sy
	if vy <= 0 {
		return slope, 0
	}
	r := (n*sxy - sx*sy) / math.Sqrt(den*vy)
	return slope, r * r
}

// DetectMemoryGrowth finds memory series (working set, RSS, heap) that
// grow steadily, the signature of a leak: one finding per workload with
// the growth rate in MiB/min.
func DetectMemoryGrowth(sets []MetricSet, w Window) []Finding {
	var out []Finding
	seen := map[string]int{}
	for _, ms := range sets {
		n := strings.ToLower(ms.Name)
		if ms.Class != MetricSaturation || ms.Unit != "bytes" || !(strings.Contains(n, "memory") || strings.Contains(n, "heap") || strings.Contains(n, "rss")) {
			continue
		}
		for _, s := range ms.Series {
			var pts []evidence.Point
			for _, p := range s.Points {
				if (w.BaselineStart.IsZero() || !p.T.Before(w.BaselineStart)) && (w.End.IsZero() || !p.T.After(w.End)) {
					pts = append(pts, p)
				}
			}
			g, ok := SteadyGrowth(pts)
			if !ok {
				continue
			}
			perMin := g.PerSecond * 60
			if perMin < 1<<20/4 { // under 0.25 MiB/min is noise
				continue
			}
			subject := SubjectOfLabels(s.Labels)
			rate := fmt.Sprintf("%.1f MiB/min", perMin/(1<<20))
			ev := fmt.Sprintf("%s grows steadily by ~%s (linear fit R² %.2f over %s, peak %s at %s)",
				labelString(s.Labels), rate, g.R2, plural(g.Segments, "run", "runs between restarts"), formatValue(g.Peak, "bytes"), ts(g.PeakAt))
			if i, ok := seen[subject]; ok {
				if len(out[i].Evidence) < 2 {
					out[i].Evidence = append(out[i].Evidence, ev)
				}
				continue
			}
			f := Finding{Kind: KindSaturation, Subject: subject, Object: ms.Origin + " " + ms.Name, Namespace: s.Labels["namespace"], Time: g.Start,
				Severity: SevWarning, Weight: 0.8, Source: ms.Origin, Evidence: []string{ev}}
			f.Summary = fmt.Sprintf("memory of %s grows steadily by ~%s (a leak)", orDash(subject), rate)
			f.setFact("metric", ms.Name)
			f.setFact("leak_rate", rate)
			f.setFact("peak", formatValue(g.Peak, "bytes"))
			seen[subject] = len(out)
			out = append(out, f)
		}
	}
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
	case MetricCPUThrottle:
		return "CPU throttling (" + name + ")"
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
	case MetricCPUThrottle:
		return KindCPUThrottling, true
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
	case MetricCPUThrottle:
		// A ratio of throttled periods must reach 10%; seconds
		// throttled per second must at least double.
		if peak <= 1 && strings.Contains(sh.unit, "%") {
			return peak >= 0.1 && peak >= 1.5*before
		}
		return peak > 0 && (before == 0 || peak >= 2*before)
	case MetricFree:
		return before > 0 && peak <= 0.7*before
	}
	if before == 0 {
		return peak > 0
	}
	return peak >= 1.5*before
}

// copyLabels is a copy of l (empty, never nil, for none).
func copyLabels(l evidence.Labels) evidence.Labels {
	c := evidence.Labels{}
	for k, v := range l {
		c[k] = v
	}
	return c
}

// keepSharedLabels removes from into the labels that other does not
// share with the same value: what the series summed into one have in
// common.
func keepSharedLabels(into, other evidence.Labels) {
	for k, v := range into {
		if other[k] != v {
			delete(into, k)
		}
	}
}

// minErrorShare is the least share of requests that must fail for a rise
// of server errors to count.
const minErrorShare = 0.05

// serverErrorSeries sums the 5xx series of each subject into one series
// (labels common to its parts, code "5xx" when several codes are summed).
func serverErrorSeries(ss []evidence.Series) []evidence.Series {
	type agg struct {
		labels evidence.Labels
		sum    map[time.Time]float64
		codes  map[string]bool
	}
	bySub := map[string]*agg{}
	var order []string
	for _, s := range ss {
		code, ok := statusLabel(s.Labels)
		if !ok || !IsServerError(code) {
			continue
		}
		sub := SubjectOfLabels(s.Labels)
		a := bySub[sub]
		if a == nil {
			a = &agg{labels: copyLabels(s.Labels), sum: map[time.Time]float64{}, codes: map[string]bool{}}
			bySub[sub] = a
			order = append(order, sub)
		} else {
			keepSharedLabels(a.labels, s.Labels)
		}
		a.codes[code] = true
		for _, p := range s.Points {
			a.sum[p.T] += p.V
		}
	}
	var out []evidence.Series
	for _, sub := range order {
		a := bySub[sub]
		if _, ok := statusLabel(a.labels); !ok {
			a.labels["code"] = "5xx"
		}
		if sub != "" && SubjectOfLabels(a.labels) != sub {
			a.labels["service"] = sub
		}
		s := evidence.Series{Labels: a.labels}
		for t, v := range a.sum {
			s.Points = append(s.Points, evidence.Point{T: t, V: v})
		}
		sort.Slice(s.Points, func(i, j int) bool { return s.Points[i].T.Before(s.Points[j].T) })
		out = append(out, s)
	}
	return out
}

// reqTotals holds the request series of each subject, across status codes.
type reqTotals map[string][]evidence.Series

// requestTotals groups request-rate series by subject.
func requestTotals(ss []evidence.Series) reqTotals {
	out := reqTotals{}
	for _, s := range ss {
		sub := SubjectOfLabels(s.Labels)
		out[sub] = append(out[sub], s)
	}
	return out
}

// at is the subject's total request rate at t: every series' value at its
// sample nearest to t (series scraped at different offsets do not share
// timestamps), within two sample spacings.
func (r reqTotals) at(subject string, t time.Time) float64 {
	total := 0.0
	for _, s := range r[subject] {
		if v, ok := valueNear(s.Points, t); ok {
			total += v
		}
	}
	return total
}

// valueNear returns the value of the sample nearest to t, if one lies
// within two sample spacings of it.
func valueNear(ps []evidence.Point, t time.Time) (float64, bool) {
	if len(ps) == 0 {
		return 0, false
	}
	i := sort.Search(len(ps), func(i int) bool { return !ps[i].T.Before(t) })
	best := -1
	var bd time.Duration
	for _, j := range []int{i - 1, i} {
		if j < 0 || j >= len(ps) {
			continue
		}
		d := ps[j].T.Sub(t)
		if d < 0 {
			d = -d
		}
		if best < 0 || d < bd {
			best, bd = j, d
		}
	}
	tol := time.Minute
	if len(ps) > 1 {
		tol = max(tol, 2*ps[len(ps)-1].T.Sub(ps[0].T)/time.Duration(len(ps)-1))
	}
	if bd > tol {
		return 0, false
	}
	return ps[best].V, true
}

func lastPoint(ps []evidence.Point) (evidence.Point, bool) {
	if len(ps) == 0 {
		return evidence.Point{}, false
	}
	return ps[len(ps)-1], true
}

func inWindow(ps []evidence.Point, from, to time.Time) []evidence.Point {
	var out []evidence.Point
	for _, p := range ps {
		if (from.IsZero() || !p.T.Before(from)) && (to.IsZero() || !p.T.After(to)) {
			out = append(out, p)
		}
	}
	return out
}

func firstLabel(l evidence.Labels, keys ...string) string {
	for _, k := range keys {
		if v := l[k]; v != "" {
			return v
		}
	}
	return ""
}

func humanDuration(d time.Duration) string {
	switch {
	case d >= 48*time.Hour:
		return fmt.Sprintf("%.0f days", math.Floor(d.Hours()/24))
	case d >= 24*time.Hour:
		return fmt.Sprintf("1 day %.0f h", d.Hours()-24)
	case d >= time.Hour:
		return fmt.Sprintf("%.0f h", d.Hours())
	}
	return fmt.Sprintf("%.0f min", d.Minutes())
}
