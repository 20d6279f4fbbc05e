package analyst

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// KindNoisyNeighbour is a workload that took a node's CPU from the pods
// sharing it: the node saturated when its usage began.
const KindNoisyNeighbour Kind = "noisy_neighbour"

// Noisy neighbour: a node's CPU saturates, and of the containers on it the
// one whose CPU use rose by far the most at that moment (a batch job that
// started, a CronJob moved to this hour, a pod with no CPU limit) took it.
// The other pods on the node, not throttled by their own limits, wait for
// CPU: their latency rises while their load does not. The cause is the
// neighbour, found from the node's series and cAdvisor's per-container CPU
// with its node label, or, when the neighbour's containers have no series,
// from the pods' CPU readings on that node (kubectl top pod, with the node
// of each pod from a wide pod listing); a change to it (its schedule, its
// workers, its CPU limit) is its trigger.
var noisyNeighbour = &mechanism{
	kind:       KindNoisyNeighbour,
	class:      classCause,
	label:      "noisy neighbour (a workload saturating a shared node's CPU)",
	detect:     detectNoisyNeighbour,
	fitsChange: changeSays(neighbourChangeRE),
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("%s saturates the CPU of node %s (noisy neighbour): its containers' CPU use rose from %s to %s cores when the node's CPU went from %s to %s",
			h.Subject, orWord(h.fact("node"), "its node"), orDash(h.fact("cpu_before")), orDash(h.fact("cpu_after")), orDash(h.fact("node_before")), orDash(h.fact("node_peak")))
		if h.fact("cpu_before") == "" {
			d = fmt.Sprintf("%s saturates the CPU of node %s (noisy neighbour): the node's CPU went from %s to %s, and its pods there use %s cores (kubectl top pod), %s of the pods' use on the node",
				h.Subject, orWord(h.fact("node"), "its node"), orDash(h.fact("node_before")), orDash(h.fact("node_peak")), orDash(h.fact("cpu_after")), orDash(h.fact("cpu_share")))
		}
		if v := h.fact("victims"); v != "" {
			d += fmt.Sprintf("; the pods sharing the node (%s) wait for CPU, so their requests slow down", v)
		}
		if h.fact("batch") != "" {
			d += "; it is a batch job (CronJob run)"
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		if c := h.Trigger; c != nil {
			r.high("Undo the change to %s (%s) or stop its current run", h.Subject, truncate(orWord(c.fact("description"), c.Summary), 160))
		}
		r.high("Give %s a CPU limit (and a request matching its use), or move it off the nodes serving %s (node affinity, a dedicated node pool, taints)", h.Subject, orWord(h.fact("victims"), "latency-sensitive services"))
		r.med("Schedule batch work at a time and parallelism the shared nodes can absorb; set CPU requests for latency-sensitive services so they keep their share")
		r.low("Alert on node CPU saturation together with the top container by CPU on that node")
	},
}

var neighbourChangeRE = regexp.MustCompile(`(?i)schedule|cron|workers?\b|concurrency|parallelism|threads|cpu|batch`)

// isNodeCPUSet reports whether a metric set is a node's CPU use.
func isNodeCPUSet(ms MetricSet) bool {
	n := strings.ToLower(ms.Name)
	return ms.Class == MetricSaturation && strings.Contains(n, "cpu") && strings.Contains(n, "node") && !strings.Contains(n, "container")
}

// nodeOfLabels names the node a series is about: its node label, or the
// host of its instance.
func nodeOfLabels(l evidence.Labels) string {
	if n := l["node"]; n != "" {
		return n
	}
	if i := l["instance"]; i != "" {
		return DependencyName(i)
	}
	return ""
}

// sameNode compares node names given in full or short form
// ("ip-10-40-3-112" and "ip-10-40-3-112.eu-west-1.compute.internal").
func sameNode(a, b string) bool {
	short := func(s string) string {
		if i := strings.IndexByte(s, '.'); i > 0 && net4(s) == "" {
			return s[:i]
		}
		return s
	}
	return a != "" && strings.EqualFold(short(a), short(b))
}

var ipv4RE = regexp.MustCompile(`^\d+\.\d+\.\d+\.\d+$`)

func net4(s string) string { return findString(ipv4RE, s) }

func detectNoisyNeighbour(ev *Gathered, _ []Finding) []Finding {
	w := ev.Window
	type hot struct {
		node                string
		psi                 bool // a pressure (PSI) series, not the CPU's use
		onset               time.Time
		before, peak, scale float64
	}
	var hots []hot
	for _, ms := range ev.Metrics {
		if !isNodeCPUSet(ms) {
			continue
		}
		for _, s := range ms.Series {
			node := nodeOfLabels(s.Labels)
			if node == "" {
				continue
			}
			var base []float64
			peak := 0.0
			for _, p := range s.Points {
				if p.T.Before(w.Start) {
					base = append(base, p.V)
				} else {
					peak = max(peak, p.V)
				}
			}
			if len(base) == 0 {
				continue
			}
			if m := s.Labels["mode"]; m == "idle" || m == "iowait" || m == "steal" {
				continue // not use of the node's CPU
			}
			scale := 1.0
			if c := nodeCPUCores(ev, node); peak > 1.5 && c > 0 && peak <= 1.25*c {
				scale = c // cores of a node of c cores
			} else if peak > 1.5 {
				scale = 100 // a percentage
			}
			before := analysis.Median(base)
			if peak < 0.85*scale || before > 0.6*peak {
				continue
			}
			h := hot{node: node, before: before, peak: peak, scale: scale, psi: strings.Contains(strings.ToLower(ms.Name), "pressure")}
			for _, p := range s.Points {
				if !p.T.Before(w.Start) && p.V >= before+(peak-before)/2 {
					h.onset = p.T
					break
				}
			}
			// One reading per node: its CPU's use rather than the time
			// its tasks waited for it (PSI), when both saturated.
			i := slices.IndexFunc(hots, func(o hot) bool { return sameNode(o.node, node) })
			switch {
			case i < 0:
				hots = append(hots, h)
			case hots[i].psi && !h.psi:
				hots[i] = h
			}
		}
	}
	if len(hots) == 0 {
		return nil
	}
	var out []Finding
	for _, h := range hots {
		type use struct {
			pod, ns       string
			before, after float64
			first         time.Time
		}
		var uses []use
		var pods []string
		for _, ms := range ev.Metrics {
			if !strings.Contains(strings.ToLower(ms.Name), "container_cpu_usage") {
				continue
			}
			for _, s := range ms.Series {
				pod := s.Labels["pod"]
				if pod == "" || !sameNode(s.Labels["node"], h.node) {
					continue
				}
				u := use{pod: pod, ns: s.Labels["namespace"]}
				var b, a []float64
				for _, p := range s.Points {
					if u.first.IsZero() || p.T.Before(u.first) {
						u.first = p.T
					}
					switch {
					case p.T.Before(h.onset.Add(-5 * time.Minute)):
						b = append(b, p.V)
					case !p.T.Before(h.onset):
						a = append(a, p.V)
					}
				}
				if len(a) == 0 {
					continue
				}
				if len(b) > 0 {
					u.before = analysis.Median(b)
				}
				u.after = analysis.Median(a)
				uses = append(uses, u)
				if !slices.Contains(pods, pod) {
					pods = append(pods, pod)
				}
			}
		}
		sort.Slice(uses, func(i, j int) bool { return uses[i].after-uses[i].before > uses[j].after-uses[j].before })
		// By far the largest rise, of at least half a core.
		if len(uses) < 2 || uses[0].after-uses[0].before < 0.5 || uses[0].after-uses[0].before < 3*max(0, uses[1].after-uses[1].before) {
			if f, ok := topNeighbour(ev, h.node, h.onset, h.before, h.peak, h.scale); ok {
				out = append(out, f)
			}
			continue
		}
		top, next := uses[0], uses[1]
		subject := workloadOfName(top.pod)
		var victims []string
		for _, u := range uses[1:] {
			if v := workloadOfName(u.pod); v != subject && !slices.Contains(victims, v) {
				victims = append(victims, v)
			}
		}
		onset := h.onset
		if top.first.After(w.BaselineStart) && top.first.Before(onset) {
			onset = top.first // a pod that started then: its start
		}
		f := Finding{Kind: KindNoisyNeighbour, Subject: subject, Object: "pod " + top.pod, Namespace: top.ns, Time: onset, Severity: SevCritical, Weight: 0.9,
			Source: SrcMetrics, Related: append([]string{h.node}, victims...), Facts: map[string]string{}}
		f.setFact("node", h.node)
		f.setFact("pod", top.pod)
		f.setFact("cpu_before", fmt.Sprintf("%.1f", top.before))
		f.setFact("cpu_after", fmt.Sprintf("%.1f", top.after))
		f.setFact("node_before", formatShare(h.before, h.scale))
		f.setFact("node_peak", formatShare(h.peak, h.scale))
		f.setFact("victims", strings.Join(victims, ", "))
		if matchLine(jobPodRE, top.pod) {
			f.setFact("batch", "true")
		}
		f.Summary = fmt.Sprintf("%s (pod %s) took the CPU of node %s: %.1f → %.1f cores while the node went to %s", subject, top.pod, h.node, top.before, top.after, formatShare(h.peak, h.scale))
		f.Evidence = []string{
			fmt.Sprintf("node %s CPU rose from %s to %s from %s", h.node, formatShare(h.before, h.scale), formatShare(h.peak, h.scale), ts(h.onset)),
			fmt.Sprintf("container CPU on node %s: pod %s rose from %.1f to %.1f cores; the next largest rise was pod %s (%.1f → %.1f)", h.node, top.pod, top.before, top.after, next.pod, next.before, next.after),
		}
		out = append(out, f)
	}
	return out
}

// jobPodRE is a pod a CronJob's Job created: the CronJob, the Job's
// scheduled-minute number, a random suffix.
var jobPodRE = regexp.MustCompile(`-\d{8,10}-[a-z0-9]{5}$`)

func formatShare(v, scale float64) string {
	if scale == 100 {
		return fmt.Sprintf("%.0f%%", v)
	}
	return fmt.Sprintf("%.0f%%", min(100, 100*v/scale)) // a rate's overshoot is no more than all of it
}

// nodeCPUCores is a node's CPU in cores: its use over its share as
// kubectl top node prints them, else its allocatable CPU; 0 when unknown.
func nodeCPUCores(ev *Gathered, node string) float64 {
	for _, u := range ev.K8s.NodeUsage {
		if u.CPUPercent > 0 && (sameNode(u.Name, node) || sameHost(u.Name, node)) {
			return u.CPU.AsApproximateFloat64() * 100 / float64(u.CPUPercent)
		}
	}
	for _, n := range ev.K8s.Nodes {
		if sameNode(n.Name, node) || sameHost(n.Name, node) {
			if q, ok := n.Status.Allocatable[corev1.ResourceCPU]; ok {
				return q.AsApproximateFloat64()
			}
		}
	}
	return 0
}

// topNeighbour names the workload taking a saturated node's CPU from the
// pods' CPU readings (kubectl top pod) on that node, when its containers
// have no series: it uses at least half the node's cores and three times
// what the next workload there uses. A reading is a moment, not a rise:
// the node's series dates the saturation.
func topNeighbour(ev *Gathered, node string, onset time.Time, before, peak, scale float64) (Finding, bool) {
	cores := nodeCPUCores(ev, node)
	use := map[string]float64{}
	ns := map[string]string{}
	pods := map[string][]string{}
	total := 0.0
	for _, u := range ev.K8s.Usage {
		if u.Node == "" || !(sameNode(u.Node, node) || sameHost(u.Node, node)) {
			continue
		}
		wl := workloadOfName(u.Name)
		c := u.CPU.AsApproximateFloat64()
		use[wl] += c
		total += c
		ns[wl] = u.Namespace
		pods[wl] = append(pods[wl], u.Name)
	}
	if len(use) < 2 || cores <= 0 {
		return Finding{}, false
	}
	wls := slices.Collect(maps.Keys(use))
	sort.Slice(wls, func(i, j int) bool {
		if use[wls[i]] != use[wls[j]] {
			return use[wls[i]] > use[wls[j]]
		}
		return wls[i] < wls[j]
	})
	top, next := wls[0], wls[1]
	if use[top] < 0.5*cores || use[top] < 3*use[next] {
		return Finding{}, false
	}
	f := Finding{Kind: KindNoisyNeighbour, Subject: top, Object: "pod " + pods[top][0], Namespace: ns[top], Time: onset, Severity: SevCritical, Weight: 0.85,
		Source: SrcMetrics, Related: append([]string{node}, wls[1:]...), Facts: map[string]string{}}
	f.setFact("node", node)
	f.setFact("pod", pods[top][0])
	f.setFact("cpu_after", fmt.Sprintf("%.1f", use[top]))
	f.setFact("cpu_share", fmt.Sprintf("%.0f%%", 100*use[top]/total))
	f.setFact("node_before", formatShare(before, scale))
	f.setFact("node_peak", formatShare(peak, scale))
	f.setFact("victims", strings.Join(wls[1:], ", "))
	if matchLine(jobPodRE, pods[top][0]) {
		f.setFact("batch", "true")
	}
	f.Summary = fmt.Sprintf("%s takes the CPU of node %s: its pods there use %.1f of %.1f cores while the node went to %s", top, node, use[top], cores, formatShare(peak, scale))
	f.Evidence = []string{
		fmt.Sprintf("node %s CPU rose from %s to %s from %s", node, formatShare(before, scale), formatShare(peak, scale), ts(onset)),
		fmt.Sprintf("kubectl top pod on node %s: %s (%s) uses %.1f cores of the node's %.1f; the next, %s, %.1f", node, top, strings.Join(pods[top], ", "), use[top], cores, next, use[next]),
	}
	return f, true
}
