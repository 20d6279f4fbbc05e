package analyst

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A pod runs out of PIDs on its own, with no node short of them: the
// kubelet's podPidsLimit (or the runtime's pids limit) caps the pod's pids
// cgroup, and a process that starts children without waiting for them
// fills it. The usual shape is a headless browser, a shell wrapper or a
// worker pool under a PID 1 that is the application itself (node, python,
// java), not an init: the children exit, nobody reaps them, and they stay
// as zombies (ps STAT Z, "<defunct>") holding their PIDs. When the pids
// cgroup is full, fork, clone and spawn fail with EAGAIN ("Resource
// temporarily unavailable"), the health endpoint fails and the liveness
// probe restarts the container: restarts every few hours with memory
// fine. The container's ps output, its pids cgroup (pids.current against
// pids.max), cAdvisor's container_processes or container_threads against
// the limit, and the kubelet's configured podPidsLimit show it.

var (
	// psCountedRE is a line of "ps -eo stat,comm | sort | uniq -c": a count,
	// a state and a command.
	psCountedRE = regexp.MustCompile(`^\s*(\d+)\s+([A-Za-z][A-Za-z<+\-]*)\s+(\S+)(?:\s+<defunct>)?\s*$`)
	// psListedRE is a line of "ps -eo pid,ppid,stat,comm": two numbers, a
	// state and a command.
	psListedRE = regexp.MustCompile(`^\s*(\d+)\s+(\d+)\s+([A-Za-z][A-Za-z<+\-]*)\s+(\S+)`)
	// topZombieRE is top's task line ("Tasks: 900 total, ... 820 zombie").
	topZombieRE = regexp.MustCompile(`(?i)\b(\d+)\s+zombie\b`)
	// pidsFileRE names a pids cgroup file; pidsValueRE is one with its
	// value on the same line (grep -H, "pids.current: 842").
	pidsFileRE  = regexp.MustCompile(`pids\.(max|current|peak)`)
	pidsValueRE = regexp.MustCompile(`pids\.(max|current|peak)\s*[:=]\s*(\d+|max)\b`)
	bareValueRE = regexp.MustCompile(`^\s*(\d+|max)\s*$`)
	// podPidsLimitRE is the kubelet's configured per-pod limit (its
	// configz, its config file, its flag).
	podPidsLimitRE = regexp.MustCompile(`(?i)"?podPidsLimit"?\s*[:=]\s*(\d+)|--pod-max-pids[= ](\d+)`)
)

// psReading is what one ps, top or cgroup read says about a container's
// processes.
type psReading struct {
	zombies      int
	byComm       map[string]int
	pid1         string
	reapedBy1    bool // the zombies' parent is PID 1
	current, max float64
	limit        float64 // the kubelet's podPidsLimit
}

// readPS reads the zombies, PID 1 and the pids cgroup from one command's
// output.
func readPS(c evidence.CommandOutput) psReading {
	r := psReading{byComm: map[string]int{}}
	counted, listed := 0, 0
	listedBy := map[string]int{}
	for _, l := range c.Lines {
		if m := findSubmatch(psCountedRE, l); m != nil && strings.HasPrefix(m[2], "Z") {
			n, _ := strconv.Atoi(m[1])
			counted += n
			r.byComm[m[3]] += n
			continue
		}
		if m := findSubmatch(psListedRE, l); m != nil {
			if m[1] == "1" && m[2] == "0" {
				r.pid1 = m[4]
			}
			if strings.HasPrefix(m[3], "Z") {
				listed++
				listedBy[m[4]]++
				if m[2] == "1" {
					r.reapedBy1 = true
				}
			}
			continue
		}
		if m := findSubmatch(topZombieRE, l); m != nil && strings.Contains(strings.ToLower(l), "total") {
			n, _ := strconv.Atoi(m[1])
			counted = max(counted, n)
		}
		if m := findSubmatch(podPidsLimitRE, l); m != nil {
			v, _ := strconv.ParseFloat(orWord(m[1], m[2]), 64)
			r.limit = v
		}
	}
	r.zombies = counted
	if counted == 0 {
		r.zombies = listed
		r.byComm = listedBy
	}
	// The pids cgroup: "name: value" lines, or bare values in the order
	// the command named the files.
	vals := map[string]float64{}
	for _, l := range c.Lines {
		if m := findSubmatch(pidsValueRE, l); m != nil && m[2] != "max" {
			vals[m[1]], _ = strconv.ParseFloat(m[2], 64)
		}
	}
	if files := findAllSubmatch(pidsFileRE, c.Run, -1); len(vals) == 0 && len(files) > 0 {
		var bare []string
		for _, l := range c.Lines {
			if m := findSubmatch(bareValueRE, l); m != nil {
				bare = append(bare, m[1])
			}
		}
		if len(bare) >= len(files) {
			bare = bare[len(bare)-len(files):]
			for i, f := range files {
				if v, err := strconv.ParseFloat(bare[i], 64); err == nil {
					vals[f[1]] = v
				}
			}
		}
	}
	r.current, r.max = max(vals["current"], vals["peak"]), vals["max"]
	return r
}

// podPIDs is what is known of one workload's PIDs.
type podPIDs struct {
	ns, name      string
	line          string
	lineAt        time.Time
	linePod       string
	ps            psReading
	psPod         string
	procs         float64 // cAdvisor's container_processes/threads, highest
	procsMetric   string
	restarts      int32
	livenessKills int
}

// detectPodPIDs finds workloads whose own pods ran out of PIDs while no
// node did: a thread or process that cannot be created in their logs,
// with the pod's pids cgroup or process count at its limit, or the zombie
// processes that fill it.
func detectPodPIDs(ev *Gathered, nodeFindings []Finding) []Finding {
	covered := map[string]bool{}
	for _, f := range nodeFindings {
		for _, w := range f.Related {
			covered[w] = true
		}
	}
	byName := map[string]*podPIDs{}
	var order []string
	podWl := map[string]string{}
	for _, p := range ev.K8s.Pods {
		w := workloadOfName(p.Name)
		podWl[p.Name] = w
		if byName[w] == nil {
			byName[w] = &podPIDs{ns: p.Namespace, name: w}
			order = append(order, w)
		}
		for _, cs := range p.Status.ContainerStatuses {
			byName[w].restarts += cs.RestartCount
		}
	}
	limit := 0.0
	for _, c := range ev.Commands {
		if r := readPS(c); r.limit > 0 {
			limit = r.limit
		}
	}
	// The pods' own lines: the crashed containers' last lines, then the
	// templates of their logs.
	for _, k := range slices.Sorted(maps.Keys(ev.K8s.PreviousLogs)) {
		parts := strings.SplitN(k, "/", 3)
		if len(parts) < 2 {
			continue
		}
		p := byName[podWl[parts[1]]]
		if p == nil || p.line != "" {
			continue
		}
		for _, l := range ev.K8s.PreviousLogs[k] {
			if matchLine(pidLineRE, l.Text) {
				p.line, p.lineAt, p.linePod = l.Text, l.Time, parts[1]
				break
			}
		}
	}
	for i := range ev.Logs {
		set := &ev.Logs[i]
		p := byName[set.Subject]
		if set.Host || p == nil || p.line != "" {
			continue
		}
		for _, t := range set.Templates {
			if matchLine(pidLineRE, t.Example) {
				p.line, p.lineAt, p.linePod = t.Example, orTime(t.FirstIncident, t.FirstSeen), set.Source
				break
			}
		}
	}
	for _, c := range ev.Commands {
		w := podWl[c.Pod]
		if w == "" && c.Target != "" {
			_, w, _ = strings.Cut(c.Target, "/")
		}
		p := byName[w]
		if p == nil {
			continue
		}
		r := readPS(c)
		if r.zombies > p.ps.zombies {
			r.current, r.max = max(r.current, p.ps.current), max(r.max, p.ps.max)
			p.ps, p.psPod = r, orWord(c.Pod, c.Target)
		} else if r.current > 0 || r.max > 0 {
			p.ps.current, p.ps.max = max(r.current, p.ps.current), max(r.max, p.ps.max)
		}
	}
	for n, s := range metricSeries(ev.Metrics) {
		if n != "container_processes" && n != "container_threads" {
			continue
		}
		p := byName[podWl[s.Labels["pod"]]]
		if p == nil {
			continue
		}
		for _, pt := range s.Points {
			if pt.V > p.procs {
				p.procs, p.procsMetric = pt.V, n
			}
		}
	}
	for _, e := range ev.K8s.Events {
		if e.InvolvedObject.Kind == "Pod" && e.Reason == "Killing" && strings.Contains(strings.ToLower(e.Message), "liveness") {
			if p := byName[podWl[e.InvolvedObject.Name]]; p != nil {
				p.livenessKills += max(1, int(e.Count))
			}
		}
	}
	var out []Finding
	for _, w := range order {
		p := byName[w]
		if covered[w] {
			continue
		}
		lim := orFloat(p.ps.max, limit)
		full := lim > 0 && (p.ps.current >= 0.8*lim || p.procs >= 0.8*lim)
		zombies := p.ps.zombies >= 20
		if p.line == "" && !(zombies && full) || p.line != "" && !zombies && !full {
			continue
		}
		f := Finding{Kind: KindPIDExhaustion, Subject: w, Object: "pod " + orWord(p.linePod, p.psPod), Source: SrcKubernetes, Severity: SevCritical, Weight: 0.85}
		if p.line != "" && (zombies || full) {
			f.Weight = 0.95
		}
		f.Time = p.lineAt
		if f.Time.IsZero() {
			f.Time = ev.Window.Start
		}
		var why []string
		if p.ps.current > 0 && p.ps.max > 0 {
			d := fmt.Sprintf("its pids cgroup holds %.0f of pids.max %.0f", p.ps.current, p.ps.max)
			f.setFact("pids", d)
			f.Evidence = append(f.Evidence, fmt.Sprintf("pids cgroup of pod %s: pids.current %.0f, pids.max %.0f", p.psPod, p.ps.current, p.ps.max))
			why = append(why, d)
		} else if p.procs > 0 && lim > 0 {
			d := fmt.Sprintf("its %s reached %.0f of a limit of %.0f", p.procsMetric, p.procs, lim)
			f.setFact("pids", d)
			f.Evidence = append(f.Evidence, d)
			why = append(why, d)
		}
		if limit > 0 {
			f.setFact("pod_pids_limit", fmt.Sprintf("%.0f", limit))
			f.Evidence = append(f.Evidence, fmt.Sprintf("the kubelet's podPidsLimit is %.0f", limit))
		}
		if zombies {
			d := fmt.Sprintf("%d of them zombie (defunct) processes", p.ps.zombies)
			if len(p.ps.byComm) > 0 {
				comms := make([]string, 0, len(p.ps.byComm))
				for c := range p.ps.byComm {
					comms = append(comms, c)
				}
				sort.Slice(comms, func(i, j int) bool { return p.ps.byComm[comms[i]] > p.ps.byComm[comms[j]] })
				var parts []string
				for _, c := range comms[:min(3, len(comms))] {
					parts = append(parts, fmt.Sprintf("%d %s", p.ps.byComm[c], c))
				}
				d += " (" + strings.Join(parts, ", ") + ")"
			}
			if p.ps.pid1 != "" {
				d += fmt.Sprintf(" that PID 1 (%s) never reaps: %s is not an init and does not wait for the children it starts", p.ps.pid1, p.ps.pid1)
			} else {
				d += ", not reaped by their parent"
			}
			f.setFact("zombies", d)
			f.setFact("culprit", w)
			f.Evidence = append(f.Evidence, fmt.Sprintf("ps in pod %s: %s", p.psPod, d))
			why = append(why, d)
		}
		if p.line != "" {
			f.setFact("line", p.line)
			f.Evidence = append([]string{fmt.Sprintf("log of pod %s: %q", p.linePod, pidClause(p.line))}, f.Evidence...)
		}
		if p.livenessKills > 0 || p.restarts > 0 {
			d := "its health check then fails and the liveness probe has the kubelet kill the container"
			if p.restarts > 0 {
				d += fmt.Sprintf(" (%d restarts)", p.restarts)
			}
			f.setFact("restarts", d)
		}
		f.setFact("why", strings.Join(why, "; "))
		f.Related = []string{w}
		f.Summary = fmt.Sprintf("%s out of PIDs in its pod: threads and processes cannot be created", w)
		out = append(out, f)
	}
	return out
}

func orFloat(a, b float64) float64 {
	if a > 0 {
		return a
	}
	return b
}
