package analyst

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
)

// KindFaultInjection is a fault someone injected on purpose and left on: a
// chaos experiment (Chaos Mesh, Litmus, Toxiproxy, Gremlin) or a bare
// `tc qdisc ... netem` delaying, dropping or killing what a service does.
const KindFaultInjection Kind = "fault_injection"

// Fault injection: a chaos tool's own log says it applied a fault to a
// workload's pods (a NetworkChaos "delay" on rate-card's pods, the daemon's
// "tc qdisc add ... netem delay 120ms" in their network namespace) and no
// later line says it recovered them. The target's callers slow down or fail
// with no change of theirs: the fault is the cause, wherever the question
// was asked, and removing the experiment is the fix.
var faultInjection = &mechanism{
	kind:   KindFaultInjection,
	class:  classCause,
	label:  "injected fault (chaos experiment)",
	detect: detectFaultInjection,
	describe: func(h *Hypothesis, sc Scope) string {
		what := orWord(h.fact("fault"), "a fault")
		d := fmt.Sprintf("%s was injected into %s by %s and is still in place", what, h.Subject, orWord(h.fact("tool"), "a chaos tool"))
		if e := h.fact("experiment"); e != "" {
			d += fmt.Sprintf(" (experiment %s)", e)
		}
		if h.fact("recovered") != "" {
			d = fmt.Sprintf("%s was injected into %s by %s (since recovered)", what, h.Subject, orWord(h.fact("tool"), "a chaos tool"))
		}
		d += h.quoteClause(" — ", "line", 220)
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		if e := h.fact("experiment"); e != "" {
			r.high("Stop the chaos experiment %s on %s (delete it, or pause it) and check that its tc/iptables rules are gone from the pods", e, h.Subject)
		} else {
			r.high("Remove the injected fault from %s (the chaos experiment or the tc netem rule) and check the pods are back to normal", h.Subject)
		}
		r.med("Give chaos experiments a duration and a schedule, and scope them to the environment they are meant for")
		r.low("Annotate dashboards and alerts with running chaos experiments")
	},
}

var (
	// faultApplyRE is a line in which a tool says it applied a fault: a
	// tc netem rule added, a chaos object created or applied, a toxic
	// added, an attack started.
	faultApplyRE = regexp.MustCompile(`(?i)\btc\b[^\n]{0,80}\bqdisc (?:add|replace|change)\b[^\n]*\bnetem\b|tc rules applied|\b(?:add|create|apply|inject(?:ed|ing)?)\s+(?:network|pod|stress|io|http|time|dns|kernel)chaos\b|\bapply chaos\b|\bchaos (?:injected|applied)\b|\bInjecting (?:network|pod|cpu|memory|disk)\b|\bAdded toxic\b|\battack (?:started|running)\b`)
	// faultRecoverRE is a line in which it says it took a fault away.
	faultRecoverRE = regexp.MustCompile(`(?i)\btc\b[^\n]{0,80}\bqdisc del\b|tc rules (?:removed|cleared|recovered)|\b(?:remove|delete|recover)\s+(?:network|pod|stress|io|http|time|dns|kernel)?chaos\b|\brecover(?:ed)? chaos\b|\bRemoved toxic\b|\battack (?:halted|stopped|finished)\b|\bchaos (?:recovered|removed)\b`)
	// What was injected.
	faultDelayRE = regexp.MustCompile(`(?i)\bnetem\b[^\n]{0,20}\bdelay\s+(\d+(?:\.\d+)?\s*(?:ms|us|s))|"?action"?\s*[:=]\s*"?delay\b|\blatency\b[^\n]{0,20}?(\d+\s*ms)?`)
	faultLossRE  = regexp.MustCompile(`(?i)\bnetem\b[^\n]{0,20}\bloss\b|"?action"?\s*[:=]\s*"?(?:loss|partition)\b|\bpacket loss\b|\bblackhole\b`)
	faultKillRE  = regexp.MustCompile(`(?i)\bpod[-_ ]?(?:kill|failure)\b|"?action"?\s*[:=]\s*"?pod-(?:kill|failure)\b`)
	faultCPURE   = regexp.MustCompile(`(?i)stresschaos|\bstress(?:ors)?\b[^\n]{0,30}\b(?:cpu|memory)\b|\bcpu[-_ ]hog\b`)
	// Where: a pod named in a field, an id "namespace/pod", an app label
	// of a selector.
	faultPodRE = regexp.MustCompile(`(?i)"?\b(?:pod|pod_name|podName|target)"?\s*[:=]\s*"?([a-z0-9][a-z0-9.-]*[a-z0-9])"?|"?\bid"?\s*[:=]\s*"?[a-z0-9][a-z0-9-]*/([a-z0-9][a-z0-9.-]*[a-z0-9])"?`)
	faultAppRE = regexp.MustCompile(`"(?:app\.kubernetes\.io/name|app|k8s-app|app\.kubernetes\.io/instance)"\s*:\s*"([a-z0-9][a-z0-9.-]*[a-z0-9])"`)
	// The experiment's name and namespace in a chaos object's log line.
	faultNameRE = regexp.MustCompile(`"name"\s*:\s*"([a-z0-9][a-z0-9.-]*[a-z0-9])"`)
	faultNSRE   = regexp.MustCompile(`"namespace"\s*:\s*"([a-z0-9][a-z0-9-]*)"|"id"\s*:\s*"([a-z0-9][a-z0-9-]*)/`)
	// The tool, from the source's name or the line.
	faultToolRE = regexp.MustCompile(`(?i)chaos[-_ ]?mesh|chaos-daemon|chaos-controller|litmus|toxiproxy|gremlin|pumba|chaoskube|\bnetem\b`)
)

// faultTarget names the workload a fault line targets ("" when it names
// none): a pod's workload, or a selector's app label.
func faultTarget(line string) string {
	if m := faultPodRE.FindStringSubmatch(line); m != nil {
		pod := m[1] + m[2]
		if w := podLogOwner(pod); w != "" {
			return w
		}
		return workloadOfName(pod)
	}
	if m := faultAppRE.FindStringSubmatch(line); m != nil {
		return m[1]
	}
	return ""
}

// faultWhat says what a fault line injected.
func faultWhat(line string) string {
	switch {
	case faultLossRE.MatchString(line):
		return "packet loss"
	case faultKillRE.MatchString(line):
		return "pod kills"
	case faultCPURE.MatchString(line):
		return "CPU/memory stress"
	}
	if m := faultDelayRE.FindStringSubmatch(line); m != nil {
		if d := strings.TrimSpace(m[1] + m[2]); d != "" {
			return "a network delay of " + d
		}
		return "a network delay"
	}
	return ""
}

// detectFaultInjection reads the logs of the tools that inject faults:
// each workload a tool applied a fault to, at the first such line, with
// what it injected, unless a later line of the tool recovered it before
// the incident window.
func detectFaultInjection(ev *Gathered, _ []Finding) []Finding {
	type inj struct {
		f        *Finding
		last     time.Time
		recovery time.Time
	}
	byTarget := map[string]*inj{}
	var order []string
	for _, set := range ev.Logs {
		tool := faultToolRE.FindString(set.Source)
		var recoveries []analysis.LogTemplate
		for _, t := range set.Templates {
			for _, line := range []string{t.Example, t.Last} {
				if line == "" {
					continue
				}
				if faultRecoverRE.MatchString(line) {
					recoveries = append(recoveries, t)
					break
				}
				if !faultApplyRE.MatchString(line) {
					continue
				}
				target := faultTarget(line)
				if target == "" {
					continue
				}
				if tool == "" {
					tool = faultToolRE.FindString(line)
				}
				x := byTarget[target]
				if x == nil {
					f := &Finding{Kind: KindFaultInjection, Subject: target, Object: set.Origin + " " + set.Source, Namespace: set.Namespace,
						Time: t.FirstSeen, Severity: SevCritical, Weight: 0.9, Source: set.Origin, Related: []string{set.Subject}, Facts: map[string]string{}}
					x = &inj{f: f}
					byTarget[target] = x
					order = append(order, target)
				}
				f := x.f
				if !t.FirstSeen.IsZero() && (f.Time.IsZero() || t.FirstSeen.Before(f.Time)) {
					f.Time = t.FirstSeen
				}
				if t.LastSeen.After(x.last) {
					x.last = t.LastSeen
				}
				if m := faultNSRE.FindStringSubmatch(line); m != nil && f.fact("namespace") == "" {
					f.setFact("namespace", m[1]+m[2])
					f.Namespace = m[1] + m[2]
				}
				// The line that says what was injected, with its size, is
				// the one to quote.
				what := faultWhat(line)
				if what != "" && strings.ContainsAny(what, "0123456789") && !strings.ContainsAny(f.fact("fault"), "0123456789") {
					f.Facts["fault"], f.Facts["line"] = what, line
				}
				f.setFact("fault", what)
				f.setFact("tool", strings.ToLower(tool))
				f.setFact("line", line)
				if m := faultNameRE.FindStringSubmatch(line); m != nil {
					f.setFact("experiment", m[1])
				}
				if len(f.Evidence) < 3 {
					f.Evidence = append(f.Evidence, fmt.Sprintf("%s %s logged %d× from %s: %s", set.Origin, set.Source, t.Count, ts(t.FirstSeen), quote(ReadableLine(line), 240)))
				}
			}
		}
		// A recovery of the same target after the last injection line.
		for _, r := range recoveries {
			for _, line := range []string{r.Example, r.Last} {
				if x := byTarget[faultTarget(line)]; x != nil && r.LastSeen.After(x.last) {
					x.recovery = r.LastSeen
				}
			}
		}
	}
	var out []Finding
	for _, target := range order {
		x := byTarget[target]
		f := x.f
		if !x.recovery.IsZero() {
			if x.recovery.Before(ev.Window.Start) {
				continue // over before the incident
			}
			f.setFact("recovered", ts(x.recovery))
			f.Weight = 0.6
		}
		f.Summary = fmt.Sprintf("%s injected %s into %s from %s", orWord(f.fact("tool"), "a chaos tool"), orWord(f.fact("fault"), "a fault"), target, hm(f.Time))
		out = append(out, *f)
	}
	return out
}
