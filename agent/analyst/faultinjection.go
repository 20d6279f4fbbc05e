package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
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
	if m := findSubmatch(faultPodRE, line); m != nil {
		pod := m[1] + m[2]
		if w := podLogOwner(pod); w != "" {
			return w
		}
		return workloadOfName(pod)
	}
	if m := findSubmatch(faultAppRE, line); m != nil {
		return m[1]
	}
	return ""
}

// faultWhat says what a fault line injected.
func faultWhat(line string) string {
	switch {
	case matchLine(faultLossRE, line):
		return "packet loss"
	case matchLine(faultKillRE, line):
		return "pod kills"
	case matchLine(faultCPURE, line):
		return "CPU/memory stress"
	}
	if m := findSubmatch(faultDelayRE, line); m != nil {
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
		tool := findString(faultToolRE, set.Source)
		var recoveries []analysis.LogTemplate
		for _, t := range set.Templates {
			for _, line := range t.Lines() {
				if matchLine(faultRecoverRE, line) {
					recoveries = append(recoveries, t)
					break
				}
				if !matchLine(faultApplyRE, line) {
					continue
				}
				target := faultTarget(line)
				if target == "" {
					continue
				}
				if tool == "" {
					tool = findString(faultToolRE, line)
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
				if m := findSubmatch(faultNSRE, line); m != nil && f.fact("namespace") == "" {
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
				if m := findSubmatch(faultNameRE, line); m != nil {
					f.setFact("experiment", m[1])
				}
				if len(f.Evidence) < 3 {
					f.Evidence = append(f.Evidence, fmt.Sprintf("%s %s logged %d× from %s: %s", set.Origin, set.Source, t.Count, ts(t.FirstSeen), quote(ReadableLine(line), 240)))
				}
			}
		}
		// A recovery of the same target after the last injection line.
		for _, r := range recoveries {
			for _, line := range r.Lines() {
				if x := byTarget[faultTarget(line)]; x != nil && r.LastSeen.After(x.last) {
					x.recovery = r.LastSeen
				}
			}
		}
	}
	out := meshFaults(ev)
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

var (
	// meshFaultFlagsRE is a request a mesh proxy delayed (DI) or aborted
	// (FI) by its HTTP fault filter: Istio's VirtualService fault,
	// Envoy's fault filter, in the access log's response flags.
	meshFaultFlagsRE = regexp.MustCompile(`" [1-5]\d\d (?:[A-Z]{2,4},)*(?:DI|FI)\b`)
	// meshFaultDelayRE is the delay a fault sets, as a VirtualService
	// ("fixedDelay: 5s") or the proxy's route config prints it
	// ("fixedDelay": "5s", "fixed_delay": "5s").
	meshFaultDelayRE = regexp.MustCompile(`(?i)"?fixed_?delay"?\s*:\s*"?(\d+(?:\.\d+)?(?:ms|s|m))`)
	// meshFaultShareRE is the share of requests it applies to: a
	// VirtualService's percentage value, or Envoy's fractional percent.
	meshFaultShareRE = regexp.MustCompile(`(?i)"?(?:value|numerator)"?\s*:\s*(\d+(?:\.\d+)?)`)
	// meshFaultChangeRE is a change that injected latency or errors on
	// purpose: a game day, a chaos or resilience test, a fault.
	meshFaultChangeRE = regexp.MustCompile(`(?i)game ?day|chaos|fault|(?:latency|delay|error|abort) injection|inject(?:ed|ing|s)? (?:latency|delay|errors?|faults?)`)
)

// meshFaults reads faults a service mesh injects by configuration: the
// requests its proxies log with response flag DI (delay injected) or FI
// (fault injected), grouped by the service they were sent to, with the
// delay and share the route's fault sets (a VirtualService or the proxy's
// route config handed over) and the change that put it there (a game
// day, a resilience test), whatever its author meant to undo.
func meshFaults(ev *Gathered) []Finding {
	byTarget := map[string]*Finding{}
	var order []string
	for _, set := range ev.Logs {
		for _, t := range set.Templates {
			line := templateLine(t, meshFaultFlagsRE)
			if line == "" || t.Incident == 0 {
				continue
			}
			r, ok := parseRequestLine(line)
			target := orWord(r.Upstream, upstreamName(r.Host))
			if h, p, cut := strings.Cut(target, ":"); cut && isDigits(p) {
				target = h
			}
			if !ok || target == "" || target == set.Subject {
				continue
			}
			f := byTarget[target]
			if f == nil {
				f = &Finding{Kind: KindFaultInjection, Subject: target, Object: "mesh route to " + target, Namespace: hostNamespace(line, target),
					Time: earliest(t.FirstSeen, t.FirstIncident), Severity: SevWarning, Weight: 0.85, Source: set.Origin, Facts: map[string]string{}}
				byTarget[target] = f
				order = append(order, target)
			}
			if at := earliest(t.FirstSeen, t.FirstIncident); !at.IsZero() && at.Before(f.Time) {
				f.Time = at
			}
			if !slices.Contains(f.Related, set.Subject) {
				f.Related = append(f.Related, set.Subject)
			}
			what := "a delay"
			if strings.Contains(r.Flags, "FI") {
				what = "aborted requests"
			}
			f.setFact("fault", what)
			f.setFact("line", line)
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s's proxy logged %d requests to %s with %s: %s", set.Subject, t.Incident, target, flagsMeaning(r.Flags), quote(ReadableLine(line), 240)))
		}
	}
	var out []Finding
	for _, target := range order {
		f := byTarget[target]
		istio := false
		for _, c := range ev.Commands {
			cmd := strings.ToLower(c.Command)
			istio = istio || strings.HasPrefix(cmd, "istioctl") || strings.Contains(cmd, "virtualservice")
			if !strings.Contains(c.Command, target) && !strings.Contains(strings.Join(c.Lines, "\n"), target) {
				continue
			}
			for _, l := range c.Lines {
				if m := findSubmatch(meshFaultDelayRE, l); m != nil && f.fact("delay") == "" {
					f.setFact("delay", m[1])
					f.Evidence = append(f.Evidence, fmt.Sprintf("%s: the route to %s carries a fault: %s", truncate(c.Command, 120), target, strings.TrimSpace(l)))
				}
				if m := findSubmatch(meshFaultShareRE, l); m != nil && f.fact("delay") != "" && f.fact("share") == "" {
					if v, err := strconv.ParseFloat(m[1], 64); err == nil {
						if strings.Contains(strings.ToLower(l), "numerator") {
							v /= 10000 // of a million, Envoy's default denominator in Istio's config
						}
						f.setFact("share", strconv.FormatFloat(v, 'f', -1, 64)+"%")
					}
				}
			}
		}
		tool := "the proxies' HTTP fault filter"
		if istio || strings.Contains(f.fact("line"), "outbound|") {
			tool = "the mesh (a fault in the VirtualService of " + target + ")"
		}
		f.setFact("tool", tool)
		if d := f.fact("delay"); d != "" && f.fact("fault") == "a delay" {
			what := "a fixed delay of " + d
			if sh := f.fact("share"); sh != "" {
				what += " on " + sh + " of requests"
			}
			f.Facts["fault"] = what
		}
		for _, cs := range [][]evidence.Change{ev.Changes, ev.Earlier} {
			for _, c := range cs {
				if c.Timestamp.After(f.Time) || !matchLine(meshFaultChangeRE, c.Description) || c.Service != target && !strings.Contains(c.Description, target) {
					continue
				}
				f.setFact("experiment", fmt.Sprintf("%s at %s: %s", orWord(c.Revision, c.Service), ts(c.Timestamp), quote(c.Description, 160)))
				f.Evidence = append(f.Evidence, fmt.Sprintf("the change of %s at %s injected it on purpose: %s", c.Service, ts(c.Timestamp), quote(c.Description, 200)))
			}
		}
		f.Summary = fmt.Sprintf("%s injects %s into the calls to %s from %s", tool, f.fact("fault"), target, hm(f.Time))
		out = append(out, *f)
	}
	return out
}
