package analyst

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// CPU throttling: a container held at its CPU limit by the CFS quota (or a
// runtime starved of CPU), so requests slow down without failing. Found in
// the throttled share of CFS periods, in a runtime's starvation warnings,
// and, when an alert states it (CPUThrottlingHigh), as the alert's claim
// confirmed or refuted by the metrics and the container's limit.
var cpuThrottling = &mechanism{
	kind:  KindCPUThrottling,
	class: classCause,
	label: "CPU throttling",
	enrich: func(f *Finding, c *corev1.Container) {
		if proxyThrottled(f) != "" {
			return // the sidecar's limit, not the application's (detectProxyThrottled)
		}
		if q, ok := c.Resources.Limits[corev1.ResourceCPU]; ok {
			f.setFact("cpu_limit", q.String())
			if len(f.Evidence) < 3 {
				f.Evidence = append(f.Evidence, fmt.Sprintf("container %s of %s has a cpu limit of %s", c.Name, f.Subject, q.String()))
			}
		}
	},
	// A JVM or event loop that cannot get CPU time: a symptom of CPU
	// starvation or throttling, not of the database it mentions.
	lines:      regexp.MustCompile(`(?i)thread starvation or clock leap|starvation detected|blocked for more than \d+ ?ms|event loop (lag|blocked)`),
	lineWeight: 0.6,
	detect: func(ev *Gathered, found []Finding) []Finding {
		detectProxyThrottled(ev, found)
		return detectThrottlingClaim(ev, found)
	},
	// Throttling is a limit too low for the load: only a change of the
	// CPU (a limit or request cut) triggers it; a ConfigMap or log-level
	// change just before is a coincidence.
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		d := strings.ToLower(c.fact("description") + " " + c.Summary + " " + c.fact("changes"))
		return c.Kind == KindResourceChange || strings.Contains(d, "cpu") && (strings.Contains(d, "limit") || strings.Contains(d, "request") || strings.Contains(d, "->") || strings.Contains(d, "→"))
	},
	strictTriggers: true,
	describe: func(h *Hypothesis, sc Scope) string {
		if h.fact("sidecar") != "" {
			return describeSidecarThrottled(h)
		}
		lim := h.fact("cpu_limit")
		d := fmt.Sprintf("%s is CPU throttled (CFS quota)", h.Subject)
		if p := proxyThrottled(h.top()); p != "" {
			d = fmt.Sprintf("the %s sidecar of %s, which every request to and from it passes through, is CPU throttled (CFS quota)", p, h.Subject)
			if lim != "" {
				d += fmt.Sprintf(" at the sidecar's cpu limit of %s", lim)
			}
			if a := h.fact("app_limit"); a != "" {
				d += fmt.Sprintf(" (the application container has %s)", a)
			}
		} else if lim != "" {
			d += fmt.Sprintf(" at its cpu limit of %s", lim)
		}
		switch {
		case h.fact("alert") != "" && h.fact("peak") != "":
			d += fmt.Sprintf(": the %s alert is real — %s of its CFS periods were throttled (peak", h.fact("alert"), h.fact("peak"))
			if b := h.fact("baseline"); b != "" {
				d += ", from " + b + " before"
			}
			d += ")"
		case h.fact("peak") != "" && h.fact("metric") != "":
			d += fmt.Sprintf(": %s reached %s (from %s)", h.fact("metric"), h.fact("peak"), orDash(h.fact("baseline")))
		case h.fact("line") != "":
			d += ": the runtime reports CPU starvation — " + quote(ReadableLine(h.fact("line")), 200)
		}
		if hasKind(h.Support, KindLatency) {
			d += "; the throttling causes the latency increase"
			if !hasKind(h.Support, KindErrorRate) {
				d += " (requests are slow, not failing)"
			}
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		if sc := h.fact("sidecar"); sc != "" {
			r.high("Leave the CPU limit of %s's main container %s as it is (it is not throttled); if the alert must stop, raise or remove the %s CPU limit of the sidecar %s (a limit that small throttles any burst of work within a 100 ms CFS period)", h.Subject, h.fact("main"), orWord(h.fact("sidecar_limit"), "small"), sc)
			r.low("Keep CPUThrottlingHigh from paging for containers that use a few millicores (a minimum usage, or excluding the sidecar), so that it fires only when the throttled work is the service's")
			return
		}
		if p := proxyThrottled(h.top()); p != "" {
			if c := h.Trigger; c != nil && c.Kind != KindDeploy {
				r.high("Revert the change that lowered the CPU of the %s sidecars (%s), then restart the pods so they take it", p, truncate(orWord(c.fact("description"), c.Summary), 160))
			}
			r.high("Raise or remove the CPU limit of the %s sidecar of %s (currently %s): per pod (sidecar.istio.io/proxyCPULimit for Istio, config.linkerd.io/proxy-cpu-limit for Linkerd) or in the mesh's injection defaults", p, h.Subject, orWord(h.fact("cpu_limit"), "unknown"))
			r.med("Size sidecar CPU from the busiest workload's proxy at peak, not the average, before cutting mesh-wide defaults")
			r.low("Alert on container_cpu_cfs_throttled_periods_total / container_cpu_cfs_periods_total above 25%% for sidecars as well as applications")
			return
		}
		if c := h.Trigger; c != nil && c.Kind != KindDeploy {
			r.high("Revert the change that lowered the CPU of %s (%s), or raise its CPU limit back", h.Subject, truncate(orWord(c.fact("description"), c.Summary), 160))
		}
		r.high("Raise or remove the CPU limit of %s (currently %s) or scale it out so it stops being CFS-throttled", h.Subject, orWord(h.fact("cpu_limit"), "unknown"))
		r.med("Right-size the CPU requests and limits of %s from its usage at peak, and check the autoscaler targets", h.Subject)
		r.low("Alert on container_cpu_cfs_throttled_periods_total / container_cpu_cfs_periods_total above 25%%")
	},
}

var (
	throttleAlertRE = regexp.MustCompile(`(?i)CPUThrottling|cpu throttl|throttling of cpu|throttled cpu`)
	alertPodRE      = regexp.MustCompile(`(?i)\bpod[= :]+"?([a-z0-9][a-z0-9.-]*[a-z0-9])`)
	alertNameRE     = regexp.MustCompile(`\b[A-Z][A-Za-z0-9]*Throttling[A-Za-z0-9]*\b`)
	cpuChangeRE     = regexp.MustCompile(`(?i)\bcpu\b[^;]*?(\d+(?:\.\d+)?m?)\s*(?:->|→|to)\s*(\d+(?:\.\d+)?m?)\b`)
)

// minThrottled is the share of CFS periods throttled that confirms a
// throttling alert.
const minThrottled = 0.25

// detectThrottlingClaim takes an alert's claim that a container is CPU
// throttled as a hypothesis, and confirms it with the throttled share of
// that workload's CFS periods (new pods included: a series with no
// baseline still shows the share), adding the container's CPU limit.
// Metrics below the bar refute it: no finding.
func detectThrottlingClaim(ev *Gathered, _ []Finding) []Finding {
	sc := ev.Scope
	text, subject := alertClaim(sc, throttleAlertRE)
	if subject == "" {
		return nil
	}
	alert := "CPU throttling"
	if m := findString(alertNameRE, text); m != "" {
		alert = m
	}
	var peak float64
	var onset time.Time
	var matched []evidence.Series
	for _, set := range ev.Metrics {
		if set.Class != MetricCPUThrottle || set.Unit != "%" {
			continue
		}
		for _, s := range set.Series {
			if !strings.EqualFold(SubjectOfLabels(s.Labels), subject) && !strings.HasPrefix(s.Labels["pod"], subject+"-") {
				continue
			}
			matched = append(matched, s)
			for _, p := range s.Points {
				if p.T.After(ev.Window.Start) {
					peak = max(peak, p.V)
				}
				if p.V >= minThrottled && (onset.IsZero() || p.T.Before(onset)) {
					onset = p.T
				}
			}
		}
	}
	// The level before the throttling began.
	before := -1.0
	for _, s := range matched {
		for _, p := range s.Points {
			if !onset.IsZero() && p.T.Before(onset) && (before < 0 || p.V < before) {
				before = p.V
			}
		}
	}
	seenBefore := before >= 0
	before = max(before, 0)
	series := len(matched)
	if series > 0 && peak < minThrottled {
		return nil // the metrics refute the claim
	}
	f := Finding{Kind: KindCPUThrottling, Subject: subject, Object: "alert " + alert, Namespace: sc.Namespace, Time: onset,
		Severity: SevWarning, Weight: 0.7, Source: SrcMetrics}
	f.setFact("alert", alert)
	f.Evidence = []string{fmt.Sprintf("the %s alert states: %s", alert, quote(strings.TrimSpace(sc.Message), 220))}
	if sidecarThrottled(ev, &f, subject, matched) {
		return []Finding{f}
	}
	if series > 0 && !seenBefore {
		// No point before the onset: the level before is not known.
		before = -1
	}
	if series > 0 {
		f.Weight = 0.95
		f.setFact("peak", fmt.Sprintf("%.0f%%", peak*100))
		f.setFact("metric", "container_cpu_cfs_throttled_periods_total / container_cpu_cfs_periods_total")
		if before >= 0 {
			f.setFact("baseline", fmt.Sprintf("%.0f%%", before*100))
			f.Evidence = append(f.Evidence, fmt.Sprintf("the metrics confirm it: %.0f%% of the CFS periods of %s were throttled at the peak (%.0f%% before the window), above %.0f%% since %s", peak*100, subject, before*100, minThrottled*100, ts(onset)))
		} else {
			f.Evidence = append(f.Evidence, fmt.Sprintf("the metrics confirm it: %.0f%% of the CFS periods of %s were throttled at the peak, above %.0f%% since %s", peak*100, subject, minThrottled*100, ts(onset)))
		}
	}
	if lim := cpuLimitOf(ev.K8s, subject); lim != "" {
		f.setFact("cpu_limit", lim)
		f.Evidence = append(f.Evidence, fmt.Sprintf("the containers of %s have a cpu limit of %s", subject, lim))
	} else {
		for _, c := range ev.Changes {
			if strings.EqualFold(c.Service, subject) {
				if m := findSubmatch(cpuChangeRE, c.Description); m != nil {
					f.setFact("cpu_limit", m[2])
				}
			}
		}
	}
	f.Summary = fmt.Sprintf("%s is CPU throttled (%s)", subject, orWord(f.fact("peak"), "as the alert states"))
	if f.Time.IsZero() {
		f.Time = ev.Window.Start
	}
	return []Finding{f}
}

// cpuLimitOf is the CPU limit of a workload's first container with one,
// from its pods or its Deployment.
func cpuLimitOf(k K8sEvidence, workload string) string {
	limit := func(cs []corev1.Container) string {
		for _, c := range cs {
			if q, ok := c.Resources.Limits[corev1.ResourceCPU]; ok {
				return q.String()
			}
		}
		return ""
	}
	for i := range k.Pods {
		if WorkloadOfPod(&k.Pods[i]) == workload {
			if l := limit(k.Pods[i].Spec.Containers); l != "" {
				return l
			}
		}
	}
	for _, d := range k.Deployments {
		if d.Name == workload {
			return limit(d.Spec.Template.Spec.Containers)
		}
	}
	return ""
}

// alertClaim returns the question's text (message, hint and alert) and the
// workload an alert's claim is about when the text makes that claim
// (claim matches it): the asked service, else the workload of the pod the
// alert names; subject is "" when there is no such claim or workload.
func alertClaim(sc Scope, claim *regexp.Regexp) (text, subject string) {
	text = sc.Message + " " + sc.Hint + " " + sc.Alert
	if !matchLine(claim, text) {
		return text, ""
	}
	subject = sc.Service
	if m := findSubmatch(alertPodRE, text); m != nil && subject == "" {
		subject = workloadOfName(m[1])
	}
	return text, subject
}

// containerThrottle is what the metrics say of one container of a
// workload whose throttling an alert claims.
type containerThrottle struct {
	name  string
	peak  float64 // highest share of its CFS periods throttled in the window
	usage float64 // highest mean CPU use of one of its pods in the window, in cores (-1: unknown)
	limit string  // its CPU limit ("" unknown)
	first bool    // the first container of the pod spec
}

// sidecarThrottled reads a throttling claim container by container: when
// the throttled containers are only sidecars (a config reloader, a proxy)
// whose CPU limit is a few millicores, while the workload's main container
// is not throttled, the claim is true of the sidecar and says nothing of
// the service: a container with a 10m limit is throttled in every period
// it wakes up in, whatever little work it does. f then says so.
func sidecarThrottled(ev *Gathered, f *Finding, subject string, matched []evidence.Series) bool {
	byName := map[string]*containerThrottle{}
	var order []string
	for _, s := range matched {
		name := orWord(s.Labels["container"], s.Labels["container_name"]) // cAdvisor before Kubernetes 1.16
		if name == "" || name == "POD" {
			return false // throttling not read per container
		}
		c := byName[name]
		if c == nil {
			c = &containerThrottle{name: name, usage: -1}
			byName[name] = c
			order = append(order, name)
		}
		for _, p := range s.Points {
			if !p.T.Before(ev.Window.Start) {
				c.peak = max(c.peak, p.V)
			}
		}
	}
	if len(order) < 2 {
		return false
	}
	for _, set := range ev.Metrics {
		if !matchLine(cpuUsageRE, set.Name) {
			continue
		}
		for _, s := range set.Series {
			c := byName[orWord(s.Labels["container"], s.Labels["container_name"])]
			if c == nil || !strings.EqualFold(SubjectOfLabels(s.Labels), subject) && !strings.HasPrefix(s.Labels["pod"], subject+"-") {
				continue
			}
			sum, n := 0.0, 0
			for _, p := range s.Points {
				if !p.T.Before(ev.Window.Start) {
					sum += p.V
					n++
				}
			}
			if n > 0 {
				c.usage = max(c.usage, sum/float64(n))
			}
		}
	}
	for _, ctr := range containersOf(ev.K8s, subject) {
		if c := byName[ctr.Name]; c != nil {
			if q, ok := ctr.Resources.Limits[corev1.ResourceCPU]; ok && c.limit == "" {
				c.limit = q.String()
			}
		}
	}
	if cs := containersOf(ev.K8s, subject); len(cs) > 0 {
		if c := byName[cs[0].Name]; c != nil {
			c.first = true
		}
	}
	// The main container: the pod spec's first, else the one named after
	// the workload, else the busiest.
	var main *containerThrottle
	for _, n := range order {
		if byName[n].first {
			main = byName[n]
		}
	}
	if main == nil {
		for _, n := range order {
			if c := byName[n]; c.name == subject || main == nil || c.usage > main.usage && main.name != subject {
				main = c
			}
		}
	}
	if main.peak >= minThrottled {
		return false
	}
	var side []*containerThrottle
	for _, n := range order {
		c := byName[n]
		if c == main || c.peak < minThrottled {
			continue
		}
		// Only a container whose limit is tiny (or whose use is a few
		// millicores) is throttled for want of nothing: a sidecar with a
		// real share of CPU throttled may be the service's problem.
		if milli := milliCores(c.limit); milli < 0 && (c.usage < 0 || c.usage > 0.02) || milli > 100 {
			return false
		}
		side = append(side, c)
	}
	if len(side) == 0 {
		return false
	}
	sc := side[0]
	f.Weight = 0.9
	f.Severity = SevInfo
	f.setFact("sidecar", sc.name)
	f.setFact("main", main.name)
	f.setFact("peak", fmt.Sprintf("%.0f%%", sc.peak*100))
	f.setFact("main_peak", throttleShare(main.peak))
	f.setFact("metric", "container_cpu_cfs_throttled_periods_total / container_cpu_cfs_periods_total")
	if sc.limit != "" {
		f.setFact("sidecar_limit", sc.limit)
	}
	if sc.usage >= 0 {
		f.setFact("sidecar_usage", coresText(sc.usage))
	}
	if main.limit != "" {
		f.setFact("cpu_limit", main.limit)
	}
	if main.usage >= 0 {
		f.setFact("main_usage", coresText(main.usage))
	}
	why := fmt.Sprintf("the throttled container is the sidecar %s", sc.name)
	if sc.limit != "" {
		why += " (cpu limit " + sc.limit + ")"
	}
	f.setFact("why", why+", not "+main.name)
	f.Evidence = append(f.Evidence,
		fmt.Sprintf("per container: %s of %s had %.0f%% of its CFS periods throttled (cpu limit %s, using %s on average)", sc.name, subject, sc.peak*100, orWord(sc.limit, "unknown"), orWord(f.fact("sidecar_usage"), "an unknown share")),
		fmt.Sprintf("%s, the main container, had %s of its CFS periods throttled at most (cpu limit %s, using %s)", main.name, f.fact("main_peak"), orWord(main.limit, "unknown"), orWord(f.fact("main_usage"), "an unknown share")))
	if l := steadyLatency(ev, subject); l != "" {
		f.setFact("latency", l)
		f.Evidence = append(f.Evidence, fmt.Sprintf("the request latency of %s stays at %s through the window", subject, l))
	}
	f.Summary = fmt.Sprintf("%s: only its sidecar %s is CPU throttled (%s), %s is not", subject, sc.name, f.fact("peak"), main.name)
	return true
}

var cpuUsageRE = regexp.MustCompile(`^container_cpu_usage_seconds(_total)?$`)

// containersOf are the containers of a workload's pods (or of its
// Deployment's template).
func containersOf(k K8sEvidence, workload string) []corev1.Container {
	for i := range k.Pods {
		if WorkloadOfPod(&k.Pods[i]) == workload && len(k.Pods[i].Spec.Containers) > 0 {
			return k.Pods[i].Spec.Containers
		}
	}
	for _, d := range k.Deployments {
		if d.Name == workload {
			return d.Spec.Template.Spec.Containers
		}
	}
	return nil
}

// milliCores reads a CPU quantity ("10m", "2", "0.5") in millicores, -1
// when unknown.
func milliCores(q string) float64 {
	if q == "" {
		return -1
	}
	if v, ok := strings.CutSuffix(q, "m"); ok {
		if n, err := strconv.ParseFloat(v, 64); err == nil {
			return n
		}
		return -1
	}
	if n, err := strconv.ParseFloat(q, 64); err == nil {
		return n * 1000
	}
	return -1
}

// coresText shows a CPU use in cores as kubectl top does ("2m", "512m")
// below one core, else in cores ("1.5").
func coresText(c float64) string {
	if c < 1 {
		return fmt.Sprintf("%.0fm", c*1000)
	}
	return strconv.FormatFloat(c, 'f', 1, 64) + " cores"
}

// throttleShare shows a small share of throttled periods without rounding
// it away ("0.03%").
func throttleShare(v float64) string {
	if v*100 < 1 {
		return fmt.Sprintf("%.2f%%", v*100)
	}
	return fmt.Sprintf("%.0f%%", v*100)
}

// steadyLatency is the subject's mean request latency when it holds steady
// through the window (its highest within a fifth of its lowest), "" when
// not measured or not steady.
func steadyLatency(ev *Gathered, subject string) string {
	for _, set := range ev.Metrics {
		if set.Class != MetricLatency {
			continue
		}
		for _, s := range set.Series {
			if !strings.EqualFold(SubjectOfLabels(s.Labels), subject) {
				continue
			}
			lo, hi := -1.0, 0.0
			for _, p := range s.Points {
				if p.T.Before(ev.Window.BaselineStart) {
					continue
				}
				if lo < 0 || p.V < lo {
					lo = p.V
				}
				hi = max(hi, p.V)
			}
			if lo > 0 && hi <= lo*1.2 {
				return seconds(hi)
			}
		}
	}
	return ""
}

// describeSidecarThrottled answers a throttling claim that holds only of a
// sidecar with a tiny CPU limit.
func describeSidecarThrottled(h *Hypothesis) string {
	d := fmt.Sprintf("the %s alert on %s is real but harmless: the throttled container is the sidecar %s", orWord(h.fact("alert"), "CPU throttling"), h.Subject, h.fact("sidecar"))
	if l := h.fact("sidecar_limit"); l != "" {
		d += fmt.Sprintf(" (cpu limit %s), throttled in %s of its CFS periods", l, h.fact("peak"))
	} else {
		d += fmt.Sprintf(", throttled in %s of its CFS periods", h.fact("peak"))
	}
	if u := h.fact("sidecar_usage"); u != "" {
		d += fmt.Sprintf(" while it uses %s on average (a few milliseconds of work that overrun its quota whenever it wakes)", u)
	}
	d += fmt.Sprintf("; the main container %s is not throttled (%s of its periods", h.fact("main"), h.fact("main_peak"))
	if u := h.fact("main_usage"); u != "" {
		d += fmt.Sprintf(", using %s", u)
		if l := h.fact("cpu_limit"); l != "" {
			d += " of its limit of " + l
			if !strings.HasSuffix(l, "m") {
				d += " CPUs"
			}
		}
	}
	d += ")"
	if l := h.fact("latency"); l != "" {
		d += fmt.Sprintf(" and its request latency holds at %s", l)
	}
	return d + ": no user impact, and raising the CPU limit of " + h.fact("main") + " would change nothing"
}

// proxyThrottled is the mesh sidecar whose throttling alone a finding
// shows ("" when the application's own container is throttled too, or no
// sidecar is).
func proxyThrottled(f *Finding) string {
	if f == nil || f.Kind != KindCPUThrottling {
		return ""
	}
	if p := f.fact("sidecar_shifted"); p != "" && f.fact("shifted_containers") == p {
		return p
	}
	return ""
}

// detectProxyThrottled gives a throttled mesh sidecar's finding the
// sidecar's own CPU limit, and the application container's, from the
// workload's pod spec.
func detectProxyThrottled(ev *Gathered, found []Finding) {
	for i := range found {
		f := &found[i]
		p := proxyThrottled(f)
		if p == "" {
			continue
		}
		cs := containersOf(ev.K8s, f.Subject)
		for j, c := range cs {
			q, ok := c.Resources.Limits[corev1.ResourceCPU]
			switch {
			case c.Name == p && ok && f.fact("cpu_limit") == "":
				f.setFact("cpu_limit", q.String())
				f.Evidence = append(f.Evidence, fmt.Sprintf("container %s (sidecar) of %s has a cpu limit of %s", c.Name, f.Subject, q.String()))
			case c.Name != p && (c.Name == f.Subject || j == 0) && f.fact("app_limit") == "":
				if ok {
					f.setFact("app_limit", "a cpu limit of "+q.String())
				} else {
					f.setFact("app_limit", "no cpu limit")
				}
			}
		}
	}
}
