package analyst

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A namespace stuck in Terminating: the namespace controller deletes every
// resource of every API group before it drops the "kubernetes" finalizer,
// and its conditions say what holds it. NamespaceDeletionDiscoveryFailure
// ("Discovery failed for some groups, 1 failing: unable to retrieve the
// complete list of server APIs: metrics.k8s.io/v1beta1: stale GroupVersion
// discovery") means an aggregated API the controller must list is down:
// its APIService (v1beta1.metrics.k8s.io) is Available=False
// (FailedDiscoveryCheck, MissingEndpoints) because the service behind it
// (kube-system/metrics-server) has no ready pod, and that pod's log says
// why. The namespace's own content is gone; the cause lives in the
// service behind the APIService. NamespaceContentRemaining and
// NamespaceFinalizersRemaining name resources whose finalizers no
// controller removes.

// KindNamespaceStuck is a namespace whose deletion does not finish.
const KindNamespaceStuck Kind = "namespace_stuck"

var namespaceStuck = &mechanism{
	kind:  KindNamespaceStuck,
	class: classCause,
	label: "namespace deletion blocked",
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		t := changeText(c)
		return h.fact("backend") != "" && (strings.EqualFold(c.Subject, h.fact("backend")) || strings.Contains(t, strings.ToLower(h.fact("backend")))) ||
			strings.Contains(t, "apiservice") || h.fact("group") != "" && strings.Contains(t, strings.ToLower(h.fact("group")))
	},
	describe: func(h *Hypothesis, sc Scope) string {
		ns := orWord(h.fact("namespace"), h.Subject)
		if h.fact("group") == "" {
			return fmt.Sprintf("namespace %s is stuck Terminating: %s (%s)", ns, truncate(h.fact("message"), 240), h.fact("condition"))
		}
		d := fmt.Sprintf("namespace %s is stuck Terminating: the namespace controller cannot finish deleting it because API discovery fails for %s (%s: %s)",
			ns, h.fact("group"), h.fact("condition"), truncate(h.fact("message"), 200))
		if a := h.fact("apiservice"); a != "" {
			d += fmt.Sprintf("; the aggregated APIService %s is unavailable (Available %s)", a, orWord(h.fact("available"), "False"))
		}
		if s := h.fact("service"); s != "" && h.fact("inferred") != "" {
			d += fmt.Sprintf("; the group is likely served by %s (named after it; the APIService was not shown)", s)
		} else if s != "" {
			d += fmt.Sprintf(", served by %s", s)
		}
		d += h.clause(", whose pods are not ready: ", "backend_state")
		if l := h.fact("backend_log"); l != "" {
			d += "; its log says: " + truncate(l, 220)
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		ns := orWord(h.fact("namespace"), h.Subject)
		if a := h.fact("apiservice"); a != "" || h.fact("group") != "" {
			r.high("Bring back the API %s: fix %s (%s); the deletion of namespace %s then completes on its own",
				orWord(a, h.fact("group")), orWord(h.fact("service"), "the service behind it"), orWord(truncate(h.fact("backend_log"), 160), "read its pods' events and previous logs"), ns)
			r.med("If the API is not needed, delete the APIService (kubectl delete apiservice %s) rather than removing the namespace's finalizer by hand, which leaves its objects behind in etcd", orWord(a, "…"))
			r.low("Alert on APIServices with Available=False (aggregator_unavailable_apiservice) and on namespaces Terminating for more than an hour")
			return
		}
		r.high("Namespace %s: %s — remove what holds it (the resources and finalizers the condition names, or bring back the controller that owns those finalizers)", ns, truncate(h.fact("message"), 160))
		r.low("Alert on namespaces Terminating for more than an hour")
	},
}

// nsDiscoveryGroupRE reads the group versions a discovery failure names
// ("metrics.k8s.io/v1beta1: stale GroupVersion discovery").
var nsDiscoveryGroupRE = regexp.MustCompile(`\b([a-z0-9-]+(?:\.[a-z0-9-]+)+)/(v\d+\w*)\b`)

// blockingCondition returns the condition of a Terminating namespace that
// says what holds its deletion (nil when none does): a discovery failure
// first, then content that fails to delete or remains.
func blockingCondition(ns *corev1.Namespace) *corev1.NamespaceCondition {
	if ns.Status.Phase != corev1.NamespaceTerminating {
		return nil
	}
	for _, t := range []corev1.NamespaceConditionType{corev1.NamespaceDeletionDiscoveryFailure, corev1.NamespaceDeletionContentFailure,
		corev1.NamespaceDeletionGVParsingFailure, corev1.NamespaceFinalizersRemaining, corev1.NamespaceContentRemaining} {
		for i := range ns.Status.Conditions {
			if c := &ns.Status.Conditions[i]; c.Type == t && c.Status == corev1.ConditionTrue {
				return c
			}
		}
	}
	return nil
}

// apiService is one row of `kubectl get apiservice`.
type apiService struct {
	name, service, available string
	// inferred: the service was not shown but taken from the workload
	// named after the group.
	inferred bool
}

// apiServices reads the `kubectl get apiservice(s)` tables handed over as
// command output: NAME, SERVICE, AVAILABLE ("False (FailedDiscoveryCheck)").
func apiServices(cmds []evidence.CommandOutput) []apiService {
	var out []apiService
	for _, c := range cmds {
		if !strings.Contains(c.Command, "apiservice") || len(c.Lines) < 2 {
			continue
		}
		head := c.Lines[0]
		si, ai, ag := strings.Index(head, "SERVICE"), strings.Index(head, "AVAILABLE"), strings.Index(head, "AGE")
		if !strings.HasPrefix(head, "NAME") || si < 0 || ai < si {
			continue
		}
		for _, l := range c.Lines[1:] {
			f := strings.Fields(l)
			if len(f) < 3 || len(l) <= ai {
				continue
			}
			end := len(l)
			if ag > ai && ag <= len(l) {
				end = ag
			}
			a := apiService{name: f[0], service: f[1], available: strings.TrimSpace(l[ai:end])}
			if a.service == "Local" {
				a.service = ""
			}
			out = append(out, a)
		}
	}
	return out
}

// gatherStuckNamespaces reads the Terminating namespaces the question is
// about and, for a discovery failure, follows the failing group to its
// APIService and the service's pods (their state and logs).
func (g *gatherer) gatherStuckNamespaces(ctx context.Context, plan []specialist) []Finding {
	if g.src == nil || g.src.Kubernetes == nil {
		return nil
	}
	nss, err := evidence.List[corev1.Namespace](ctx, g.src.Kubernetes, "", "")
	if err != nil {
		return nil
	}
	text := strings.ToLower(g.sc.Message + " " + g.sc.Hint)
	var out []Finding
	for i := range nss {
		ns := &nss[i]
		c := blockingCondition(ns)
		if c == nil || !(ns.Name == g.sc.Namespace || strings.Contains(text, ns.Name)) {
			continue
		}
		var api apiService
		var b webhookBackend
		if m := findSubmatch(nsDiscoveryGroupRE, c.Message); m != nil && c.Type == corev1.NamespaceDeletionDiscoveryFailure {
			name := m[2] + "." + m[1]
			api.name = name
			for _, a := range apiServices(g.commands) {
				if a.name == name {
					api = a
				}
			}
			if api.service == "" {
				// The APIService's service not shown: the failing
				// workload named after the group's leading label
				// (metrics-server for metrics.k8s.io) stands in for it,
				// named as inferred.
				api.service, api.inferred = g.groupWorkload(ctx, plan, m[1]), true
			}
			if svcNS, svc, ok := strings.Cut(api.service, "/"); ok {
				b = g.serviceBackend(ctx, plan, svcNS, svc)
			}
		}
		out = append(out, nsStuckFinding(ns, c, api, b))
	}
	return out
}

// groupWorkload names (namespace/workload) the one workload whose pods are
// not ready and whose name starts with the leading label of an API group
// ("" when none or several do).
func (g *gatherer) groupWorkload(ctx context.Context, plan []specialist, group string) string {
	lead, _, _ := strings.Cut(group, ".")
	if len(lead) < 4 {
		return ""
	}
	found := ""
	for _, sp := range plan {
		if !sp.run.Has("list_pods") {
			continue
		}
		out, ok := g.call(ctx, sp, "list_pods", map[string]any{"namespace": "*"})
		if !ok {
			break
		}
		pods, _ := as[[]corev1.Pod](out)
		for i := range pods {
			p := &pods[i]
			w := workloadOfName(p.Name)
			if !strings.HasPrefix(w, lead+"-") || podStateUnknown(p) || podReady(p) {
				continue
			}
			if id := p.Namespace + "/" + w; found == "" || found == id {
				found = id
			} else {
				return ""
			}
		}
		break
	}
	return found
}

// serviceBackend reads the pods of a service (named after it or labelled
// with its name), and the logs of those not ready.
func (g *gatherer) serviceBackend(ctx context.Context, plan []specialist, ns, svc string) webhookBackend {
	var b webhookBackend
	for _, sp := range plan {
		if !sp.run.Has("list_pods") {
			continue
		}
		if out, ok := g.call(ctx, sp, "list_pods", map[string]any{"namespace": ns}); ok {
			pods, _ := as[[]corev1.Pod](out)
			for _, p := range pods {
				if p.Namespace == ns && (workloadOfName(p.Name) == svc || p.Labels["app"] == svc || p.Labels["k8s-app"] == svc || p.Labels["app.kubernetes.io/name"] == svc) {
					b.Pods = append(b.Pods, p)
				}
			}
		}
		break
	}
	for _, sp := range plan {
		if !sp.run.Has("get_pod_logs") {
			continue
		}
		for i := range b.Pods {
			p := &b.Pods[i]
			if i >= 3 || ctx.Err() != nil || podReady(p) {
				continue
			}
			b.Lines = append(b.Lines, g.containerLog(ctx, sp, p, "", true)...)
			if len(b.Lines) == 0 {
				b.Lines = append(b.Lines, g.containerLog(ctx, sp, p, "", false)...)
			}
		}
		break
	}
	return b
}

// nsStuckFinding builds the finding of a namespace held in Terminating by
// condition c: about the service behind a failing APIService when one is
// known (the namespace is related), else about the namespace. Without the
// service's state or log it restates the condition: one hop short.
func nsStuckFinding(ns *corev1.Namespace, c *corev1.NamespaceCondition, api apiService, b webhookBackend) Finding {
	f := Finding{Kind: KindNamespaceStuck, Subject: ns.Name, Object: "namespace " + ns.Name, Namespace: ns.Name, Source: SrcKubernetes,
		Severity: SevCritical, Weight: 0.8, Time: c.LastTransitionTime.Time, Related: []string{ns.Name}}
	f.setFact("namespace", ns.Name)
	f.setFact("condition", string(c.Type))
	f.setFact("message", c.Message)
	// The namespace is still Terminating: its condition is the state now,
	// however long ago it began.
	f.setFact("current", "true")
	f.Evidence = append(f.Evidence, fmt.Sprintf("namespace %s is Terminating; condition %s=True (%s) since %s: %s", ns.Name, c.Type, c.Reason, ts(c.LastTransitionTime.Time), truncate(c.Message, 240)))
	if m := findSubmatch(nsDiscoveryGroupRE, c.Message); m != nil && c.Type == corev1.NamespaceDeletionDiscoveryFailure {
		f.setFact("group", m[1]+"/"+m[2])
	}
	if api.inferred && api.service != "" {
		f.setFact("inferred", "true")
		f.Evidence = append(f.Evidence, fmt.Sprintf("the APIService %s's service was not shown; %s is the failing workload named after the group", api.name, api.service))
	}
	if api.name != "" && api.available != "" {
		f.setFact("apiservice", api.name)
		f.setFact("available", api.available)
		f.Evidence = append(f.Evidence, fmt.Sprintf("APIService %s (service %s): Available %s", api.name, orWord(api.service, "local"), api.available))
	}
	if _, svc, ok := strings.Cut(api.service, "/"); ok {
		f.Subject = svc
		f.setFact("service", api.service)
		f.setFact("backend", svc)
		f.Related = append(f.Related, svc)
	}
	var states []string
	for i := range b.Pods {
		p := &b.Pods[i]
		if podStateUnknown(p) || podReady(p) {
			continue
		}
		states = append(states, csiPodState(p))
	}
	if len(states) > 0 {
		f.Weight = 0.9
		f.setFact("backend_state", strings.Join(states, "; "))
		f.Evidence = append(f.Evidence, "the service's pods: "+strings.Join(states, "; "))
	}
	if l := pluginErrorLine(b.Lines); l.Text != "" {
		f.setFact("backend_log", strings.TrimSpace(l.Text))
		f.Evidence = append(f.Evidence, "log of "+orWord(strings.TrimSuffix(l.Source, "/"), f.Subject)+": "+truncate(strings.TrimSpace(l.Text), 240))
	}
	// A service taken by its name, not read from the APIService, is one
	// link short however clearly it fails.
	if len(states) == 0 && f.fact("backend_log") == "" || api.inferred {
		f.setFact("state_only", "true")
	}
	f.Summary = fmt.Sprintf("namespace %s stuck Terminating: %s", ns.Name, truncate(c.Message, 160))
	return f
}
