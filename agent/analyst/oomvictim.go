package analyst

import (
	"regexp"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
)

// The kernel OOM killer on a host picks its victim by badness, not by
// who asked for memory: its lines name the victim's systemd unit
// ("oom-kill:...,task_memcg=/system.slice/NAME.service,task=java") and
// the process whose allocation set it off ("python3 invoked
// oom-killer:"). A service killed this way is the victim of another
// process's memory (often a batch job that cron starts beside it), not
// of its own growth.
var (
	oomMemcgUnitRE = regexp.MustCompile(`task_memcg=/(?:[\w.@:-]+/)*([\w@.-]+?)\.(?:service|scope)\b`)
	oomInvokerRE   = regexp.MustCompile(`(?:^|[\s\]:])([\w.:/+-]+) invoked oom-killer:`)
	cronCmdRE      = regexp.MustCompile(`(?i)\bcron(?:d)?\[\d+\]: \(([\w.@-]+)\) CMD \((.+)\)\s*$`)
)

// oomVictimUnit names the systemd unit whose process the kernel killed
// (its memory cgroup), "" when the line does not say.
func oomVictimUnit(line string) string {
	if m := findSubmatch(oomMemcgUnitRE, line); m != nil {
		return m[1]
	}
	return ""
}

// oomInvoker names the process whose allocation invoked the OOM killer.
func oomInvoker(line string) string {
	if m := findSubmatch(oomInvokerRE, line); m != nil {
		return m[1]
	}
	return ""
}

// cronBefore finds a cron job of the host's log that ran in the incident
// window within 30 minutes before t: "user: command".
func cronBefore(set LogSet, t time.Time) string {
	for _, tp := range set.Templates {
		if tp.Incident == 0 || tp.FirstIncident.IsZero() || tp.FirstIncident.After(t) || t.Sub(tp.FirstIncident) > 30*time.Minute {
			continue
		}
		for _, l := range tp.Lines() {
			if m := findSubmatch(cronCmdRE, l); m != nil {
				return m[1] + ": " + strings.TrimSpace(stripCronRedirect(m[2]))
			}
		}
	}
	return ""
}

// stripCronRedirect drops the output redirection of a crontab command.
func stripCronRedirect(cmd string) string {
	if i := strings.Index(cmd, " >"); i > 0 {
		return cmd[:i]
	}
	return cmd
}

// oomHostFacts records, on a host log's OOM finding, the victim's unit,
// the invoking process and a cron job just before.
func oomHostFacts(f *Finding, set LogSet, t analysis.LogTemplate, line string) {
	for _, l := range []string{line, t.Example, t.Last} {
		if u := oomVictimUnit(l); u != "" {
			f.setFact("unit", u)
			if u != f.Subject && !containsStr(f.Related, u) {
				f.Related = append(f.Related, u)
			}
		}
		if p := oomInvoker(l); p != "" {
			f.setFact("invoker", p)
		}
	}
	if f.fact("invoker") != "" && f.fact("cron") == "" {
		at := t.FirstIncident
		if at.IsZero() {
			at = t.FirstSeen
		}
		f.setFact("cron", cronBefore(set, at))
	}
}

// oomVictimClause says that the kill was set off by another process than
// the victim, and by which cron job, when the host's log says so.
func oomVictimClause(h *Hypothesis) string {
	inv, victim := h.fact("invoker"), h.fact("process")
	if inv == "" || inv == victim {
		return ""
	}
	d := "; " + inv + ", another process on the host, invoked the OOM killer: the host's memory ran out"
	if c := h.fact("cron"); c != "" {
		d += " while a cron job (" + c + ") ran"
	}
	d += ", and the kernel killed the largest process, not the one that asked for memory"
	return d
}
