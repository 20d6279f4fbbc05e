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

// A process killed by its container's OOM killer while the container
// lives on. A worker that runs its jobs as child processes (an Airflow
// task runner, a Celery pool process, a gunicorn worker, a PostgreSQL
// backend) shares its container's memory cgroup with them: when a job
// loads more than the limit, the kernel's OOM killer picks the largest
// process of the cgroup ("Memory cgroup out of memory: Killed process
// 61877 (airflow task ru)", constraint=CONSTRAINT_MEMCG), which is the
// job, not the container's main process. So the pod shows no restart and
// no OOMKilled, cAdvisor's container_oom_events_total rises, and the
// parent reports only a signal: "Task exited with return code
// Negsignal.SIGKILL", "exited with 'signal 9 (SIGKILL)'", "was sent
// SIGKILL! Perhaps out of memory?", "terminated by signal 9: Killed", no
// error of the job's own. The answer names the job, its container's
// limit, what it was doing when killed and, when its log says so, that
// its input grew.

// KindChildOOMKill is a job's process killed by its container's OOM
// killer, the container not restarted.
const KindChildOOMKill Kind = "child_oom_kill"

var childOOMKill = &mechanism{
	kind:   KindChildOOMKill,
	class:  classCause,
	label:  "a job's process killed by its container's OOM killer (the container not restarted)",
	detect: detectChildOOMKill,
	// The kernel's OOM lines and the worker's own log are its evidence.
	related: exceptOwnAndChanges(KindChildOOMKill, func(h *Hypothesis, f *Finding) bool {
		if src := h.fact("kernel_log"); src != "" && f.Kind == KindOOMKilled && (f.Subject == src || strings.Contains(f.Object, src)) {
			return true
		}
		p := h.fact("pod")
		return p != "" && (f.Subject == p || strings.Contains(f.Object, p))
	}),
	// Only a change of the job itself or of the memory it is given
	// triggers it; a platform upgrade near its first kill is not why it
	// outgrew its limit.
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		t := strings.ToLower(changeText(c))
		return strings.Contains(t, strings.ToLower(h.Subject)) || strings.Contains(t, "memory") || h.fact("task") != "" && strings.Contains(t, strings.ToLower(h.fact("task")))
	},
	strictTriggers: true,
	describe: func(h *Hypothesis, sc Scope) string {
		what := h.Subject
		if t := h.fact("task"); t != "" {
			what = h.Subject + "'s task " + t
		}
		d := what + " is killed by the kernel OOM killer inside its container"
		if p := h.fact("pod"); p != "" {
			d += " (" + p + ")"
		}
		d += ": the container's memory cgroup reached its limit"
		if l := h.fact("limit"); l != "" {
			d += " of " + l
		}
		d += h.quoteClause(" (", "kernel_line", 160)
		if h.fact("kernel_line") != "" {
			d += ")"
		}
		d += h.quoteClause(", and the job exits with SIGKILL (", "exit_line", 160)
		if h.fact("exit_line") != "" {
			d += ") with no error of its own"
		}
		d += "; the kernel kills the largest process of the cgroup, the job, not the container's main process, so the pod shows no restart and no OOMKilled"
		if l := h.fact("last_line"); l != "" {
			d += "; it was killed while " + quote(l, 160)
		}
		if g := h.fact("input_growth"); g != "" {
			d += "; its input grew from " + g + ": the job holds more than the container's memory"
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Make %s fit its container: process its input in chunks or streams instead of loading it whole, or run it where it has the memory it needs (a larger worker limit, a dedicated queue or a KubernetesPodOperator with its own limit)", orWord(h.fact("task"), h.Subject))
		r.med("Size the worker's memory limit for its largest job and its concurrency (jobs share the container's cgroup)")
		r.low("Alert on container_oom_events_total rising without a restart and on jobs ending with SIGKILL (-9)")
	},
}

var (
	childMemcgKilledRE = regexp.MustCompile(`Memory cgroup out of memory: Killed process (\d+) \(([^)]*)\)`)
	memcgLimitRE       = regexp.MustCompile(`memory: usage (\d+)kB, limit (\d+)kB`)
	childSigkillRE     = regexp.MustCompile(`Task exited with return code (?:Negsignal\.SIGKILL|-9)\b|Process '[\w-]+' pid:(\d+) exited with 'signal 9 \(SIGKILL\)'|Worker \(pid:(\d+)\) was sent SIGKILL! Perhaps out of memory\?|server process \(PID (\d+)\) was terminated by signal 9: Killed`)
	airflowStartedRE   = regexp.MustCompile(`Started process (\d+) to run task`)
	airflowFailedRE    = regexp.MustCompile(`dag_id=([\w.-]+), task_id=([\w.-]+)`)
	airflowRunningRE   = regexp.MustCompile(`<TaskInstance: ([\w.-]+?)\.([\w-]+) `)
	inputSizeRE        = regexp.MustCompile(`\b(?:size|input size|file size)[=:]\s*([\d.]+)\s*([KMGT]i?B)\b`)
)

// jobSizeBytes reads "3.84 GiB".
func jobSizeBytes(v, unit string) float64 {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return 0
	}
	mult := map[string]float64{"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}[unit[:1]]
	return f * mult
}

func detectChildOOMKill(ev *Gathered, _ []Finding) []Finding {
	type kill struct {
		pid, comm, line string
		at              time.Time
	}
	var kills []kill
	limit, kernelLog := "", ""
	seen := map[string]bool{}
	addKill := func(l, src string, fallback time.Time) {
		m := findSubmatch(childMemcgKilledRE, l)
		if m == nil || seen[m[1]] {
			return
		}
		seen[m[1]] = true
		at := fallback
		if t, ok := evidence.LineTime([]byte(l), ev.Window.End); ok {
			at = t
		}
		kills = append(kills, kill{m[1], m[2], l, at})
		if kernelLog == "" {
			kernelLog = src
		}
	}
	for _, set := range ev.Logs {
		for _, t := range set.Templates {
			for _, l := range t.Lines() {
				addKill(l, set.Subject, firstOf(t.FirstIncident, t.FirstSeen))
				if m := findSubmatch(memcgLimitRE, l); m != nil && m[1] == m[2] {
					limit = m[2]
				}
			}
		}
	}
	for _, c := range ev.Commands {
		for _, l := range c.Lines {
			addKill(l, "", time.Time{})
			if m := findSubmatch(memcgLimitRE, l); m != nil && m[1] == m[2] {
				limit = m[2]
			}
		}
	}
	// cAdvisor's OOM events of a container that did not restart.
	oomPod := ""
	restarted := map[string]bool{}
	for name, s := range metricSeries(ev.Metrics) {
		if strings.HasSuffix(name, "restarts_total") && len(s.Points) > 1 && s.Points[len(s.Points)-1].V > s.Points[0].V {
			restarted[s.Labels["pod"]+"/"+s.Labels["container"]] = true
		}
	}
	for name, s := range metricSeries(ev.Metrics) {
		if name == "container_oom_events_total" && len(s.Points) > 1 && s.Points[len(s.Points)-1].V > s.Points[0].V && s.Labels["pod"] != "" {
			if k := s.Labels["pod"] + "/" + s.Labels["container"]; !restarted[k] {
				oomPod = k
			}
		}
	}
	if len(kills) == 0 && oomPod == "" {
		return nil
	}
	// The parent's report of its child's SIGKILL, with the job it ran.
	exitLine, lastLine, dag, task := "", "", "", ""
	var exitAt time.Time
	startedPID := map[string]bool{}
	var sizes []struct {
		at time.Time
		b  float64
		s  string
	}
	scan := func(lines []string, ordered bool) {
		prev := ""
		for _, l := range lines {
			if m := findSubmatch(airflowStartedRE, l); m != nil {
				startedPID[m[1]] = true
			}
			if m := findSubmatch(inputSizeRE, l); m != nil {
				at, _ := evidence.LineTime([]byte(l), ev.Window.End)
				sizes = append(sizes, struct {
					at time.Time
					b  float64
					s  string
				}{at, jobSizeBytes(m[1], m[2]), m[1] + " " + m[2]})
			}
			if m := findSubmatch(childSigkillRE, l); m != nil {
				for _, p := range m[1:] {
					if p != "" {
						startedPID[p] = true
					}
				}
				at, _ := evidence.LineTime([]byte(l), ev.Window.End)
				if exitLine == "" || at.After(exitAt) {
					exitLine, exitAt = l, at
					if ordered {
						lastLine = prev
					}
				}
			}
			if m := findSubmatch(airflowFailedRE, l); m != nil && dag == "" {
				dag, task = m[1], m[2]
			}
			if m := findSubmatch(airflowRunningRE, l); m != nil && dag == "" && strings.Contains(l, "[running]") {
				dag, task = m[1], m[2]
			}
			if strings.TrimSpace(l) != "" {
				prev = l
			}
		}
	}
	// Commands first: their lines keep their order, so the line before
	// the kill is what the job was doing.
	for _, c := range ev.Commands {
		scan(c.Lines, true)
	}
	for _, set := range ev.Logs {
		for _, t := range set.Templates {
			scan(t.Lines(), false)
		}
	}
	if exitLine == "" {
		return nil
	}
	// A kill of the process the parent started is the link; without
	// PIDs, the kernel's kill and the container's OOM events must agree.
	linked := false
	for _, k := range kills {
		if startedPID[k.pid] {
			linked = true
		}
	}
	if !linked && !(len(kills) > 0 && oomPod != "") {
		return nil
	}
	subject := dag
	if subject == "" {
		subject = ev.Scope.Service
	}
	if subject == "" && oomPod != "" {
		subject = workloadOfPodName(strings.Split(oomPod, "/")[0])
	}
	if subject == "" {
		return nil
	}
	sort.Slice(kills, func(i, j int) bool { return kills[i].at.Before(kills[j].at) })
	at := exitAt
	if len(kills) > 0 {
		at = kills[0].at
	}
	if at.IsZero() {
		at = ev.Window.Start
	}
	f := Finding{Kind: KindChildOOMKill, Subject: subject, Object: "process " + orWord(task, subject), Time: at, Severity: SevCritical, Weight: 0.9, Source: SrcLogs}
	f.setFact("task", task)
	if oomPod != "" {
		f.setFact("pod", strings.Replace(oomPod, "/", " container ", 1))
	}
	if limit != "" {
		if kb, err := strconv.ParseInt(limit, 10, 64); err == nil {
			f.setFact("limit", humanBytes(kb*1024))
		}
	}
	f.setFact("kernel_log", kernelLog)
	if len(kills) > 0 {
		f.setFact("kernel_line", trimLogPrefix(findString(childMemcgKilledRE, kills[len(kills)-1].line)))
		f.Evidence = append(f.Evidence, fmt.Sprintf("the kernel's OOM killer killed a process of a container at its memory cgroup's limit%s: %s", map[bool]string{true: " (" + f.fact("limit") + ")", false: ""}[f.fact("limit") != ""], quote(kills[len(kills)-1].line, 200)))
	}
	f.setFact("exit_line", trimLogPrefix(findString(childSigkillRE, exitLine)))
	f.Evidence = append(f.Evidence, fmt.Sprintf("%s exits with SIGKILL: %s", orWord(task, subject), quote(exitLine, 200)))
	if oomPod != "" {
		f.Evidence = append(f.Evidence, fmt.Sprintf("container_oom_events_total of %s rises while its restarts stay flat", oomPod))
	}
	if lastLine != "" && !matchLine(childSigkillRE, lastLine) {
		f.setFact("last_line", trimLogPrefix(lastLine))
	}
	if len(sizes) > 1 {
		sort.SliceStable(sizes, func(i, j int) bool { return sizes[i].at.Before(sizes[j].at) })
		first, last := sizes[0], sizes[len(sizes)-1]
		if first.b > 0 && last.b >= 1.5*first.b {
			f.setFact("input_growth", first.s+" to "+last.s)
			f.Evidence = append(f.Evidence, fmt.Sprintf("its input grew from %s (%s) to %s (%s)", first.s, first.at.UTC().Format("2006-01-02"), last.s, last.at.UTC().Format("2006-01-02")))
		}
	}
	f.Summary = fmt.Sprintf("%s killed by its container's OOM killer (SIGKILL, no restart)", orWord(task, subject))
	return []Finding{f}
}

// trimLogPrefix drops a log line's timestamp and level prefix: what it
// says from its message on.
func trimLogPrefix(l string) string {
	if i := strings.Index(l, " - "); i > 0 && i < 80 {
		return strings.TrimSpace(l[i+3:])
	}
	return strings.TrimSpace(l)
}
