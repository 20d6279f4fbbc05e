package analyst

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A ServiceMonitor (or PodMonitor) the Prometheus Operator does not pick
// up: a Prometheus resource selects the monitors it turns into scrape jobs
// by label (serviceMonitorSelector: matchLabels: release: …), so a monitor
// rendered without that label — a chart's new version that dropped it, a
// monitor written by hand — gives Prometheus no job for the service. Its
// up series end, absent() alerts fire and dashboards show No data, while
// the service serves as before: the monitoring lost it, it is not down.

// KindMonitorUnselected is a ServiceMonitor or PodMonitor that the
// Prometheus selector does not match.
const KindMonitorUnselected Kind = "monitor_unselected"

var monitorUnselected = &mechanism{
	kind:   KindMonitorUnselected,
	class:  classCause,
	label:  "ServiceMonitor not selected by Prometheus (the service itself is up)",
	detect: detectMonitorUnselected,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return (c.Kind == KindDeploy || c.Kind == KindConfigChange) && c.relates(h.Subject)
	},
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("%s is not down: its %s %s is not selected by Prometheus — the %s of %s requires the label %s, which the %s does not carry (its labels: %s) — so Prometheus has no scrape job for %s, its up and other series are gone, dashboards show No data and absent() alerts fire",
			h.Subject, h.fact("monitor_kind"), h.fact("monitor"), h.fact("selector_field"), orWord(h.fact("prometheus"), "the Prometheus resource"),
			h.fact("missing"), h.fact("monitor_kind"), orWord(h.fact("labels"), "none"), h.Subject)
		if s := h.fact("selected"); s != "" {
			d += fmt.Sprintf("; %s, which carries it, is selected", s)
		}
		if s := h.fact("serving"); s != "" {
			d += fmt.Sprintf(". Meanwhile %s keeps serving (%s): the alert and the empty dashboard are the monitoring losing it, not an outage", h.Subject, s)
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Add the label %s to the %s %s (in its chart's values or template) so the Prometheus %s selects it again", h.fact("missing"), h.fact("monitor_kind"), h.fact("monitor"), h.fact("selector_field"))
		r.med("Check the scrape job is back: the target of %s on the Prometheus targets page, up for its job", h.Subject)
		r.low("Lint charts for the monitor labels Prometheus selects on, and alert on a service's traffic as well as on absent(up), so a monitor dropped by the selector is told from an outage")
	},
}

var (
	// monitorSelectorRE opens the selector block of a Prometheus resource.
	monitorSelectorRE = regexp.MustCompile(`^(\s*)(serviceMonitorSelector|podMonitorSelector):\s*(\{\s*\})?\s*$`)
	// yamlKeyValueRE is one "key: value" line of a YAML block.
	yamlKeyValueRE = regexp.MustCompile(`^(\s*)([\w./-]+):\s*"?([^"#]*?)"?\s*$`)
	// kubectlNamespaceRE is the namespace a kubectl command names.
	kubectlNamespaceRE = regexp.MustCompile(`(?:^|\s)(?:-n|--namespace)[= ](\S+)`)
)

// monitorObject is a ServiceMonitor or PodMonitor as printed.
type monitorObject struct {
	kind, name, namespace string
	labels                map[string]string
}

// monitorSelector is the label selector of a Prometheus resource for one
// kind of monitor.
type monitorSelector struct {
	field, prometheus string
	matchLabels       map[string]string
}

func detectMonitorUnselected(ev *Gathered, found []Finding) []Finding {
	monitors := monitorsPrinted(ev.Commands)
	selectors := monitorSelectors(ev.Commands)
	if len(monitors) == 0 || len(selectors) == 0 {
		return nil
	}
	// The services in question: the one asked about and those whose
	// scrape target went down.
	subjects := map[string]bool{}
	if ev.Scope.Service != "" {
		subjects[strings.ToLower(ev.Scope.Service)] = true
	}
	for _, f := range found {
		if f.Kind == KindTargetDown {
			subjects[strings.ToLower(f.Subject)] = true
		}
	}
	var out []Finding
	for _, m := range monitors {
		subject := ""
		for _, n := range []string{m.name, m.labels["app.kubernetes.io/name"], m.labels["app.kubernetes.io/instance"], m.labels["app"]} {
			if n != "" && subjects[strings.ToLower(n)] {
				subject = n
				break
			}
		}
		if subject == "" {
			continue
		}
		field := "serviceMonitorSelector"
		if m.kind == "PodMonitor" {
			field = "podMonitorSelector"
		}
		for _, s := range selectors {
			if s.field != field || len(s.matchLabels) == 0 {
				continue
			}
			var missing []string
			for k, v := range s.matchLabels {
				if m.labels[k] != v {
					missing = append(missing, k+"="+v)
				}
			}
			if len(missing) == 0 {
				continue
			}
			sort.Strings(missing)
			f := Finding{Kind: KindMonitorUnselected, Subject: subject, Namespace: m.namespace, Source: SrcKubernetes,
				Object: m.kind + "/" + m.name, Severity: SevWarning, Weight: 0.9,
				Summary: fmt.Sprintf("the %s %s of %s is not selected by Prometheus (no %s)", m.kind, m.name, subject, strings.Join(missing, ", "))}
			f.Time = seriesEnd(ev, subject)
			if f.Time.IsZero() {
				f.Time = ev.Window.Start
			}
			f.setFact("monitor_kind", m.kind)
			f.setFact("monitor", qualified(m.namespace, m.name))
			f.setFact("selector_field", field)
			f.setFact("prometheus", s.prometheus)
			f.setFact("missing", strings.Join(missing, ", "))
			f.setFact("labels", labelList(m.labels))
			f.Evidence = append(f.Evidence,
				fmt.Sprintf("%s %s has the labels %s: no %s", m.kind, qualified(m.namespace, m.name), orWord(labelList(m.labels), "none"), strings.Join(missing, ", ")),
				fmt.Sprintf("the %s of %s selects %s", field, orWord(s.prometheus, "the Prometheus resource"), labelList(s.matchLabels)))
			for _, o := range monitors {
				if o.kind == m.kind && o.name != m.name && selects(s.matchLabels, o.labels) {
					f.setFact("selected", fmt.Sprintf("%s %s", o.kind, qualified(o.namespace, o.name)))
					f.Evidence = append(f.Evidence, fmt.Sprintf("%s %s carries %s and is selected", o.kind, qualified(o.namespace, o.name), labelList(s.matchLabels)))
					break
				}
			}
			if t := servingAfter(ev.Logs, subject, f.Time); !t.IsZero() {
				f.setFact("serving", fmt.Sprintf("normal lines in its log until %s", hm(t)))
				f.Evidence = append(f.Evidence, fmt.Sprintf("%s logged normal work until %s", subject, hm(t)))
			}
			out = append(out, f)
			break
		}
	}
	return out
}

// selects reports whether every label of a selector is on an object.
func selects(match, labels map[string]string) bool {
	for k, v := range match {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func qualified(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

// labelList prints labels as k=v, sorted.
func labelList(l map[string]string) string {
	var out []string
	for k, v := range l {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

// seriesEnd is when the series of a service's scrape job
// ended before the end of the window: the last sample plus its step.
// Zero when they run on or none is held.
func seriesEnd(ev *Gathered, subject string) time.Time {
	var last time.Time
	var step time.Duration
	for _, s := range metricSeriesOf(ev.Metrics) {
		// The scrape job's own series (an ingress's series of the service
		// are scraped from the ingress and run on).
		if !strings.EqualFold(s.Labels["job"], subject) || len(s.Points) < 2 {
			continue
		}
		p := s.Points[len(s.Points)-1]
		if p.T.After(last) {
			last, step = p.T, p.T.Sub(s.Points[len(s.Points)-2].T)
		}
	}
	if last.IsZero() || !ev.Window.End.IsZero() && !last.Add(5*step).Before(ev.Window.End) {
		return time.Time{}
	}
	return last.Add(step)
}

func metricSeriesOf(sets []MetricSet) []evidence.Series {
	var out []evidence.Series
	for _, s := range metricSeries(sets) {
		out = append(out, s)
	}
	return out
}

// monitorsPrinted reads the ServiceMonitors and PodMonitors a transcript
// printed: as YAML or JSON (get -o yaml, a List of them) or as a table
// with their labels (get --show-labels).
func monitorsPrinted(cmds []evidence.CommandOutput) []monitorObject {
	type meta struct {
		Name      string            `json:"name"`
		Namespace string            `json:"namespace"`
		Labels    map[string]string `json:"labels"`
	}
	type obj struct {
		Kind     string `json:"kind"`
		Metadata meta   `json:"metadata"`
		Items    []struct {
			Kind     string `json:"kind"`
			Metadata meta   `json:"metadata"`
		} `json:"items"`
	}
	var out []monitorObject
	seen := map[string]int{}
	add := func(m monitorObject) {
		k := m.kind + "/" + m.name
		if i, ok := seen[k]; ok {
			if m.namespace == "" {
				m.namespace = out[i].namespace
			}
			out[i] = m
			return
		}
		seen[k] = len(out)
		out = append(out, m)
	}
	isMonitor := func(k string) bool { return k == "ServiceMonitor" || k == "PodMonitor" }
	for _, o := range cmds {
		ns := ""
		if m := findSubmatch(kubectlNamespaceRE, o.Command); m != nil {
			ns = m[1]
		}
		text := strings.Join(o.Lines, "\n")
		if strings.Contains(text, "kind: ServiceMonitor") || strings.Contains(text, "kind: PodMonitor") || strings.Contains(text, `"kind": "ServiceMonitor"`) || strings.Contains(text, `"kind": "PodMonitor"`) {
			var x obj
			if yaml.Unmarshal([]byte(text), &x) == nil {
				if isMonitor(x.Kind) && x.Metadata.Name != "" {
					add(monitorObject{x.Kind, x.Metadata.Name, orWord(x.Metadata.Namespace, ns), orEmpty(x.Metadata.Labels)})
				}
				for _, it := range x.Items {
					if isMonitor(it.Kind) && it.Metadata.Name != "" {
						add(monitorObject{it.Kind, it.Metadata.Name, orWord(it.Metadata.Namespace, ns), orEmpty(it.Metadata.Labels)})
					}
				}
				continue
			}
		}
		// A table with a LABELS column: get servicemonitor --show-labels.
		low := strings.ToLower(o.Command)
		kind := ""
		switch {
		case strings.Contains(low, "servicemonitor") || strings.Contains(low, " smon"):
			kind = "ServiceMonitor"
		case strings.Contains(low, "podmonitor") || strings.Contains(low, " pmon"):
			kind = "PodMonitor"
		}
		if kind == "" || !strings.Contains(low, "--show-labels") || len(o.Lines) < 2 {
			continue
		}
		head := strings.Fields(o.Lines[0])
		if len(head) < 2 || head[len(head)-1] != "LABELS" {
			continue
		}
		nsCol := head[0] == "NAMESPACE"
		for _, l := range o.Lines[1:] {
			fs := strings.Fields(l)
			if len(fs) != len(head) {
				continue
			}
			m := monitorObject{kind: kind, name: fs[0], namespace: ns, labels: map[string]string{}}
			if nsCol {
				m.namespace, m.name = fs[0], fs[1]
			}
			m.name = strings.TrimPrefix(strings.TrimPrefix(m.name, "servicemonitor.monitoring.coreos.com/"), "podmonitor.monitoring.coreos.com/")
			if lv := fs[len(fs)-1]; lv != "<none>" {
				for _, kv := range strings.Split(lv, ",") {
					if k, v, ok := strings.Cut(kv, "="); ok {
						m.labels[k] = v
					}
				}
			}
			if _, ok := seen[m.kind+"/"+m.name]; !ok {
				add(m)
			}
		}
	}
	return out
}

func orEmpty(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// monitorSelectors reads the serviceMonitorSelector and podMonitorSelector
// of a Prometheus resource printed as YAML (whole or a grep of it): their
// matchLabels. A selector with matchExpressions is not read (it is not a
// plain label match).
func monitorSelectors(cmds []evidence.CommandOutput) []monitorSelector {
	var out []monitorSelector
	for _, o := range cmds {
		low := strings.ToLower(o.Command)
		if !strings.Contains(low, "prometheus") {
			continue
		}
		name := ""
		if fs := strings.Fields(o.Command); len(fs) > 0 {
			for i, f := range fs {
				if (strings.EqualFold(f, "prometheus") || strings.EqualFold(f, "prometheuses") || strings.HasPrefix(strings.ToLower(f), "prometheus/") || strings.HasPrefix(strings.ToLower(f), "prometheuses.monitoring.coreos.com")) && i+1 < len(fs) {
					if _, n, ok := strings.Cut(f, "/"); ok {
						name = n
					} else if !strings.HasPrefix(fs[i+1], "-") {
						name = fs[i+1]
					}
					break
				}
			}
		}
		for i := 0; i < len(o.Lines); i++ {
			m := findSubmatch(monitorSelectorRE, o.Lines[i])
			if m == nil || m[3] != "" {
				continue
			}
			ind := len(m[1])
			sel := monitorSelector{field: m[2], prometheus: name, matchLabels: map[string]string{}}
			inLabels, expr := false, false
			labelInd := -1
			for j := i + 1; j < len(o.Lines); j++ {
				kv := findSubmatch(yamlKeyValueRE, o.Lines[j])
				if kv == nil || len(kv[1]) <= ind {
					break
				}
				switch {
				case kv[2] == "matchLabels" && kv[3] == "":
					inLabels, labelInd = true, len(kv[1])
				case kv[2] == "matchExpressions":
					expr = true
				case inLabels && len(kv[1]) > labelInd && kv[3] != "":
					sel.matchLabels[kv[2]] = kv[3]
				default:
					inLabels = false
				}
			}
			if !expr && len(sel.matchLabels) > 0 {
				out = append(out, sel)
			}
		}
	}
	return out
}
