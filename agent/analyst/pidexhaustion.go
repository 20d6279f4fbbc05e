package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A process that cannot create a thread or a child process has hit a
// limit on PIDs, not on memory: every thread takes a PID, and the node's
// pid_max (kernel.pid_max, 32768 by default on many images), the pod's
// pids cgroup (the kubelet's podPidsLimit) or the user's ulimit -u cap
// them. The JVM says "OutOfMemoryError: unable to create native thread"
// (its heap is fine), glibc "pthread_create failed (EAGAIN)", the shell
// and systemd "fork: Resource temporarily unavailable", Go "runtime:
// failed to create new OS thread", Python "can't start new thread", the
// kernel "fork rejected by pids controller". On a node, the PIDs are
// usually taken by another pod: processes that leak, or zombies (defunct
// children no init process reaps, a headless browser's helpers under a
// PID 1 that does not wait for them). Every pod on that node then fails to
// start threads; the kubelet reports PIDPressure and evicts the pod that
// holds the most. The node and the pod that fills it are the root; the
// pods that cannot start threads are its victims.

// KindPIDExhaustion is a process, pod or node out of PIDs.
const KindPIDExhaustion Kind = "pid_exhaustion"

var pidExhaustion = &mechanism{
	kind:       KindPIDExhaustion,
	class:      classCause,
	label:      "out of PIDs (threads and processes cannot be created)",
	lines:      pidLineRE,
	lineWeight: 0.8,
	detect:     detectPIDExhaustion,
	related:    listedIn("workloads", ","),
	// What fills the PIDs is a process that starts many: a change to the
	// workload holding them, or to how processes are started or limited.
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		if cu := h.fact("culprit"); cu != "" && c.Subject == cu {
			return true
		}
		return matchLine(pidChangeRE, changeText(c))
	},
	strictTriggers: true,
	describe: func(h *Hypothesis, sc Scope) string {
		if h.fact("node") == "" && (h.fact("zombies") != "" || h.fact("pids") != "") {
			d := fmt.Sprintf("%s cannot create threads or processes: its pod reached its PIDs limit (the pids cgroup the kubelet's podPidsLimit sets), not a memory limit", h.Subject)
			d += h.clause(": ", "pids") + h.clause("; ", "zombies")
			if l := h.fact("line"); l != "" {
				d += ". Spawning fails with EAGAIN: " + quote(pidClause(l), 160)
			}
			d += h.clause("; ", "restarts")
			return d
		}
		if h.fact("node") == "" {
			d := fmt.Sprintf("%s cannot create threads or processes: it hit a limit on PIDs — the pod's pids limit (podPidsLimit), the node's kernel.pid_max or the container's ulimit -u — not a memory limit", h.Subject)
			if l := h.fact("line"); l != "" {
				d += ": " + quote(ReadableLine(l), 160)
			} else if l := h.top().fact("line"); l != "" {
				d += ": " + quote(ReadableLine(l), 160)
			}
			return d
		}
		d := fmt.Sprintf("node %s ran out of PIDs (process IDs)", h.Subject)
		d += h.clause(": ", "usage") + h.clause("; ", "zombies")
		d += ". New threads and processes fail on that node (fork: Resource temporarily unavailable, pthread_create EAGAIN)"
		d += h.clause(", so ", "victims") + h.clause(". The PIDs are held by ", "culprit_detail") + h.clause("; it changed before: ", "culprit_change") + h.clause("; ", "evicted")
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		if cu := h.fact("culprit"); cu != "" {
			r.high("Stop %s from leaking processes: run it under an init that reaps zombies (tini or dumb-init as PID 1, or shareProcessNamespace: true) or make its parent process wait for its children; restart it to release the PIDs meanwhile", cu)
		} else if h.fact("node") != "" {
			r.high("Find what holds the PIDs on %s (ps -eo stat,comm | sort | uniq -c | sort -rn; zombies show as Z <defunct>) and restart it", h.Subject)
		} else {
			r.high("Find what creates threads or processes without bound in %s (thread dump: jstack, /proc/<pid>/status Threads) and bound its pools; check the pod's pids limit and the node's pid_max", h.Subject)
		}
		if h.fact("node") != "" {
			r.med("Set podPidsLimit in the kubelet configuration (and a pid eviction threshold, evictionHard pid.available) so one pod cannot take a node's PIDs; raise kernel.pid_max on the nodes (4194304)")
			if v := h.fact("workloads"); v != "" {
				r.med("Restart or move the pods that failed on %s once the PIDs are free", h.Subject)
			}
		}
		r.low("Alert on node_processes_pids / node_processes_max_processes above 80%%, on zombie processes (node_processes_state{state=\"Z\"}) and on PIDPressure")
	},
}

var (
	// pidLineRE is a process failing to create a thread or a process.
	pidLineRE = regexp.MustCompile(`(?i)unable to create (?:a )?(?:new )?native thread|pthread_create failed|Failed to start (?:the )?(?:native )?thread|fork: (?:retry: )?Resource temporarily unavailable|Failed to fork|fork/exec \S+: resource temporarily unavailable|can't start new thread|failed to create new OS thread|fork rejected by pids controller|Cannot fork|cannot create thread|\bspawn\b[^\n]{0,80}\bEAGAIN\b|EAGAIN[^\n]{0,40}(?:fork|clone|thread)|(?:fork|clone|thread)[^\n]{0,40}EAGAIN`)
	// pidNodeLineRE is the node's own account of its PIDs: the kubelet's
	// eviction for pids, PIDPressure.
	pidNodeLineRE = regexp.MustCompile(`(?i)resourceName="?pid"?|reclaim pid|low on resource: pids|InsufficientPID|PIDPressure|fork rejected by pids controller|Failed to fork|fork: (?:retry: )?Resource temporarily unavailable|fork/exec \S+: resource temporarily unavailable`)
	// pidChangeRE is a change to how processes are started or limited.
	pidChangeRE = regexp.MustCompile(`(?i)\bpids?\b|pid_max|pids-?limit|podPidsLimit|zombie|defunct|\btini\b|dumb-init|--init\b|\bfork|threads?\b|ulimit|nproc|chrom|puppeteer|headless|subprocess`)
	// zombieLineRE is a line of ps output for a zombie process ("Z
	// chrome <defunct>", with uniq -c's count in front).
	zombieLineRE = regexp.MustCompile(`^\s*(?:(\d+)\s+)?Z\S*\s+(\S+)(?:\s+<defunct>)?\s*$|<defunct>`)
)

// pidNode is what is known of one node's PIDs.
type pidNode struct {
	f        Finding
	node     bool // a node-level signal was seen
	victims  []string
	culprit  string
	detail   []string
	evidence []string
}

// detectPIDExhaustion finds nodes out of PIDs: the kubelet's PIDPressure
// and pid evictions, node_exporter's PIDs against their limit, the node's
// journal failing to fork; it names the pods on the node that could not
// create threads (their victims) and the one holding the PIDs (zombies in
// its ps output, the pod evicted for pids).
func detectPIDExhaustion(ev *Gathered, _ []Finding) []Finding {
	nodes := map[string]*pidNode{}
	var order []string
	get := func(name string) *pidNode {
		name = canonicalNode(ev, name)
		if n := nodes[name]; n != nil {
			return n
		}
		n := &pidNode{f: Finding{Kind: KindPIDExhaustion, Subject: name, Object: "node " + name, Source: SrcKubernetes, Severity: SevCritical, Weight: 0.9}}
		n.f.setFact("node", name)
		nodes[name] = n
		order = append(order, name)
		return n
	}
	podNode := map[string]string{}
	for _, p := range ev.K8s.Pods {
		podNode[p.Name] = p.Spec.NodeName
	}
	// The kubelet's events: pid evictions, PIDPressure.
	for _, e := range ev.K8s.Events {
		if !matchLine(pidNodeLineRE, e.Message) && !matchLine(pidNodeLineRE, e.Reason) {
			continue
		}
		first, _ := eventTime(&e)
		node := ""
		switch e.InvolvedObject.Kind {
		case "Node":
			node = e.InvolvedObject.Name
		case "Pod":
			node = orWord(podNode[e.InvolvedObject.Name], e.Source.Host)
		}
		if node == "" {
			continue
		}
		n := get(node)
		n.node = true
		if e.InvolvedObject.Kind == "Pod" && e.Reason == "Evicted" {
			n.culprit = orWord(n.culprit, workloadOfName(e.InvolvedObject.Name))
			n.f.setFact("evicted", fmt.Sprintf("the kubelet evicted %s at %s (%s)", e.InvolvedObject.Name, hm(first), strings.TrimSpace(e.Message)))
		}
		n.evidence = appendNew(n.evidence, fmt.Sprintf("event %s on %s/%s: %q", e.Reason, strings.ToLower(e.InvolvedObject.Kind), e.InvolvedObject.Name, e.Message))
	}
	for _, nd := range ev.K8s.Nodes {
		for _, c := range nd.Status.Conditions {
			if c.Type == "PIDPressure" && c.Status == "True" {
				n := get(nd.Name)
				n.node = true
				n.f.Time = earliest(n.f.Time, c.LastTransitionTime.Time)
				n.evidence = appendNew(n.evidence, fmt.Sprintf("node %s condition PIDPressure=True since %s", nd.Name, ts(c.LastTransitionTime.Time)))
			}
		}
	}
	// The node's journal: the kubelet evicting for pids, forks failing.
	for _, h := range nodeLines(ev, pidNodeLineRE, false) {
		n := get(h.node)
		n.node = true
		if matchLine(pidLineRE, h.line) {
			n.f.Time = earliest(n.f.Time, orTime(h.t.FirstIncident, h.t.FirstSeen))
		}
		n.evidence = appendNew(n.evidence, templateEvidence(*h.set, h.t, h.line))
	}
	// node_exporter's PIDs against the limit, and its zombies.
	for _, u := range pidsAtLimit(ev.Metrics) {
		node := orWord(knownNode(ev, u.node), u.node)
		n := get(node)
		n.node = true
		n.f.Time = earliest(n.f.Time, u.onset)
		n.f.setFact("usage", fmt.Sprintf("%s passed 90%% of its limit of %.0f at %s and reached %.0f (%.0f%%)", u.metric, u.limit, hm(u.onset), u.used, 100*u.used/u.limit))
		n.evidence = append(n.evidence, fmt.Sprintf("%s of %s passed 90%% of its limit %.0f at %s, up to %.0f (%.0f%%)", u.metric, node, u.limit, ts(u.onset), u.used, 100*u.used/u.limit))
		if u.zombies > 0 {
			n.f.setFact("zombies", fmt.Sprintf("%.0f of them zombie (defunct) processes (node_processes_state{state=\"Z\"}, rising from %s)", u.zombies, hm(u.zombieFrom)))
		}
	}
	// An eviction for pids whose pod is gone (its event names no node):
	// the culprit of the one node seen short of PIDs.
	for _, e := range ev.K8s.Events {
		if e.Reason == "Evicted" && strings.Contains(strings.ToLower(e.Message), "pids") && podNode[e.InvolvedObject.Name] == "" && e.Source.Host == "" && len(order) == 1 {
			for _, name := range order {
				n := nodes[name]
				if n.culprit == "" {
					n.culprit = workloadOfName(e.InvolvedObject.Name)
					first, _ := eventTime(&e)
					n.f.setFact("evicted", fmt.Sprintf("the kubelet evicted %s at %s (%s)", e.InvolvedObject.Name, hm(first), strings.TrimSpace(e.Message)))
				}
			}
		}
	}
	// The pods that could not create threads, on their nodes.
	for i := range ev.Logs {
		set := &ev.Logs[i]
		if set.Host {
			continue
		}
		node := podNode[set.Source]
		if node == "" {
			continue
		}
		node = canonicalNode(ev, node)
		n := nodes[node]
		if n == nil {
			continue
		}
		for _, t := range set.Templates {
			if t.Incident == 0 || !matchLine(pidLineRE, t.Example) {
				continue
			}
			n.f.Time = earliest(n.f.Time, orTime(t.FirstIncident, t.FirstSeen))
			if !slices.Contains(n.victims, set.Subject) {
				n.victims = append(n.victims, set.Subject)
				n.detail = append(n.detail, fmt.Sprintf("%s (pod %s) cannot create threads from %s: %q", set.Subject, set.Source, hm(orTime(t.FirstIncident, t.FirstSeen)), pidClause(t.Example)))
			}
			n.f.setFact("line", t.Example)
			break
		}
	}
	// Zombies in a pod's ps output name the pod holding the PIDs.
	for _, c := range ev.Commands {
		zombies, comm := 0, ""
		for _, l := range c.Lines {
			m := findSubmatch(zombieLineRE, l)
			if m == nil {
				continue
			}
			k := 1
			if m[1] != "" {
				k, _ = strconv.Atoi(m[1])
			}
			zombies += k
			if comm == "" && m[2] != "" {
				comm = m[2]
			}
		}
		if zombies < 20 || c.Pod == "" {
			continue
		}
		node := podNode[c.Pod]
		w := workloadOfName(c.Pod)
		var n *pidNode
		if node != "" {
			n = nodes[canonicalNode(ev, node)]
		}
		if n == nil && len(order) == 1 {
			n = nodes[order[0]]
		}
		if n == nil {
			continue
		}
		n.culprit = w
		what := fmt.Sprintf("%d zombie (defunct) processes", zombies)
		if comm != "" {
			what = fmt.Sprintf("%d zombie (defunct) %s processes", zombies, comm)
		}
		n.f.setFact("culprit_ps", fmt.Sprintf("%s in its pod %s (%s)", what, c.Pod, truncate(strings.TrimSpace(c.Run), 60)))
		n.evidence = append(n.evidence, fmt.Sprintf("ps in %s/%s: %s", c.Namespace, c.Pod, what))
	}
	changes := append(slices.Clone(ev.Earlier), ev.Changes...)
	var out []Finding
	for _, name := range order {
		n := nodes[name]
		if !n.node {
			continue
		}
		f := &n.f
		if len(n.victims) == 0 && f.fact("usage") == "" && n.culprit == "" {
			// PIDPressure alone is the kubelet's node pressure.
			continue
		}
		if f.Time.IsZero() {
			f.Time = ev.Window.Start
		}
		workloads := workloadsOf(podsOnNode(ev, name))
		for _, v := range n.victims {
			workloads = appendNew(workloads, v)
		}
		if n.culprit != "" {
			workloads = appendNew(workloads, n.culprit)
			f.setFact("culprit", n.culprit)
			detail := n.culprit
			if ps := f.fact("culprit_ps"); ps != "" {
				detail += ": " + ps
			}
			f.setFact("culprit_detail", detail)
			for _, c := range changes {
				if c.Service == n.culprit && c.Timestamp.Before(f.Time) && f.Time.Sub(c.Timestamp) < 24*time.Hour {
					f.setFact("culprit_change", fmt.Sprintf("%s of %s at %s: %q", changeKindWords(c.Kind), c.Service, ts(c.Timestamp), c.Description))
				}
			}
		}
		f.setFact("workloads", strings.Join(workloads, ","))
		f.Related = append(f.Related, workloads...)
		if len(n.detail) > 0 {
			f.setFact("victims", strings.Join(n.detail, "; "))
		}
		f.Evidence = append(n.detail, n.evidence...)
		if len(f.Evidence) > 8 {
			f.Evidence = f.Evidence[:8]
		}
		if len(n.victims) > 0 && (f.fact("usage") != "" || n.culprit != "") {
			f.Weight = 0.95
		}
		f.Summary = fmt.Sprintf("node %s out of PIDs: threads and processes cannot be created (from %s)", name, hm(f.Time))
		out = append(out, *f)
	}
	return append(out, detectPodPIDs(ev, out)...)
}

// pidClause is the part of a line that says a thread or process could
// not be created, with a little context around it.
func pidClause(line string) string {
	l := ReadableLine(line)
	loc := pidLineRE.FindStringIndex(l)
	if loc == nil {
		return clipMiddle(l, 140)
	}
	from, to := max(0, loc[0]-40), min(len(l), loc[1]+60)
	s := strings.TrimSpace(l[from:to])
	if from > 0 {
		s = "…" + s
	}
	if to < len(l) {
		s += "…"
	}
	return s
}

// pidUse is a node whose PIDs reached their limit.
type pidUse struct {
	node, metric         string
	used, limit, zombies float64
	onset, zombieFrom    time.Time
}

// pidsAtLimit reads node_exporter's process counts (node_processes_pids
// or _threads) against their limits (node_processes_max_processes or
// _max_threads) per node: the first time they reach 90 %, with the
// zombies (node_processes_state{state="Z"}) at that time.
func pidsAtLimit(sets []MetricSet) []pidUse {
	used := map[string]map[string][]evidence.Point{} // node -> metric -> points
	limit := map[string]float64{}
	zombies := map[string][]evidence.Point{}
	for n, s := range metricSeries(sets) {
		node := nodeOfLabels(s.Labels)
		if node == "" || len(s.Points) == 0 {
			continue
		}
		switch n {
		case "node_processes_pids", "node_processes_threads":
			if used[node] == nil {
				used[node] = map[string][]evidence.Point{}
			}
			used[node][n] = append(used[node][n], s.Points...)
		case "node_processes_max_processes", "node_processes_max_threads":
			limit[node+"\x00"+n] = s.Points[len(s.Points)-1].V
		case "node_processes_state":
			if s.Labels["state"] == "Z" {
				zombies[node] = append(zombies[node], s.Points...)
			}
		}
	}
	var out []pidUse
	nodes := make([]string, 0, len(used))
	for n := range used {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	for _, node := range nodes {
		for _, m := range []string{"node_processes_pids", "node_processes_threads"} {
			pts := used[node][m]
			lim := limit[node+"\x00"+map[string]string{"node_processes_pids": "node_processes_max_processes", "node_processes_threads": "node_processes_max_threads"}[m]]
			if len(pts) == 0 || lim <= 0 {
				continue
			}
			sort.Slice(pts, func(i, j int) bool { return pts[i].T.Before(pts[j].T) })
			var u pidUse
			for _, p := range pts {
				if p.V >= 0.9*lim {
					u = pidUse{node: node, metric: m, used: p.V, limit: lim, onset: p.T}
					break
				}
			}
			if u.onset.IsZero() {
				continue
			}
			for _, p := range pts {
				if !p.T.Before(u.onset) && p.V > u.used {
					u.used = p.V
				}
			}
			zs := zombies[node]
			sort.Slice(zs, func(i, j int) bool { return zs[i].T.Before(zs[j].T) })
			for _, z := range zs {
				if z.V > 0 && u.zombieFrom.IsZero() {
					u.zombieFrom = z.T
				}
				if z.V > u.zombies {
					u.zombies = z.V
				}
			}
			if u.zombies < 0.2*u.used {
				u.zombies = 0
			}
			out = append(out, u)
			break
		}
	}
	return out
}
