package analyst

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/rootcause/rootcause/agent/evidence"
)

// KindInitWait is a pod held in Init by an init container that waits for a
// dependency that does not answer: nothing serves the Service it polls.
const KindInitWait Kind = "init_wait"

// A pod stuck in Init (Init:0/1, PodInitializing) because its init
// container waits for a dependency: a loop that polls a host and port
// until it answers ("until nc -z orders-db 5432", "wait-for-it db:5432",
// "dockerize -wait tcp://db:5432", "until pg_isready -h db", "until
// nslookup db", an http check with curl or wget) and logs its wait
// ("waiting for orders-db:5432", "db:5432 - no response", "nslookup:
// can't resolve 'db'"). Such a container neither fails nor restarts: the
// pod shows no error at all, and only its age says something is wrong.
//
// The chain goes two hops past the waiting pod: to the Service the loop
// polls (read from its command and its log), and from that Service to
// what should serve it. A Service with no endpoints (endpoints <none>) is
// served by nothing: the workload behind it (a StatefulSet or Deployment
// of that name, or one its selector matches) is scaled to 0 replicas or
// its pods are not ready; a Service that does not exist leaves the name
// unresolved. The root is that state of the dependency, dated by the
// change that scaled it down when one is recorded; the waiting pods are
// its consequence.
var initWait = &mechanism{
	kind:  KindInitWait,
	class: classCause,
	label: "init container waits for a dependency that nothing serves",
	detect: func(ev *Gathered, _ []Finding) []Finding {
		return detectInitWaits(&ev.K8s, ev.Window, ev.Changes)
	},
	// The dependency's own findings (its Service without endpoints, its
	// workload scaled to zero) are this chain's hops, not rivals.
	related: func(h *Hypothesis, f *Finding) bool {
		for _, p := range h.Primary {
			if containsFold(p.Related, f.Subject) {
				return true
			}
		}
		return false
	},
	// What scaled the dependency down or removed it; a release of the
	// waiting workload itself is not why its dependency is gone.
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		dep := h.fact("dependency_workload")
		return dep != "" && strings.Contains(changeText(c), strings.ToLower(dep)) && matchLine(scaleChangeRE, changeText(c))
	},
	strictTriggers: true,
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("%s cannot start: its init container %s waits for %s", h.Subject, orWord(h.fact("container"), "(init)"), h.fact("target"))
		d += h.wrapped(" (for ", "waited", ")")
		svc := h.fact("service")
		switch h.fact("state") {
		case "missing":
			d += fmt.Sprintf(", but no Service %s exists in namespace %s, so the name does not resolve", svc, h.top().Namespace)
			if l := h.fact("resolve_line"); l != "" {
				d += fmt.Sprintf(" (its log: %s)", quote(l, 120))
			}
			if n := h.fact("successor"); n != "" {
				d += fmt.Sprintf("; Service %s of that namespace%s likely serves the dependency under a new name (a chart's rename or a dropped name override), and nothing points the waiting pods at it", n, h.wrapped(" (port ", "successor_port", ")"))
			}
		case "no_endpoints", "scaled_to_zero", "not_ready":
			d += fmt.Sprintf(", and Service %s has no endpoints (endpoints <none>): nothing serves it", svc)
		default:
			d += ", and it never answers"
		}
		d += h.clause("; ", "dependency_state")
		d += h.clause("; ", "scale_change")
		if s := h.fact("pod_status"); s != "" {
			d += fmt.Sprintf(". So the pods of %s stay in %s", h.Subject, s)
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		ns := orWord(h.top().Namespace, sc.Namespace)
		dep, kind := h.fact("dependency_workload"), strings.ToLower(h.fact("dependency_kind"))
		switch h.fact("state") {
		case "scaled_to_zero":
			r.high("Scale %s %s back up once the work that stopped it is done (kubectl scale %s/%s -n %s --replicas=%s): the init containers of %s pass on their own when it answers", kind, dep, kind, dep, ns, orWord(h.fact("usual_replicas"), "1"), h.Subject)
		case "not_ready":
			r.high("Make the pods of %s %s ready (kubectl describe %s %s -n %s): its Service lists only ready pods", kind, dep, kind, dep, ns)
		case "missing":
			if n := h.fact("successor"); n != "" {
				r.high("Point %s (its init container and its connection settings) at Service %s, or give the dependency back the name %s (restore the chart's fullnameOverride/nameOverride, or add a Service %s that selects its pods)", h.Subject, n, h.fact("service"), h.fact("service"))
			} else {
				r.high("Create Service %s in namespace %s, or point the init container of %s at the name the dependency's Service has now", h.fact("service"), ns, h.Subject)
			}
		default:
			r.high("Find why %s does not answer on %s (its Service, endpoints and pods) and bring it back", h.fact("service"), h.fact("target"))
		}
		r.med("Give wait-for init containers a timeout that fails the pod with a clear message, so a missing dependency shows as an error instead of a silent Init")
		r.low("Alert on pods in Init for more than 10 minutes and on Services a workload depends on with no endpoints")
	},
}

var (
	// The host (and port) a wait loop polls, in the commands and logs of
	// the usual wait-for init containers.
	waitTargetRE = regexp.MustCompile(`(?i)(?:\bnc\s+(?:-[a-z]+\s+(?:\d+\s+)?)*|\bnslookup\s+|\bgetent\s+hosts\s+|\b(?:pg_isready|mysqladmin|redis-cli|cqlsh|mongosh|mongo)\b[^;|&]*?\s-h\s*|\bwait-for-it(?:\.sh)?\s+(?:-h\s+)?|\bwait4x\s+\w+\s+|\btcp://|\bhttps?://|\bwaiting for\s+(?:service\s+|host\s+|database\s+|db\s+)?|\bcan't resolve\s+'?|\bbad address\s+'?|\bcould not translate host name\s+"?|\bunknown host\s+'?)([a-z0-9][a-z0-9.-]*[a-z0-9])(?:[: ](\d{2,5})\b)?`)
	// A log line of a wait: the loop's own message.
	waitLineRE = regexp.MustCompile(`(?i)\bwait(?:ing)?\b|no response|not (?:yet )?(?:ready|available|reachable)|retrying|can't resolve|bad address|connection refused|still down|unreachable`)
)

// initWaitMin is how long an init container must have run, polling,
// before its wait is a fault rather than a start-up.
const initWaitMin = 5 * time.Minute

// waitTargets reads the hosts (with their port, when given) a wait loop
// polls from its command and its log lines.
func waitTargets(text string) [][2]string {
	var out [][2]string
	for _, m := range findAllSubmatch(waitTargetRE, text, -1) {
		h := strings.ToLower(strings.TrimRight(m[1], "."))
		if h == "localhost" || h == "until" || h == "do" || strings.Trim(h, "0123456789.") == "" {
			continue
		}
		dup := false
		for _, o := range out {
			if o[0] == h {
				dup = true
			}
		}
		if !dup {
			out = append(out, [2]string{h, m[2]})
		}
	}
	return out
}

// serviceNameOf is the Service a cluster host name names in namespace ns
// ("db", "db.shop", "db.shop.svc.cluster.local"); "" when the name is of
// another namespace or not a cluster name.
func serviceNameOf(host, ns string) string {
	parts := strings.Split(host, ".")
	if len(parts) == 1 {
		return host
	}
	if parts[1] == ns && (len(parts) == 2 || parts[2] == "svc") {
		return parts[0]
	}
	return ""
}

// detectInitWaits finds pods whose init container has waited past
// initWaitMin for a Service nothing serves.
func detectInitWaits(k *K8sEvidence, w Window, changes []evidence.Change) []Finding {
	var out []Finding
	seen := map[string]bool{}
	for i := range k.Pods {
		p := &k.Pods[i]
		wl := WorkloadOfPod(p)
		key := p.Namespace + "/" + wl
		if seen[key] {
			continue
		}
		for _, cs := range p.Status.InitContainerStatuses {
			run := cs.State.Running
			if cs.Ready || run == nil || run.StartedAt.IsZero() || w.End.Sub(run.StartedAt.Time) < initWaitMin {
				continue
			}
			var text []string
			for _, c := range p.Spec.InitContainers {
				if c.Name == cs.Name {
					text = append(text, strings.Join(append(append([]string{}, c.Command...), c.Args...), " "))
				}
			}
			waiting := false
			for _, l := range k.PreviousLogs[p.Namespace+"/"+p.Name+"/"+cs.Name] {
				text = append(text, l.Text)
				waiting = waiting || matchLine(waitLineRE, l.Text)
			}
			f, ok := initWaitFinding(k, p, wl, cs.Name, strings.Join(text, "\n"), waiting, changes)
			if !ok {
				continue
			}
			f.Time = run.StartedAt.Time
			f.setFact("waited", durWords(w.End.Sub(run.StartedAt.Time).Seconds()))
			f.setFact("pod_status", fmt.Sprintf("Init:0/%d", len(p.Spec.InitContainers)))
			out = append(out, f)
			seen[key] = true
			break
		}
	}
	return out
}

// initWaitFinding follows a wait loop's target to its Service and what
// serves it; ok is false when the target is served (the wait is about
// something else) or is no Service this namespace knows.
func initWaitFinding(k *K8sEvidence, p *corev1.Pod, wl, container, text string, waiting bool, changes []evidence.Change) (Finding, bool) {
	ns := p.Namespace
	for _, t := range waitTargets(text) {
		name := serviceNameOf(t[0], ns)
		if name == "" || strings.EqualFold(name, wl) {
			continue
		}
		target := t[0]
		if t[1] != "" {
			target += ":" + t[1]
		}
		f := Finding{Kind: KindInitWait, Subject: wl, Object: "pod " + ns + "/" + p.Name, Namespace: ns, Source: SrcKubernetes,
			Severity: SevCritical, Weight: 0.7, Related: []string{name}}
		f.setFact("container", container)
		f.setFact("target", target)
		f.setFact("service", name)
		f.Summary = fmt.Sprintf("pod %s/%s waits in its init container %s for %s", ns, p.Name, container, target)
		f.Evidence = []string{f.Summary}
		svc := serviceState(k, ns, name)
		dep := servingWorkload(k, ns, name, svc)
		switch {
		case svc == nil && len(k.Services) > 0 && dep == nil:
			f.setFact("state", "missing")
			f.Weight = 0.85
			f.Evidence = append(f.Evidence, fmt.Sprintf("no Service %s in namespace %s (%d Services listed)", name, ns, len(k.Services)))
			if l := resolveFailureLine(text); l != "" {
				f.setFact("resolve_line", l)
				f.Evidence = append(f.Evidence, fmt.Sprintf("init container %s logs: %s", container, quote(l, 160)))
			}
			port := t[1]
			if m := findSubmatch(waitPortFlagRE, text); port == "" && m != nil {
				port = m[1]
			}
			if n, port := successorService(k, ns, name, port); n != "" {
				f.setFact("successor", n)
				f.setFact("successor_port", port)
				f.Evidence = append(f.Evidence, fmt.Sprintf("service %s/%s exists (port %s): its name holds %s", ns, n, orWord(port, "?"), name))
			}
		case svc != nil && svc.Known && svc.ReadyEndpoints > 0:
			continue // it is served: the loop waits on something else
		case svc != nil && svc.Known:
			f.setFact("state", "no_endpoints")
			f.Weight = 0.8
			f.Evidence = append(f.Evidence, fmt.Sprintf("service %s/%s has no endpoints (endpoints <none>)", ns, name))
		case dep == nil || !waiting:
			continue // neither the Service's endpoints nor its workload are known
		}
		if dep != nil {
			describeServing(&f, dep, k, changes)
		}
		if f.fact("state") == "" {
			continue
		}
		return f, true
	}
	return Finding{}, false
}

// resolveFailureRE is a resolver's refusal of a name, as wait tools and
// client libraries print it (busybox nc "bad address", nslookup "can't
// resolve", glibc "Name or service not known", Go "no such host", libpq
// "could not translate host name", Java "UnknownHostException", dig
// NXDOMAIN).
var resolveFailureRE = regexp.MustCompile(`(?i)bad address|can't resolve|no such host|name or service not known|could not translate host name|unknown ?host|nxdomain|server can't find|temporary failure in name resolution|getaddrinfo (?:enotfound|eai_again)`)

// waitPortFlagRE is the port a wait tool is given apart from its host
// (pg_isready -p 5432, mysqladmin --port=3306, redis-cli -p 6379).
var waitPortFlagRE = regexp.MustCompile(`(?:\s-p\s*|\s--port[= ])(\d{2,5})\b`)

// resolveFailureLine is the first line of a wait's text that says its
// target's name does not resolve.
func resolveFailureLine(text string) string {
	for _, l := range strings.Split(text, "\n") {
		if matchLine(resolveFailureRE, l) {
			return strings.TrimSpace(l)
		}
	}
	return ""
}

// successorService is a Service of namespace ns whose name holds the
// missing name (postgres -> billing-postgresql, redis -> cache-redis-master):
// the dependency renamed by a chart or a release prefix. When the wait
// names a port, the Service must serve it; a headless Service is taken
// only when no other fits. "" when none or more than one fits.
func successorService(k *K8sEvidence, ns, name, port string) (string, string) {
	var found, headless []string
	ports := map[string]string{}
	for i := range k.Services {
		s := &k.Services[i].Service
		if s.Namespace != ns || s.Name == name || !strings.Contains(strings.ToLower(s.Name), strings.ToLower(name)) {
			continue
		}
		var ps []string
		match := port == ""
		for _, p := range s.Spec.Ports {
			ps = append(ps, fmt.Sprint(p.Port))
			match = match || fmt.Sprint(p.Port) == port
		}
		if !match {
			continue
		}
		ports[s.Name] = strings.Join(ps, ",")
		if s.Spec.ClusterIP == corev1.ClusterIPNone {
			headless = append(headless, s.Name)
		} else {
			found = append(found, s.Name)
		}
	}
	if len(found) == 0 {
		found = headless
	}
	if len(found) != 1 {
		return "", ""
	}
	return found[0], ports[found[0]]
}

// serving is the workload behind a Service.
type serving struct {
	kind, name       string
	replicas, ready  int32
	hasSpec, labeled bool
}

// serviceState is the Service name in ns, when it was read.
func serviceState(k *K8sEvidence, ns, name string) *ServiceState {
	for i := range k.Services {
		if s := &k.Services[i]; s.Service.Namespace == ns && s.Service.Name == name {
			return s
		}
	}
	return nil
}

// servingWorkload finds the StatefulSet or Deployment that serves a
// Service: the one whose pod labels its selector matches, else the one of
// its name (a headless Service and its StatefulSet share it).
func servingWorkload(k *K8sEvidence, ns, name string, svc *ServiceState) *serving {
	var sel labels.Selector
	if svc != nil && len(svc.Service.Spec.Selector) > 0 {
		sel = labels.SelectorFromSet(svc.Service.Spec.Selector)
	}
	match := func(n string, tmpl map[string]string) bool {
		if sel != nil && len(tmpl) > 0 {
			return sel.Matches(labels.Set(tmpl))
		}
		return n == name
	}
	for i := range k.StatefulSets {
		s := &k.StatefulSets[i]
		if s.Namespace == ns && match(s.Name, s.Spec.Template.Labels) {
			return servingOf("StatefulSet", s.Name, s.Spec.Replicas, s.Status.ReadyReplicas)
		}
	}
	for i := range k.Deployments {
		d := &k.Deployments[i]
		if d.Namespace == ns && match(d.Name, d.Spec.Template.Labels) {
			return servingOf("Deployment", d.Name, d.Spec.Replicas, d.Status.ReadyReplicas)
		}
	}
	return nil
}

func servingOf(kind, name string, replicas *int32, ready int32) *serving {
	s := &serving{kind: kind, name: name, ready: ready}
	if replicas != nil {
		s.replicas, s.hasSpec = *replicas, true
	}
	return s
}

// describeServing adds the state of the workload that serves the waited-for
// Service to an init-wait finding: scaled to 0, or its pods not ready, and
// the change or event that scaled it down.
func describeServing(f *Finding, dep *serving, k *K8sEvidence, changes []evidence.Change) {
	f.setFact("dependency_workload", dep.name)
	f.setFact("dependency_kind", dep.kind)
	if !containsFold(f.Related, dep.name) {
		f.Related = append(f.Related, dep.name)
	}
	switch {
	case dep.hasSpec && dep.replicas == 0:
		f.Facts["state"] = "scaled_to_zero"
		f.setFact("dependency_state", fmt.Sprintf("%s %s is scaled to 0 replicas (0/0 ready), so no pod backs the Service", dep.kind, dep.name))
		f.Weight = 0.9
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s %s/%s is scaled to 0 replicas (READY 0/0)", strings.ToLower(dep.kind), f.Namespace, dep.name))
	case dep.hasSpec && dep.ready < dep.replicas:
		f.Facts["state"] = "not_ready"
		f.setFact("dependency_state", fmt.Sprintf("%s %s has %d of %d pods ready", dep.kind, dep.name, dep.ready, dep.replicas))
		f.Weight = max(f.Weight, 0.8)
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s %s/%s has %d of %d replicas ready", strings.ToLower(dep.kind), f.Namespace, dep.name, dep.ready, dep.replicas))
	}
	if f.fact("state") != "scaled_to_zero" {
		return
	}
	// The change that scaled it down, else the controller's events.
	for i := len(changes) - 1; i >= 0; i-- {
		c := &changes[i]
		txt := strings.ToLower(c.Service + " " + c.Description)
		if strings.Contains(txt, strings.ToLower(dep.name)) && matchLine(scaleChangeRE, txt) {
			f.setFact("scale_change", fmt.Sprintf("it was scaled down by the %s change at %s: %q", changeKindWords(c.Kind), ts(c.Timestamp), truncate(c.Description, 200)))
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s change of %s at %s: %s", changeKindWords(c.Kind), orWord(c.Service, dep.name), ts(c.Timestamp), truncate(c.Description, 200)))
			if m := findSubmatch(usualReplicasRE, c.Description); m != nil {
				f.setFact("usual_replicas", m[1])
			}
			break
		}
	}
	for i := range k.Events {
		e := &k.Events[i]
		if e.InvolvedObject.Name == dep.name && strings.EqualFold(e.InvolvedObject.Kind, dep.kind) && (e.Reason == "SuccessfulDelete" || e.Reason == "ScalingReplicaSet") {
			first, _ := eventTime(e)
			f.Evidence = append(f.Evidence, fmt.Sprintf("event %s on %s %s: %s (%s)", e.Reason, strings.ToLower(dep.kind), dep.name, quote(e.Message, 160), ts(first)))
		}
	}
}

// usualReplicasRE reads the count a scale-down came from ("--replicas=0
// (was 3)", "scaled 3 -> 0", "from 3 to 0").
var usualReplicasRE = regexp.MustCompile(`(?i)(?:was |from |scaled )(\d+)\s*(?:->|→|to)?\s*0\b`)

// durWords writes seconds the way people say a wait (300 s, 60 min).
func durWords(s float64) string {
	d := time.Duration(s * float64(time.Second))
	switch {
	case d >= 2*time.Hour:
		return fmt.Sprintf("%.1f h", d.Hours())
	case d >= 10*time.Minute:
		return fmt.Sprintf("%.0f min", d.Minutes())
	}
	return fmt.Sprintf("%.0f s", d.Seconds())
}
