package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

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
// with its node label; a change to it (its schedule, its workers) is its
// trigger.
var noisyNeighbour = &mechanism{
	kind:       KindNoisyNeighbour,
	class:      classCause,
	label:      "noisy neighbour (a workload saturating a shared node's CPU)",
	detect:     detectNoisyNeighbour,
	fitsChange: changeSays(neighbourChangeRE),
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("%s saturates the CPU of node %s (noisy neighbour): its containers' CPU use rose from %s to %s cores when the node's CPU went from %s to %s",
			h.Subject, orWord(h.fact("node"), "its node"), orDash(h.fact("cpu_before")), orDash(h.fact("cpu_after")), orDash(h.fact("node_before")), orDash(h.fact("node_peak")))
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
			scale := 1.0
			if peak > 1.5 {
				scale = 100 // a percentage
			}
			before := analysis.Median(base)
			if peak < 0.85*scale || before > 0.6*peak {
				continue
			}
			h := hot{node: node, before: before, peak: peak, scale: scale}
			for _, p := range s.Points {
				if !p.T.Before(w.Start) && p.V >= before+(peak-before)/2 {
					h.onset = p.T
					break
				}
			}
			hots = append(hots, h)
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
		if len(uses) < 2 {
			continue
		}
		sort.Slice(uses, func(i, j int) bool { return uses[i].after-uses[i].before > uses[j].after-uses[j].before })
		top, next := uses[0], uses[1]
		rise := top.after - top.before
		// By far the largest rise, of at least half a core.
		if rise < 0.5 || rise < 3*max(0, next.after-next.before) {
			continue
		}
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
	return fmt.Sprintf("%.0f%%", 100*v)
}
