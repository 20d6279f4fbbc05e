package kubetext

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// logs reads the output of kubectl logs: every line is a log line.
func (p *parser) logs(c *command, out []string, line int) {
	// A count of log lines (| grep -c PATTERN, | wc -l) is no log: kept as
	// text with the command, whose pattern says what was counted (the
	// requests of one client, the errors of one kind).
	if c.piped && logCountRe.MatchString(c.text) && len(out) == 1 && countRe.MatchString(strings.TrimSpace(out[0])) {
		p.keepText(c.text, c, out, line)
		if n := len(p.res.Outputs); n > 0 && p.res.Outputs[n-1].Line == line && len(c.args) > 0 {
			p.res.Outputs[n-1].Target = c.args[0]
		}
		return
	}
	if p.prefixedLogs(c, out, line) {
		return // --prefix: each line names its pod and container
	}
	pod, container := "", c.container
	switch len(c.args) {
	case 0:
		p.skip(line, c.text, "kubectl logs without a pod name")
		return
	case 1:
		pod = c.args[0]
	default:
		pod = c.args[0]
		if container == "" {
			container = c.args[1] // kubectl logs POD CONTAINER
		}
	}
	// kubectl's own lines before the log: the container it defaulted to,
	// the pod it chose among a workload's.
	chosen := ""
	for len(out) > 0 {
		t := strings.TrimSpace(out[0])
		if m := defaultedRe.FindStringSubmatch(t); m != nil {
			if container == "" {
				container = m[1]
			}
		} else if m := foundPodsRe.FindStringSubmatch(t); m != nil {
			chosen = m[1]
		} else {
			break
		}
		out, line = out[1:], line+1
	}
	if flagOn(c, "--all-containers") && c.flags["-l"] == "" && c.flags["--selector"] == "" && !flagOn(c, "--all-pods") {
		// every container of one pod, one after another with nothing
		// between them: the pod's log, the container of each line unknown
		container = ""
	} else if c.flags["-l"] != "" || c.flags["--selector"] != "" || flagOn(c, "--all-containers") || flagOn(c, "--all-pods") {
		p.skip(line, c.text, "logs of several pods or containers are mixed: not read as one container's log (kept as text)")
		p.keepText(c.text, c, out, line)
		if n := len(p.res.Outputs); n > 0 && p.res.Outputs[n-1].Line == line {
			p.res.Outputs[n-1].Target = pod
		}
		return
	}
	workload := ""
	if k, n, ok := strings.Cut(pod, "/"); ok {
		pod = n
		if kind := kindOf(k); kind != "Pod" {
			// kubectl logs deploy/NAME reads one of the workload's pods.
			workload, pod = kind+"/"+n, chosen
			if kind == "" {
				p.skip(line, c.text, "logs of "+k+"/"+n+": the kind is not known (kept as text)")
				p.keepText(c.text, c, out, line)
				return
			}
		}
	}
	if workload == "" && (pod == "" || strings.HasPrefix(pod, "-")) {
		p.skip(line, c.text, "kubectl logs without a pod name")
		return
	}
	if len(out) == 0 {
		return
	}
	p.exportedEvents(out) // an event exporter's log holds events
	room := MaxLogLines - p.logLines
	if room <= 0 {
		p.skip(line, c.text, fmt.Sprintf("more than %d log lines: the rest are dropped", MaxLogLines))
		return
	}
	if len(out) > room {
		p.skip(line, c.text, fmt.Sprintf("more than %d log lines: the rest are dropped", MaxLogLines))
		out = out[:room]
	}
	p.logLines += len(out)
	l := Log{Namespace: c.ns(), Pod: pod, Container: container, Previous: c.previous, Line: line, Lines: append([]string(nil), out...)}
	if pod == "" {
		if len(p.workloadLogs) >= MaxAbsent {
			p.skip(line, c.text, fmt.Sprintf("more than %d logs of workloads: the rest are dropped", MaxAbsent))
			p.logLines -= len(l.Lines)
			return
		}
		p.workloadLogs = append(p.workloadLogs, workloadLog{Log: l, workload: workload, command: c.text})
		return
	}
	p.res.Logs = append(p.res.Logs, l)
}

// logCountRe is a pipe that counts the lines it gets: grep -c (-ic,
// --count), wc -l.
var logCountRe = regexp.MustCompile(`\|\s*(?:grep|egrep|fgrep|zgrep|rg)\b[^|]*(?:\s-[A-Za-z]*c[A-Za-z]*|\s--count)(?:\s|$)|\|\s*wc\s+-l\s*$`)

// countRe is a count's output: one whole number.
var countRe = regexp.MustCompile(`^\d+$`)

// foundPodsRe is kubectl's note when it reads the logs of one of a
// workload's pods.
var foundPodsRe = regexp.MustCompile(`^Found \d+ pods, using pod/(\S+)$`)

// workloadLog is a kubectl logs KIND/NAME output whose pod kubectl did not
// name.
type workloadLog struct {
	Log
	workload string // Deployment/web
	command  string
}

// podSuffix is what follows a workload's name in its pods' names, by kind.
var podSuffix = map[string]*regexp.Regexp{
	"Deployment":  regexp.MustCompile(`^[a-z0-9]{4,10}-[a-z0-9]{5}$`),
	"StatefulSet": regexp.MustCompile(`^\d+$`),
	"DaemonSet":   regexp.MustCompile(`^[a-z0-9]{5}$`),
	"ReplicaSet":  regexp.MustCompile(`^[a-z0-9]{5}$`),
	"Job":         regexp.MustCompile(`^[a-z0-9]{5}$`),
}

// resolveWorkloadLogs gives each kubectl logs KIND/NAME output the pod it
// came from when the transcript shows exactly one pod of that workload (by
// the names the controllers give); otherwise the output is kept as text,
// attributed to the workload.
func (p *parser) resolveWorkloadLogs() {
	if len(p.workloadLogs) == 0 {
		return
	}
	// The pods by the names their controllers could have: the name
	// without its last one or two "-" parts, in its namespace and in any
	// ("*"). Each workload's candidates are worked out once, so the cost
	// stays linear in the pods and the logs.
	byPrefix := map[string][]objKey{}
	for k := range p.objs {
		if k.kind != "Pod" {
			continue
		}
		name := k.name
		for range 2 {
			i := strings.LastIndexByte(name, '-')
			if i <= 0 {
				break
			}
			name = name[:i]
			byPrefix[k.ns+"/"+name] = append(byPrefix[k.ns+"/"+name], k)
			byPrefix["*/"+name] = append(byPrefix["*/"+name], k)
		}
	}
	done := map[string][]objKey{}
	for _, wl := range p.workloadLogs {
		kind, name, _ := strings.Cut(wl.workload, "/")
		ns := wl.Namespace
		if ns == "" {
			ns = "*"
		}
		key := kind + "/" + ns + "/" + name
		found, ok := done[key]
		if re := podSuffix[kind]; re != nil && !ok {
			for _, k := range byPrefix[ns+"/"+name] {
				if rest, ok := strings.CutPrefix(k.name, name+"-"); ok && re.MatchString(rest) {
					found = append(found, k)
				}
			}
			slices.SortFunc(found, func(a, b objKey) int { return strings.Compare(a.ns+"/"+a.name, b.ns+"/"+b.name) })
			found = slices.CompactFunc(found, func(a, b objKey) bool { return a == b })
			done[key] = found
		}
		if len(found) == 1 {
			wl.Log.Pod = found[0].name
			if wl.Log.Namespace == "" {
				wl.Log.Namespace = found[0].ns
			}
			p.res.Logs = append(p.res.Logs, wl.Log)
			continue
		}
		p.logLines -= len(wl.Lines) // counted again as output lines
		p.skip(wl.Line, wl.command, fmt.Sprintf("logs of %s: the transcript shows %d of its pods, so the pod is not known (kept as text)", wl.workload, len(found)))
		o := Output{Line: wl.Line, Command: wl.command, Run: wl.command, Namespace: wl.Namespace, Target: strings.ToLower(kind) + "/" + name,
			Container: wl.Container, ExitCode: -1, Lines: wl.Lines}
		p.addOutput(o)
	}
}

// flagOn reports a boolean flag given bare or as =true.
func flagOn(c *command, name string) bool {
	v, ok := c.flags[name]
	return ok && v != "false"
}

// top reads kubectl top pod|node tables.
func (p *parser) top(c *command, out []string, first int) {
	if len(c.args) == 0 {
		p.skip(first-1, c.text, "kubectl top without pod or node")
		return
	}
	kind := kindOf(c.args[0])
	if kind != "Pod" && kind != "Node" {
		p.skip(first-1, c.text, "kubectl top "+c.args[0]+" is not read")
		return
	}
	t := parseTable(out, first, MaxObjects)
	if t == nil || t.col("CPU(cores)") < 0 {
		p.skip(first-1, c.text, "no CPU(cores) column in the output")
		return
	}
	for i, row := range t.rows {
		u := Usage{Kind: kind, Name: t.get(row, "NAME"), CPUPercent: -1, MemoryPercent: -1, Time: p.ref, Line: t.lines[i]}
		if kind == "Pod" {
			u.Namespace = c.ns()
			if ns := t.get(row, "NAMESPACE"); ns != "" {
				u.Namespace = ns
			}
			if pod := t.get(row, "POD"); pod != "" {
				u.Container, u.Name = u.Name, pod
			}
		}
		if t.get(row, "CPU(cores)") == "<unknown>" || strings.Trim(strings.Join(row, ""), "_ ") == "" || u.Name == "" && len(p.res.Usage) > 0 {
			continue // no metrics for it yet, or the --sum line and total
		}
		cpu, err1 := resource.ParseQuantity(t.get(row, "CPU(cores)"))
		mem, err2 := resource.ParseQuantity(t.get(row, "MEMORY(bytes)"))
		if u.Name == "" || err1 != nil || err2 != nil {
			p.skip(t.lines[i], c.text, "top row not understood")
			continue
		}
		u.CPU, u.Memory = cpu, mem
		u.CPUPercent = percent(t.get(row, "CPU%", "CPU(%)"))
		u.MemoryPercent = percent(t.get(row, "MEMORY%", "MEMORY(%)"))
		if len(p.res.Usage) >= MaxObjects {
			return
		}
		p.res.Usage = append(p.res.Usage, u)
	}
}

func percent(s string) int {
	n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(s), "%"))
	if err != nil || !strings.HasSuffix(strings.TrimSpace(s), "%") {
		return -1
	}
	return n
}

// prefixRe is the prefix kubectl logs --prefix puts on each line.
var prefixRe = regexp.MustCompile(`^\[pod/([^/\]]+)/([^\]]+)\] ?(.*)$`)

// prefixedLogs reads the output of kubectl logs --prefix (with -l,
// --all-containers or a workload): every line starts with
// "[pod/POD/CONTAINER] ", so it is that container's log line. It reports
// whether it read the output (all its non-blank lines carry the prefix).
func (p *parser) prefixedLogs(c *command, out []string, line int) bool {
	if !flagOn(c, "--prefix") {
		return false
	}
	for _, l := range out {
		if strings.TrimSpace(l) != "" && !prefixRe.MatchString(l) {
			return false
		}
	}
	idx := map[[2]string]int{}
	for _, l := range out {
		m := prefixRe.FindStringSubmatch(l)
		if m == nil || p.logLines >= MaxLogLines {
			continue
		}
		k := [2]string{m[1], m[2]}
		i, ok := idx[k]
		if !ok {
			i = len(p.res.Logs)
			idx[k] = i
			p.res.Logs = append(p.res.Logs, Log{Namespace: c.ns(), Pod: m[1], Container: m[2], Previous: c.previous, Line: line})
		}
		p.res.Logs[i].Lines = append(p.res.Logs[i].Lines, m[3])
		p.logLines++
	}
	return true
}
