package kubetext

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// logs reads the output of kubectl logs: every line is a log line.
func (p *parser) logs(c *command, out []string, line int) {
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
	if k, n, ok := strings.Cut(pod, "/"); ok {
		if kindOf(k) != "Pod" {
			p.skip(line, c.text, "logs of "+pod+": the pod is not named")
			return
		}
		pod = n
	}
	if pod == "" || strings.HasPrefix(pod, "-") {
		p.skip(line, c.text, "kubectl logs without a pod name")
		return
	}
	if c.flags["-l"] != "" || c.flags["--selector"] != "" || c.flags["--all-containers"] == "true" {
		p.skip(line, c.text, "logs of several pods or containers are mixed: not read")
		return
	}
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
	p.res.Logs = append(p.res.Logs, Log{Namespace: c.ns(), Pod: pod, Container: container, Previous: c.previous,
		Line: line, Lines: append([]string(nil), out...)})
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
