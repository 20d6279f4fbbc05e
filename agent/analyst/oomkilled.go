package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/finding"
)

// Containers (or host processes) killed for running out of memory: the
// kernel OOM killer at the memory limit (exit code 137), a leak, a load
// surge or a JVM heap larger than the limit.
var oomKilled = &mechanism{
	kind:  KindOOMKilled,
	class: classCause,
	label: "OOMKilled (out of memory)",
	enrich: func(f *Finding, c *corev1.Container) {
		f.setFact("jvm_xmx", xmxOfContainer(c))
		if f.fact("heap_over_limit") == "" {
			followHeapCap(f, c, nil)
		}
		if f.fact("heap_over_limit") == "" {
			sparkExecutorOverhead(f, c)
		}
	},
	container: oomContainer,
	event: func(e *corev1.Event) (float64, bool) {
		return 0.85, e.Reason == "OOMKilling" || e.Reason == "OOMKilled"
	},
	// A container killed by the kernel OOM killer is about the workload,
	// not the node it ran on.
	eventTarget: func(e *corev1.Event, t *eventTarget) {
		io := e.InvolvedObject
		if io.Kind != "Node" {
			return
		}
		if wl := oomWorkload(e.Message, io.Name, t.Pods); wl != "" {
			t.Subject = wl
			t.Related = append(t.Related, io.Name)
			t.Object = "node " + io.Name + " process of " + wl
		}
	},
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		desc := changeText(c)
		if len(h.Primary) > 0 && h.fact("spark_overhead") != "" && matchLine(sparkOffHeapChangeRE, desc) {
			return true
		}
		return c.fact("memory_limit_change") != "" || strings.Contains(desc, "xmx") || strings.Contains(desc, "heap") || matchLine(heapSettingRE, desc)
	},
	describe: func(h *Hypothesis, sc Scope) string {
		s := h.Subject
		var d string
		lim := h.fact("memory_limit")
		leak := leakRate(h)
		switch {
		case h.fact("sidecar") != "":
			d = fmt.Sprintf("the sidecar container %s of the %s pods is OOMKilled (out of memory, exit code 137)", h.fact("container"), s)
			if lim != "" {
				d += fmt.Sprintf(" at its memory limit of %s", lim)
			}
			d += fmt.Sprintf(", not the application container %s, which keeps running", h.fact("app_container"))
			if r := h.fact("ready"); r != "" {
				d += fmt.Sprintf(": the pods show READY %s while %s restarts", r, h.fact("container"))
			}
			d += h.clause("; it grows because ", "grows")
		case h.fact("host") != "" && h.fact("process") != "":
			d = fmt.Sprintf("the %s process on host %s is killed by the kernel OOM killer (out of memory)", h.fact("process"), h.fact("host"))
			if u := h.fact("unit"); u != "" && u != h.fact("process") {
				d = fmt.Sprintf("the %s service (its %s process) on host %s is killed by the kernel OOM killer (out of memory)", u, h.fact("process"), hostOfLogSubject(h.fact("host")))
			}
			if dep := processDependency(h.fact("process")); dep != "" {
				d = fmt.Sprintf("%s is down: %s", capitalizeName(dep), d)
			}
			if hostGaveUp(h) {
				d += " and systemd gave up restarting it (start request repeated too quickly)"
			}
			d += oomVictimClause(h)
		case jvmHeapOverLimit(h) != "":
			d = fmt.Sprintf("%s containers are OOMKilled (out of memory, exit code 137): %s, so the JVM grows past the limit and the kernel kills it (no Java OutOfMemoryError)", s, jvmHeapOverLimit(h))
		case h.fact("heap_over_limit") != "":
			d = describeHeapOverLimit(h)
		case h.fact("spark_overhead") != "":
			d = describeSparkOverhead(h)
		case loadSurgeOf(h) != nil && (h.Trigger == nil || !fitsMechanism(h, h.Trigger)):
			ls := loadSurgeOf(h)
			d = fmt.Sprintf("%s containers are OOMKilled (out of memory, exit code 137): a load surge (~%s× %s, %s → %s in total from %s) drives their memory past the limit", s, ls.fact("ratio"), loadWord(ls.fact("metric")), ls.fact("baseline"), ls.fact("peak"), hm(ls.Time))
			if lim != "" {
				d += fmt.Sprintf(" of %s", lim)
			}
			d += "; memory rose together with the load, not as a steady leak"
		case leak != "":
			d = fmt.Sprintf("%s has a memory leak: its working set grows steadily by ~%s until the containers are OOMKilled (out of memory, exit code 137)", s, leak)
			if lim != "" {
				d += fmt.Sprintf(" at the memory limit of %s", lim)
			}
		default:
			d = fmt.Sprintf("%s containers are OOMKilled: the process runs out of memory (exit code 137)", s)
			if lim != "" {
				d += fmt.Sprintf(" and is killed when it exceeds its memory limit of %s", lim)
			} else if h.top().Source != SrcLogs {
				d += " (no memory limit is set, so the node's memory ran out)"
			}
		}
		if n := restartsOf(h); n > 0 {
			if c := h.fact("sidecar"); c != "" {
				d += fmt.Sprintf("; %s restarts repeatedly (%s)", c, plural(n, "restart", "restarts"))
			} else if h.fact("crashloop") != "" {
				d += fmt.Sprintf("; the pods restart repeatedly (%s, CrashLoopBackOff)", plural(n, "restart", "restarts"))
			} else {
				d += fmt.Sprintf("; the containers were restarted (%s)", plural(n, "restart", "restarts"))
			}
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		s := h.Subject
		lim := h.fact("memory_limit")
		r.rollback()
		if h.fact("host") != "" && h.fact("process") != "" && oomVictimClause(h) != "" {
			job := orWord(h.fact("cron"), h.fact("invoker"))
			r.add(finding.PriorityHigh, fmt.Sprintf("Cap or move the memory-hungry job (%s) off host %s (a systemd MemoryMax= or its own cgroup, another host, or hours apart from the service), so the OOM killer stops choosing %s", job, hostOfLogSubject(h.fact("host")), orWord(h.fact("unit"), h.fact("process"))))
			r.add(finding.PriorityMedium, fmt.Sprintf("Protect %s from the OOM killer (OOMScoreAdjust= in its unit) and size the host's memory for everything scheduled on it", orWord(h.fact("unit"), h.fact("process"))))
			r.add(finding.PriorityLow, "Alert on host memory available and on kernel OOM kills, naming the process that invoked the OOM killer")
			return
		}
		if h.fact("host") != "" && h.fact("process") != "" {
			r.add(finding.PriorityHigh, fmt.Sprintf("Restart %s on %s and give the host more memory, or cap its memory use (e.g. maxmemory and an eviction policy)", h.fact("process"), h.fact("host")))
			r.add(finding.PriorityMedium, fmt.Sprintf("Find what grew the memory of %s and make its callers degrade gracefully when it is down", h.fact("process")))
			r.add(finding.PriorityLow, "Alert on host memory use and on the dependency's availability")
			return
		}
		if c := h.fact("sidecar"); c != "" {
			r.add(finding.PriorityHigh, fmt.Sprintf("Raise the memory limit of the sidecar %s of %s (currently %s) and bound what it holds in memory (its buffer size, a filesystem buffer, a retry limit) so a slow destination cannot grow it past the limit", c, s, orWord(lim, "unset")))
			if d := h.fact("destination"); d != "" {
				r.add(finding.PriorityMedium, fmt.Sprintf("Find why %s rejects or slows the writes of %s (%s) and fix it there: the sidecar's backlog is its consequence", d, c, orWord(h.fact("refusal"), "retries")))
			}
			r.add(finding.PriorityLow, fmt.Sprintf("Alert on the restarts and memory of the sidecar %s apart from the application container %s", c, orWord(h.fact("app_container"), s)))
			return
		}
		if x := jvmHeapOverLimit(h); x != "" {
			r.add(finding.PriorityHigh, fmt.Sprintf("Set the JVM heap of %s below its container memory limit (%s): -Xmx at most ~75%% of the limit, or -XX:MaxRAMPercentage=75 instead of a fixed -Xmx; or raise the limit above the heap plus off-heap memory", s, x))
			r.add(finding.PriorityMedium, "Size JVM heaps from the container limit (MaxRAMPercentage) rather than fixed -Xmx values in config")
			r.add(finding.PriorityLow, "Validate in CI that -Xmx stays below the container memory limit")
			return
		}
		if h.fact("heap_over_limit") != "" {
			recommendHeapOverLimit(h, r)
			return
		}
		if h.fact("spark_overhead") != "" {
			recommendSparkOverhead(h, r)
			return
		}
		if leakRate(h) != "" {
			r.add(finding.PriorityHigh, fmt.Sprintf("Restart %s before it reaches its memory limit (or raise the limit from %s) to buy time", s, orWord(lim, "its current value")))
			r.add(finding.PriorityMedium, fmt.Sprintf("Find the memory leak in %s (heap profile of an instance after an hour: unbounded caches, maps, buffers)", s))
			r.add(finding.PriorityLow, fmt.Sprintf("Alert on the growth of the memory working set of %s, not only on OOMKilled restarts", s))
			return
		}
		if lim != "" {
			r.add(finding.PriorityHigh, fmt.Sprintf("Raise the memory limit of %s (currently %s) so the pods stop being OOMKilled, e.g. to twice the current limit", s, lim))
		} else {
			r.add(finding.PriorityHigh, fmt.Sprintf("Set a memory request and limit on %s sized to its working set", s))
		}
		r.add(finding.PriorityMedium, fmt.Sprintf("Profile the memory use of %s (heap dumps, allocation profiles) to find the leak or growth behind the out of memory kills", s))
		r.add(finding.PriorityLow, fmt.Sprintf("Alert on container memory working set above 90%% of the limit and on OOMKilled restarts of %s", s))
	},
}

// killedByOOM reports whether the container's latest termination, in the
// window, was the OOM killer's: that is what it is, whatever it waits for.
func (c *containerState) killedByOOM() bool {
	t := c.Term
	return t != nil && t.Reason == "OOMKilled" && c.Window.recent(t.FinishedAt.Time)
}

// oomContainer judges a container the OOM killer killed.
func oomContainer(c *containerState) []Finding {
	if !c.killedByOOM() {
		return nil
	}
	term, cs, spec, cobj := c.Term, c.Status, c.Spec, c.Object
	f := c.Base
	f.Kind, f.Severity, f.Weight = KindOOMKilled, SevCritical, 0.95
	f.Time = term.FinishedAt.Time
	if f.Time.IsZero() {
		f.Time = term.StartedAt.Time
	}
	lim := memLimit(spec)
	f.Summary = fmt.Sprintf("%s OOMKilled (exit code %d), %s", cobj, term.ExitCode, plural(int(cs.RestartCount), "restart", "restarts"))
	ev := fmt.Sprintf("%s last terminated with reason OOMKilled, exit code %d, at %s; restart count %d", cobj, term.ExitCode, ts(term.FinishedAt.Time), cs.RestartCount)
	f.Evidence = []string{ev}
	if lim != "" {
		req := memRequest(spec)
		s := fmt.Sprintf("container %s memory limit is %s", cs.Name, lim)
		if req != "" {
			s += fmt.Sprintf(" (request %s)", req)
		}
		f.Evidence = append(f.Evidence, s)
	} else {
		f.Evidence = append(f.Evidence, fmt.Sprintf("container %s has no memory limit: the node's memory ran out", cs.Name))
	}
	if c.waitingFor("CrashLoopBackOff") {
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s is in CrashLoopBackOff", cobj))
		f.setFact("crashloop", "true")
	}
	f.setFact("memory_limit", lim)
	f.setFact("memory_request", memRequest(spec))
	// How long the container ran before the kill: minutes say its memory
	// reaches the limit as soon as it works, hours that something grows.
	if !term.StartedAt.IsZero() && term.FinishedAt.After(term.StartedAt.Time) {
		f.setFact("ran_for", term.FinishedAt.Sub(term.StartedAt.Time).Round(time.Second).String())
	}
	f.setFact("container", cs.Name)
	f.setFact("restarts", strconv.Itoa(int(cs.RestartCount)))
	if spec != nil {
		f.setFact("image", spec.Image)
	}
	sidecarOOM(&f, c)
	if f.fact("sidecar") == "" {
		var lines []string
		for _, l := range c.LastLines {
			lines = append(lines, l.Text)
		}
		followHeapCap(&f, spec, lines)
	}
	return []Finding{f}
}

// sidecarOOM marks an OOM kill of a pod's sidecar (a log shipper, a proxy,
// an agent) while its application container keeps running: the pods show
// READY 1/2 and restart counts climb, but the application is not the
// process that runs out of memory. What the sidecar's last lines say of
// its output (a destination refusing its writes, retries) is why it grows:
// a shipper keeps what it could not send in memory.
func sidecarOOM(f *Finding, c *containerState) {
	p, name := c.Pod, c.Status.Name
	if len(p.Status.ContainerStatuses) < 2 {
		return
	}
	app := ""
	if len(p.Spec.Containers) > 0 {
		app = p.Spec.Containers[0].Name
	}
	wl := WorkloadOfPod(p)
	if slices.ContainsFunc(p.Spec.Containers, func(sc corev1.Container) bool { return sc.Name == wl }) {
		app = wl
	}
	if app == "" || app == name {
		return
	}
	ready, running := 0, false
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Ready {
			ready++
		}
		if cs.Name == app && cs.State.Running != nil {
			running = true
		}
	}
	if !running {
		return
	}
	f.setFact("sidecar", name)
	f.setFact("app_container", app)
	f.setFact("ready", fmt.Sprintf("%d/%d", ready, len(p.Status.ContainerStatuses)))
	f.Evidence = append(f.Evidence, fmt.Sprintf("container %s of pod %s/%s keeps running; the pod's ready containers: %d/%d", app, p.Namespace, p.Name, ready, len(p.Status.ContainerStatuses)))
	var lines []string
	for _, l := range c.LastLines {
		lines = append(lines, l.Text)
	}
	if g, dest, refusal, ev := backlogGrowth(lines); g != "" {
		f.setFact("grows", g)
		f.setFact("destination", dest)
		f.setFact("refusal", refusal)
		f.Evidence = append(f.Evidence, fmt.Sprintf("log of %s before it was killed: %s", name, quote(ReadableLine(ev), 240)))
	}
}

var (
	// shipperRetryRE is a shipper or exporter that could not send and
	// keeps the data to retry: Fluent Bit, Fluentd, Vector, Logstash,
	// the OpenTelemetry Collector, Promtail.
	shipperRetryRE = regexp.MustCompile(`(?i)failed to flush (?:chunk|the buffer)|retry in \d+ ?s|will retry|retrying (?:failed action|after|request)|Exporting failed|sending queue is full|buffer space has too many data|BufferOverflowError|error sending batch`)
	// shipperRefusalRE is the destination refusing the writes: too many
	// requests, rejected execution, unavailable.
	shipperRefusalRE = regexp.MustCompile(`(?i)(?:HTTP )?status[=: ]+(429|503)|\b(429) Too Many Requests|(es_rejected_execution_exception|cluster_block_exception|TooManyRequests|ResourceExhausted)|response code:? (429|503)`)
	// shipperDestRE names the output or host a shipper writes to.
	shipperDestRE = regexp.MustCompile(`\[output:([\w-]+):|(?i)\b(?:host|endpoint|url)[=:]\s*"?(?:https?://)?([\w.-]+)|\bto (?:https?://)?([a-z][\w.-]+\.[a-z][\w.-]*)`)
)

// backlogGrowth reads from a sidecar's last lines why its memory grows: a
// destination that refuses its writes and the retries it keeps in memory.
// It returns the explanation, the destination, the refusal and the line
// that shows it ("" when the lines do not say).
func backlogGrowth(lines []string) (why, dest, refusal, line string) {
	retries := 0
	for _, l := range lines {
		if matchLine(shipperRetryRE, l) {
			retries++
		}
		if m := findSubmatch(shipperRefusalRE, l); m != nil && refusal == "" {
			for _, g := range m[1:] {
				if g != "" {
					refusal = g
					break
				}
			}
			line = l
		}
		if dest == "" {
			if m := findSubmatch(shipperDestRE, l); m != nil {
				dest = orWord(m[1], orWord(m[2], m[3]))
			}
		}
	}
	if retries == 0 {
		return "", "", "", ""
	}
	what := "its destination"
	if dest != "" {
		what = "its destination " + dest
	}
	if refusal != "" {
		why = fmt.Sprintf("%s refuses its writes (%s) and it keeps the data it could not send in memory to retry (%s)", what, refusal, plural(retries, "retry", "retries"))
		if strings.Contains(refusal, "429") || strings.Contains(strings.ToLower(refusal), "rejected") || strings.Contains(refusal, "TooMany") {
			why = fmt.Sprintf("%s throttles its writes (%s) and it keeps the data it could not send in memory to retry (%s)", what, refusal, plural(retries, "retry", "retries"))
		}
	} else {
		why = fmt.Sprintf("it cannot send to %s and keeps the data in memory to retry (%s)", what, plural(retries, "retry", "retries"))
	}
	for _, l := range lines {
		if line == "" && matchLine(shipperRetryRE, l) {
			line = l
		}
	}
	return why, dest, refusal, line
}

var xmxRE = regexp.MustCompile(`-Xmx(\d+)([kKmMgGtT]?)\b`)

// xmxOf returns the last -Xmx option a text sets ("-Xmx3072m") and its
// size in bytes.
func xmxOf(text string) (string, int64) {
	ms := findAllSubmatch(xmxRE, text, -1)
	if len(ms) == 0 {
		return "", 0
	}
	m := ms[len(ms)-1]
	n, _ := strconv.ParseInt(m[1], 10, 64)
	switch strings.ToLower(m[2]) {
	case "k":
		n <<= 10
	case "m":
		n <<= 20
	case "g":
		n <<= 30
	case "t":
		n <<= 40
	}
	return m[0], n
}

// xmxOfContainer reads the JVM heap size a container sets in its
// arguments or in JAVA_TOOL_OPTIONS / JAVA_OPTS / _JAVA_OPTIONS.
func xmxOfContainer(c *corev1.Container) string {
	text := strings.Join(c.Command, " ") + " " + strings.Join(c.Args, " ")
	for _, e := range c.Env {
		if strings.Contains(strings.ToUpper(e.Name), "JAVA") || strings.Contains(strings.ToUpper(e.Name), "JVM") {
			text += " " + e.Value
		}
	}
	x, _ := xmxOf(text)
	return x
}

var oomProcRE = regexp.MustCompile(`(?i)killed process \d+ \(([^)]+)\)`)

// oomWorkload names the workload a node's OOM event is about: the killed
// process when a workload has its name, else the one workload on that node
// with an OOMKilled container.
func oomWorkload(msg, node string, pods []corev1.Pod) string {
	proc := ""
	if m := findSubmatch(oomProcRE, msg); m != nil {
		proc = strings.ToLower(m[1])
	}
	var onNode []string
	for i := range pods {
		p := &pods[i]
		wl := WorkloadOfPod(p)
		if proc != "" && (strings.EqualFold(wl, proc) || strings.HasPrefix(proc, wl) || strings.HasPrefix(wl, proc) && len(proc) >= 5) {
			return wl
		}
		if p.Spec.NodeName != node {
			continue
		}
		for _, cs := range p.Status.ContainerStatuses {
			if t := cs.LastTerminationState.Terminated; t != nil && t.Reason == "OOMKilled" && !slices.Contains(onNode, wl) {
				onNode = append(onNode, wl)
			}
		}
	}
	if len(onNode) == 1 {
		return onNode[0]
	}
	return ""
}
