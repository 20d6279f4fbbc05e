package analyst

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// KindRequestOvercommit: the pods of a cluster request more memory (or
// CPU) than its nodes could hold with one node lost
// (KubeMemoryOverCommit, KubeCPUOverCommit). Nothing fails yet — the
// scheduler places pods while any node has room — but a node drained or
// lost leaves pods Pending. The alert is read as a claim: the sum of the
// requests against the allocatable of all nodes but the largest, from
// kube-state-metrics; and what pushed the requests over is the workload
// whose requests grew, often far above what its pods use.
const KindRequestOvercommit Kind = "request_overcommit"

var requestOvercommit = &mechanism{
	kind:   KindRequestOvercommit,
	class:  classCause,
	label:  "resource requests beyond what the cluster holds with a node lost",
	detect: detectRequestOvercommit,
	// The release that created or grew the workload pushed the requests
	// over; any other change is a coincidence.
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return c.Subject == h.Subject
	},
	strictTriggers: true,
	describe: func(h *Hypothesis, sc Scope) string {
		res, alert := h.fact("resource"), orWord(h.fact("alert"), "overcommit")
		if h.fact("real") == "" {
			return fmt.Sprintf("the %s alert on %s is not borne out: the pods request %s of %s, within the %s the nodes hold with their largest node lost (%s allocatable on %s nodes)",
				alert, clusterWord(h.Subject), h.fact("requested"), res, h.fact("tolerable"), h.fact("allocatable"), h.fact("nodes"))
		}
		d := fmt.Sprintf("the %s alert is real: the pods request %s of %s, %s more than the %s the nodes can hold with their largest node lost (%s allocatable on %s nodes), so losing or draining a node would leave pods Pending; nothing fails yet",
			alert, h.fact("requested"), res, h.fact("over"), h.fact("tolerable"), h.fact("allocatable"), h.fact("nodes"))
		if g := h.fact("grew"); g != "" {
			d += fmt.Sprintf(". What pushed it over: %s requests %s (%s)", h.Subject, g, h.fact("pods_request"))
			if u := h.fact("usage"); u != "" {
				d += fmt.Sprintf(" while its pods use about %s each", u)
			}
			if s := h.fact("since"); s != "" {
				d += fmt.Sprintf(", since %s", s)
			}
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		if h.fact("real") == "" {
			r.low("No action needed on the requests: they fit the cluster with a node lost")
			return
		}
		if h.fact("grew") != "" {
			if u := h.fact("usage"); u != "" {
				r.high("Lower the %s request of %s from %s to what its pods use (about %s each, with headroom), or run fewer replicas of it", h.fact("resource"), h.Subject, h.fact("per_pod"), u)
			} else {
				r.high("Lower the %s request of %s (%s per pod) or run fewer replicas of it", h.fact("resource"), h.Subject, h.fact("per_pod"))
			}
			r.med("If %s is a one-off job, run it as a Job that ends (or scale it down when done) so its requests do not stay reserved", h.Subject)
		}
		r.med("Add a node (or let the cluster autoscaler add one) until the requests fit with one node lost")
		r.low("Review the largest %s requests against their usage (requests reserve capacity whether used or not)", h.fact("resource"))
	},
}

var (
	overcommitRE      = regexp.MustCompile(`(?i)\b(?:Kube)?(Memory|CPU)OverCommit\b|\bover-?commit(?:ted|ment)?\b`)
	overcommitAlertRE = regexp.MustCompile(`\b[A-Z][A-Za-z]*OverCommit\b`)
)

// overcommitResource is the resource an overcommit claim is about
// ("memory", "cpu"), "" when the text makes no such claim.
func overcommitResource(text string) string {
	m := findSubmatch(overcommitRE, text)
	switch {
	case m == nil:
		return ""
	case strings.EqualFold(m[1], "cpu"):
		return "cpu"
	case m[1] != "":
		return "memory"
	case regexp.MustCompile(`(?i)\bcpu\b`).MatchString(text) && !strings.Contains(strings.ToLower(text), "memory"):
		return "cpu"
	}
	return "memory"
}

// resourceSeries are the series of a kube-state-metrics resource gauge
// (requests, allocatable) for one resource: kube-state-metrics v2 names
// with a resource label ("kube_pod_container_resource_requests",
// resource="memory"), and v1 names with the resource in the name
// ("kube_pod_container_resource_requests_memory_bytes").
func resourceSeries(sets []MetricSet, base, resource string) []evidence.Series {
	var out []evidence.Series
	for _, set := range sets {
		n := set.Name
		switch {
		case n == base:
			for _, s := range set.Series {
				if s.Labels["resource"] == resource {
					out = append(out, s)
				}
			}
		case strings.HasPrefix(n, base+"_"+resource):
			out = append(out, set.Series...)
		}
	}
	return out
}

// sumAt sums, at each instant, the series that have a point then.
func sumAt(ss []evidence.Series) map[time.Time]float64 {
	out := map[time.Time]float64{}
	for _, s := range ss {
		for _, p := range s.Points {
			out[p.T] += p.V
		}
	}
	return out
}

// maxAt is, at each instant, the largest value of the series then.
func maxAt(ss []evidence.Series) map[time.Time]float64 {
	out := map[time.Time]float64{}
	for _, s := range ss {
		for _, p := range s.Points {
			out[p.T] = max(out[p.T], p.V)
		}
	}
	return out
}

// detectRequestOvercommit checks an overcommit alert's claim from the
// requests and the nodes' allocatable, and names the workload whose
// requests grew as the cluster went over.
func detectRequestOvercommit(ev *Gathered, _ []Finding) []Finding {
	sc := ev.Scope
	text := sc.Message + " " + sc.Hint + " " + sc.Alert
	res := overcommitResource(text)
	if res == "" {
		return nil
	}
	reqs := resourceSeries(ev.Metrics, "kube_pod_container_resource_requests", res)
	alloc := resourceSeries(ev.Metrics, "kube_node_status_allocatable", res)
	if len(reqs) == 0 || len(alloc) == 0 {
		return nil
	}
	reqSum, allocSum, allocMax := sumAt(reqs), sumAt(alloc), maxAt(alloc)
	var times []time.Time
	for t := range allocSum {
		if _, ok := reqSum[t]; ok {
			times = append(times, t)
		}
	}
	if len(times) == 0 {
		return nil
	}
	sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
	now := times[len(times)-1]
	tolerable := func(t time.Time) float64 { return allocSum[t] - allocMax[t] }
	// Onset: the first instant of the last run over the bar.
	var onset time.Time
	for _, t := range times {
		if reqSum[t] > tolerable(t) {
			if onset.IsZero() {
				onset = t
			}
		} else {
			onset = time.Time{}
		}
	}
	show := func(v float64) string { return resourceAmount(res, v) }
	alert := orWord(findString(overcommitAlertRE, text), "overcommit")
	nodes := 0
	for _, s := range alloc {
		if len(s.Points) > 0 && s.Points[len(s.Points)-1].T.Equal(now) {
			nodes++
		}
	}
	f := Finding{Kind: KindRequestOvercommit, Object: "alert " + alert, Severity: SevWarning, Weight: 0.6, Source: SrcMetrics, Time: orTime(onset, ev.Window.Start)}
	f.setFact("alert", alert)
	f.setFact("resource", res)
	f.setFact("requested", show(reqSum[now]))
	f.setFact("tolerable", show(tolerable(now)))
	f.setFact("allocatable", show(allocSum[now]))
	f.setFact("nodes", strconv.Itoa(nodes))
	f.Evidence = []string{fmt.Sprintf("kube_pod_container_resource_requests: the pods request %s of %s in all; kube_node_status_allocatable: %s on %d nodes, %s without the largest node",
		show(reqSum[now]), res, show(allocSum[now]), nodes, show(tolerable(now)))}
	if reqSum[now] <= tolerable(now) {
		f.Subject = "cluster"
		f.Summary = fmt.Sprintf("the pods' %s requests (%s) fit the cluster with a node lost (%s)", res, show(reqSum[now]), show(tolerable(now)))
		return []Finding{f}
	}
	f.setFact("real", "true")
	f.setFact("over", show(reqSum[now]-tolerable(now)))
	f.Weight = 0.85
	// What grew: the requests of each workload now against just before
	// the onset.
	before := times[0]
	for _, t := range times {
		if !t.Before(onset) {
			break
		}
		before = t
	}
	type wl struct {
		name, ns           string
		now, before, count float64
		perPod             float64
		first              time.Time
	}
	byWL := map[string]*wl{}
	for _, s := range reqs {
		pod := s.Labels["pod"]
		if pod == "" || len(s.Points) == 0 {
			continue
		}
		name := workloadOfName(pod)
		key := s.Labels["namespace"] + "/" + name
		w := byWL[key]
		if w == nil {
			w = &wl{name: name, ns: s.Labels["namespace"]}
			byWL[key] = w
		}
		for _, p := range s.Points {
			if p.T.Equal(now) {
				w.now += p.V
				w.count++
				w.perPod = max(w.perPod, p.V)
			}
			if p.T.Equal(before) {
				w.before += p.V
			}
		}
		if w.first.IsZero() || s.Points[0].T.Before(w.first) {
			w.first = s.Points[0].T
		}
	}
	var top *wl
	for _, w := range byWL {
		if g := w.now - w.before; g > 0 && (top == nil || g > top.now-top.before || g == top.now-top.before && w.name < top.name) {
			top = w
		}
	}
	f.Subject = "cluster"
	if top != nil && onset.After(times[0]) {
		f.Subject, f.Namespace = top.name, top.ns
		f.Related = []string{top.name}
		if top.before > 0 {
			f.setFact("grew", fmt.Sprintf("%s more than before (%s → %s)", show(top.now-top.before), show(top.before), show(top.now)))
		} else {
			f.setFact("grew", show(top.now))
		}
		f.setFact("per_pod", show(top.perPod))
		f.setFact("pods_request", fmt.Sprintf("%.0f pods × %s", top.count, show(top.perPod)))
		if top.first.After(times[0]) {
			f.setFact("since", ts(top.first))
		}
		f.Evidence = append(f.Evidence, fmt.Sprintf("the requests of %s/%s grew from %s to %s (%.0f pods requesting %s each) as the total went over at %s",
			top.ns, top.name, orWord(strings.TrimPrefix(show(top.before), "0Mi"), "nothing"), show(top.now), top.count, show(top.perPod), ts(onset)))
		if u := workloadUsage(ev.Metrics, res, top.ns, top.name, now); u > 0 {
			f.setFact("usage", show(u))
			f.setFact("why", fmt.Sprintf("%s's pods request %s each and use about %s", top.name, show(top.perPod), show(u)))
			f.Evidence = append(f.Evidence, fmt.Sprintf("its pods use about %s each (%s), %.0f%% of what they request", show(u), usageMetricName(res), 100*u/top.perPod))
		}
	}
	f.Summary = fmt.Sprintf("the pods request %s of %s, %s over what the cluster holds with a node lost", show(reqSum[now]), res, f.fact("over"))
	return []Finding{f}
}

// clusterWord names the subject of a cluster-wide finding ("the
// cluster").
func clusterWord(s string) string {
	if s == "cluster" || s == "" {
		return "the cluster"
	}
	return s
}

// usageMetricName is the cAdvisor series of a resource's use.
func usageMetricName(res string) string {
	if res == "cpu" {
		return "container_cpu_usage_seconds_total"
	}
	return "container_memory_working_set_bytes"
}

// workloadUsage is the mean, over its pods, of what a workload's pods use
// of a resource at their last point (0 when not measured).
func workloadUsage(sets []MetricSet, res, ns, name string, now time.Time) float64 {
	want := usageMetricName(res)
	perPod := map[string]float64{}
	for _, set := range sets {
		if set.Name != want {
			continue
		}
		for _, s := range set.Series {
			pod := s.Labels["pod"]
			if pod == "" || len(s.Points) == 0 || s.Labels["namespace"] != "" && s.Labels["namespace"] != ns || workloadOfName(pod) != name {
				continue
			}
			if c := s.Labels["container"]; c == "POD" {
				continue
			}
			perPod[pod] += s.Points[len(s.Points)-1].V
		}
	}
	if len(perPod) == 0 {
		return 0
	}
	sum := 0.0
	for _, v := range perPod {
		sum += v
	}
	return sum / float64(len(perPod))
}

// resourceAmount shows an amount of a resource as Kubernetes writes it:
// memory in Gi (Mi below 1Gi), CPU in cores (m below one).
func resourceAmount(res string, v float64) string {
	if res == "cpu" {
		if v < 1 {
			return fmt.Sprintf("%.0fm", v*1000)
		}
		return strings.TrimSuffix(fmt.Sprintf("%.1f", v), ".0") + " cores"
	}
	if v < 1<<30 {
		return fmt.Sprintf("%.0fMi", v/(1<<20))
	}
	return strings.TrimSuffix(fmt.Sprintf("%.1f", v/(1<<30)), ".0") + "Gi"
}
