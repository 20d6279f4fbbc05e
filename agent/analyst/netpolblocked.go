package analyst

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/rootcause/rootcause/finding"
)

// A Job that cannot reach the Service it calls because a NetworkPolicy
// does not admit it: a default-deny ingress baseline selects the Service's
// pods and the policy that allows traffic back lists the clients it knows
// (the ingress controller's namespace, pods with a client label) but not
// the Job's pods. A NetworkPolicy drops what it does not admit, so the
// Job's calls time out (curl: (28) Connection timed out, a context
// deadline) rather than being refused, its pods fail until its backoff
// limit, and whatever waits on the Job fails with it: a Helm test or
// post-upgrade hook fails the upgrade and `helm upgrade --atomic` rolls
// the release back while the new pods were ready, a migration Job blocks
// a rollout. The Service is fine for the clients the policy admits: what
// to fix is the policy (or the Job's labels). Read from the failed Job's
// pods (their labels, the URL their command calls), the Service's pods
// and the namespace's NetworkPolicies (describe, YAML, get).

// KindNetpolBlocked is a client's calls dropped by a NetworkPolicy that
// does not admit it.
const KindNetpolBlocked Kind = "netpol_blocked"

var netpolBlocked = &mechanism{
	kind:   KindNetpolBlocked,
	class:  classCause,
	label:  "NetworkPolicy does not admit the client's calls",
	detect: detectNetpolBlocked,
	related: func(h *Hypothesis, f *Finding) bool {
		if c := h.fact("client"); c != "" {
			return strings.EqualFold(f.Subject, c) || strings.EqualFold(f.fact("caller"), c)
		}
		job := strings.ToLower(h.fact("job"))
		if job == "" {
			return false
		}
		s := strings.ToLower(f.Subject)
		return s == job || strings.HasPrefix(s, job+"-") || strings.ToLower(f.fact("job")) == job
	},
	strictTriggers: true,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		t := strings.ToLower(changeText(c))
		// A client's change of its pods' labels takes it out of the
		// policy's peers.
		if c := strings.ToLower(h.fact("client")); c != "" && strings.Contains(t, c) && strings.Contains(t, "label") {
			return true
		}
		return strings.Contains(t, "networkpolic") || strings.Contains(t, "netpol") || strings.Contains(t, "default-deny") ||
			h.fact("policy") != "" && strings.Contains(t, strings.ToLower(h.fact("policy")))
	},
	describe:  describeNetpolBlocked,
	recommend: recommendNetpolBlocked,
}

// calledURLRE is a URL (or host:port) a command calls inside the cluster:
// the Service's name, its namespace and port.
var calledURLRE = regexp.MustCompile(`(?i)(?:https?://)?([a-z0-9]([-a-z0-9]*[a-z0-9])?)(?:\.([a-z0-9]([-a-z0-9]*[a-z0-9])?))?(?:\.svc(?:\.cluster\.local)?)?:(\d{2,5})\b`)

func detectNetpolBlocked(ev *Gathered, found []Finding) []Finding {
	if len(ev.K8s.NetworkPolicies) == 0 {
		return nil
	}
	var out []Finding
	// The failed Jobs, as the Job mechanism reads them (its findings are
	// not among the general detectors').
	for _, o := range detectFailedJobs(ev.K8s, ev.Logs) {
		if o.Kind != KindJobFailed || !timedOutCall(o) {
			continue
		}
		jobName := orWord(o.fact("job"), o.Subject)
		var job *batchv1.Job
		for i := range ev.K8s.Jobs {
			if ev.K8s.Jobs[i].Name == jobName {
				job = &ev.K8s.Jobs[i]
			}
		}
		ns := orWord(o.Namespace, ev.Scope.Namespace)
		// The Job's pods: their labels are what a policy's peers match.
		var client map[string]string
		for i := range ev.K8s.Pods {
			if p := &ev.K8s.Pods[i]; jobOfPod(p) == jobName && len(p.Labels) > 0 {
				client = p.Labels
			}
		}
		if client == nil && job != nil {
			client = job.Spec.Template.Labels
		}
		if client == nil {
			continue
		}
		svc, svcNS, port := calledService(job, ev.K8s.Pods, jobName)
		if svc == "" {
			continue
		}
		if svcNS == "" || svcNS == "svc" {
			svcNS = ns
		}
		tport := targetPort(ev.K8s.Services, svc, port)
		np, blocking := blockingPolicies(ev, svc, svcNS, tport, ns, client)
		if np == nil {
			continue
		}
		f := Finding{Kind: KindNetpolBlocked, Subject: svc, Namespace: svcNS, Severity: SevCritical, Weight: 0.9,
			Source: SrcKubernetes, Time: o.Time, Object: "NetworkPolicy " + np.Name}
		f.setFact("policy", np.Name)
		f.setFact("job", jobName)
		f.setFact("port", strconv.Itoa(tport))
		f.setFact("client_labels", shownLabels(client))
		var allows []string
		for _, r := range np.Spec.Ingress {
			allows = append(allows, fmt.Sprintf("port %s from %s", rulePorts(r), rulePeers(r)))
		}
		f.setFact("allows", strings.Join(allows, "; "))
		if job != nil {
			if hook := job.Annotations["helm.sh/hook"]; hook != "" {
				f.setFact("hook", hook)
			}
		}
		f.Evidence = append(f.Evidence, fmt.Sprintf("the pods of Job %s (labels %s) call %s on port %d and their calls time out", jobName, shownLabels(client), svc, port))
		e := fmt.Sprintf("NetworkPolicy %s selects the pods of %s for ingress", np.Name, svc)
		if len(allows) > 0 {
			e += " and admits only " + strings.Join(allows, "; ")
		} else {
			e += " and admits nothing"
		}
		f.Evidence = append(f.Evidence, e+": not the Job's pods")
		for _, b := range blocking {
			if b != np {
				f.Evidence = append(f.Evidence, fmt.Sprintf("NetworkPolicy %s also selects them (%s)", b.Name, policyWords(b)))
			}
		}
		f.Evidence = append(f.Evidence, o.Evidence...)
		f.Summary = fmt.Sprintf("NetworkPolicy %s drops the calls of Job %s to %s:%d", np.Name, jobName, svc, tport)
		out = append(out, f)
	}
	return append(out, workloadsBlocked(ev)...)
}

// blockingPolicies are the ingress NetworkPolicies of namespace svcNS
// that select the pods of Service svc when none of them admits a client's
// pods (their labels, their namespace) on port: the one that speaks of
// the Service (its own allow list) first, nil when the client is
// admitted or no policy selects the pods.
func blockingPolicies(ev *Gathered, svc, svcNS string, port int, clientNS string, client map[string]string) (*networkingv1.NetworkPolicy, []*networkingv1.NetworkPolicy) {
	target := podsOfWorkload(ev.K8s.Pods, svcNS, svc)
	var blocking []*networkingv1.NetworkPolicy
	for i := range ev.K8s.NetworkPolicies {
		np := &ev.K8s.NetworkPolicies[i]
		if np.Namespace != "" && np.Namespace != svcNS || !policyIngress(np) || !policySelects(np, target, svc) {
			continue
		}
		for _, r := range np.Spec.Ingress {
			if ruleAdmits(r, port, clientNS, svcNS, client) {
				return nil, nil
			}
		}
		blocking = append(blocking, np)
	}
	if len(blocking) == 0 {
		return nil, nil
	}
	for _, b := range blocking {
		if len(b.Spec.Ingress) > 0 {
			return b, blocking
		}
	}
	return blocking[0], blocking
}

// connectTimeoutRE is a call that timed out connecting or waiting (the
// packets dropped), not a lookup that failed.
var connectTimeoutRE = regexp.MustCompile(`(?i)i/o timeout|timed out|deadline exceeded|ETIMEDOUT|connect timeout`)

// workloadsBlocked reads, from the logs of running workloads, calls to
// a Service of the cluster (by its cluster name) that time out, when the
// ingress NetworkPolicies that select the Service's pods admit other
// clients but not the caller's pods by their labels: a client relabelled
// (a chart moving to app.kubernetes.io/* labels) or never admitted.
func workloadsBlocked(ev *Gathered) []Finding {
	var out []Finding
	seen := map[string]bool{}
	for si := range ev.Logs {
		set := &ev.Logs[si]
		if set.Host || set.Subject == "" {
			continue
		}
		ns := orWord(set.Namespace, ev.Scope.Namespace)
		var client map[string]string
		for _, p := range podsOfWorkload(ev.K8s.Pods, ns, set.Subject) {
			if len(p.Labels) > 0 {
				client = p.Labels
			}
		}
		if client == nil {
			continue
		}
		for _, t := range set.Templates {
			l := t.Example
			if t.Incident == 0 || !matchLine(connectTimeoutRE, l) || matchLine(lookupTimeoutRE, l) {
				continue
			}
			for _, m := range findAllSubmatch(calledURLRE, l, -1) {
				svc, svcNS := strings.ToLower(m[1]), strings.ToLower(m[3])
				p, _ := strconv.Atoi(m[5])
				if matchLine(net4RE, m[0]) || svc == strings.ToLower(set.Subject) || p == 0 {
					continue
				}
				if svcNS == "" || svcNS == "svc" {
					svcNS = ns
				}
				if len(podsOfWorkload(ev.K8s.Pods, svcNS, svc)) == 0 || seen[set.Subject+">"+svc] {
					continue
				}
				tport := targetPort(ev.K8s.Services, svc, p)
				np, blocking := blockingPolicies(ev, svc, svcNS, tport, ns, client)
				if np == nil || len(np.Spec.Ingress) == 0 {
					continue
				}
				seen[set.Subject+">"+svc] = true
				var allows []string
				for _, r := range np.Spec.Ingress {
					allows = append(allows, fmt.Sprintf("port %s from %s", rulePorts(r), rulePeers(r)))
				}
				f := Finding{Kind: KindNetpolBlocked, Subject: svc, Namespace: svcNS, Severity: SevCritical, Weight: 0.9,
					Source: SrcKubernetes, Time: orTime(t.FirstIncident, t.FirstSeen), Object: "NetworkPolicy " + np.Name, Related: []string{set.Subject}}
				f.setFact("policy", np.Name)
				f.setFact("client", set.Subject)
				f.setFact("port", strconv.Itoa(tport))
				f.setFact("client_labels", shownLabels(client))
				f.setFact("allows", strings.Join(allows, "; "))
				f.Evidence = append(f.Evidence,
					fmt.Sprintf("the pods of %s (labels %s) call %s on port %d and their calls time out: %s", set.Subject, shownLabels(client), svc, p, quote(ReadableLine(l), 200)),
					fmt.Sprintf("NetworkPolicy %s selects the pods of %s for ingress and admits only %s: not the pods of %s", np.Name, svc, strings.Join(allows, "; "), set.Subject))
				for _, b := range blocking {
					if b != np {
						f.Evidence = append(f.Evidence, fmt.Sprintf("NetworkPolicy %s also selects them (%s)", b.Name, policyWords(b)))
					}
				}
				f.Summary = fmt.Sprintf("NetworkPolicy %s drops the calls of %s to %s:%d", np.Name, set.Subject, svc, tport)
				out = append(out, f)
			}
		}
	}
	return out
}

// timedOutCall reports whether a failed Job's log says its calls timed
// out (dropped packets, not a refusal).
func timedOutCall(f Finding) bool {
	if Kind(f.fact("line_kind")) == KindTimeout {
		return true
	}
	l := strings.ToLower(f.fact("line"))
	return strings.Contains(l, "timed out") || strings.Contains(l, "timeout") || strings.Contains(l, "deadline exceeded")
}

// calledService reads the Service a Job calls from its template's command,
// arguments and environment (or its pods').
func calledService(job *batchv1.Job, pods []corev1.Pod, jobName string) (svc, ns string, port int) {
	var cs []corev1.Container
	if job != nil {
		cs = job.Spec.Template.Spec.Containers
	}
	for i := range pods {
		if len(cs) == 0 && jobOfPod(&pods[i]) == jobName {
			cs = pods[i].Spec.Containers
		}
	}
	for _, c := range cs {
		texts := append(append([]string{}, c.Command...), c.Args...)
		for _, e := range c.Env {
			texts = append(texts, e.Value)
		}
		for _, t := range texts {
			for _, m := range findAllSubmatch(calledURLRE, t, -1) {
				p, _ := strconv.Atoi(m[5])
				if m[1] == "localhost" || p == 0 || matchLine(net4RE, m[0]) {
					continue
				}
				return m[1], m[3], p
			}
		}
	}
	return "", "", 0
}

// net4RE is an IPv4 address, which names no Service.
var net4RE = regexp.MustCompile(`\d+\.\d+\.\d+\.\d+`)

// targetPort is the pods' port behind a Service's port (the port itself
// when the Service was not read).
func targetPort(svcs []ServiceState, name string, port int) int {
	for _, s := range svcs {
		if s.Service.Name != name {
			continue
		}
		for _, p := range s.Service.Spec.Ports {
			if int(p.Port) == port && p.TargetPort.IntValue() > 0 {
				return p.TargetPort.IntValue()
			}
		}
	}
	return port
}

// peerNamespaceMatches reports whether a NetworkPolicy peer's namespace
// selector (nil: the policy's own namespace polNS) may select namespace ns.
// Only a selector naming namespaces (kubernetes.io/metadata.name or name)
// can rule one out; any other selector cannot be told and matches.
func peerNamespaceMatches(sel *metav1.LabelSelector, ns, polNS string) bool {
	if sel == nil {
		return ns == polNS
	}
	ml := sel.MatchLabels
	switch {
	case len(ml) == 0 && len(sel.MatchExpressions) == 0:
		return true
	case ml["kubernetes.io/metadata.name"] != "" || ml["name"] != "":
		return ml["kubernetes.io/metadata.name"] == ns || ml["name"] == ns
	default:
		return true // other namespace labels: cannot tell
	}
}

// ruleAdmits reports whether an ingress rule admits a client's pods (their
// labels, their namespace) on port into a policy of namespace polNS.
func ruleAdmits(rule networkingv1.NetworkPolicyIngressRule, port int, clientNS, polNS string, client map[string]string) bool {
	if !ruleAllows(rule, port, "") {
		return false
	}
	return peersAdmit(rule.From, clientNS, polNS, []map[string]string{client})
}

// peersAdmit reports whether the peers of a NetworkPolicy rule (no peers:
// every one) of a policy in namespace polNS may select pods of namespace
// ns that carry one of the label sets podLabels. An address block, a
// selector that does not parse, or no label sets at all (the pods'
// labels were not read) cannot be told and admit; an absent or empty pod
// selector admits every pod of a namespace it matches.
func peersAdmit(peers []networkingv1.NetworkPolicyPeer, ns, polNS string, podLabels []map[string]string) bool {
	if len(peers) == 0 {
		return true
	}
	for _, peer := range peers {
		if peer.IPBlock != nil {
			return true // addresses: cannot tell
		}
		if !peerNamespaceMatches(peer.NamespaceSelector, ns, polNS) {
			continue
		}
		if peer.PodSelector == nil || len(peer.PodSelector.MatchLabels) == 0 && len(peer.PodSelector.MatchExpressions) == 0 {
			return true
		}
		s, err := metav1.LabelSelectorAsSelector(peer.PodSelector)
		if err != nil || len(podLabels) == 0 {
			return true
		}
		for _, l := range podLabels {
			if s.Matches(labels.Set(l)) {
				return true
			}
		}
	}
	return false
}

// shownLabels are a pod's labels without those the job controller adds.
func shownLabels(l map[string]string) string {
	m := map[string]string{}
	for k, v := range l {
		if !strings.Contains(k, "controller-uid") && !strings.HasSuffix(k, "job-name") {
			m[k] = v
		}
	}
	return labels.Set(m).String()
}

func policyWords(np *networkingv1.NetworkPolicy) string {
	if len(np.Spec.Ingress) == 0 {
		return "denies all ingress"
	}
	var ps []string
	for _, r := range np.Spec.Ingress {
		ps = append(ps, fmt.Sprintf("port %s from %s", rulePorts(r), rulePeers(r)))
	}
	return "admits " + strings.Join(ps, "; ")
}

func describeNetpolBlocked(h *Hypothesis, sc Scope) string {
	job, svc, pol := h.fact("job"), h.Subject, h.fact("policy")
	if c := h.fact("client"); c != "" {
		return fmt.Sprintf("the NetworkPolicy %s selects the %s pods and admits only %s, not the pods of %s (labels %s): the policy's podSelector does not match the caller, so its connections to %s on port %s are dropped and time out (not refused); %s itself is up and serves the clients the policy admits",
			pol, svc, orWord(h.fact("allows"), "nothing"), c, h.fact("client_labels"), svc, h.fact("port"), svc)
	}
	d := fmt.Sprintf("the NetworkPolicy %s selects the %s pods and admits only %s, not the pods of the Job %s (labels %s): their calls to %s on port %s are dropped and time out, so the Job failed",
		pol, svc, orWord(h.fact("allows"), "nothing"), job, h.fact("client_labels"), svc, h.fact("port"))
	if hook := h.fact("hook"); hook != "" {
		d += fmt.Sprintf("; the Job is a Helm hook (%s), so its failure fails the release and helm --atomic rolls it back, while %s itself was ready and serves the clients the policy admits", hook, svc)
	} else {
		d += fmt.Sprintf("; %s itself serves the clients the policy admits", svc)
	}
	return d
}

func recommendNetpolBlocked(h *Hypothesis, sc Scope, r *recommender) {
	job, svc, pol := h.fact("job"), h.Subject, h.fact("policy")
	if c := h.fact("client"); c != "" {
		r.high("Admit the pods of %s in the NetworkPolicy %s on port %s (a from.podSelector on labels they carry: %s), or give them back the label the policy admits", c, pol, h.fact("port"), h.fact("client_labels"))
		r.med("Do not roll back %s for this: it is up and serves the clients the policy admits", svc)
		r.low("Select NetworkPolicy peers by labels that charts keep stable, and test policies when a chart changes its labels")
		return
	}
	r.add(finding.PriorityHigh, fmt.Sprintf("Admit the pods of the Job %s in the NetworkPolicy %s (a from.podSelector on their labels, or give the Job the client label the policy already admits) on port %s, then run the release again", job, pol, h.fact("port")))
	if h.fact("hook") != "" {
		r.add(finding.PriorityMedium, fmt.Sprintf("Do not roll back %s for this: the release's pods were ready; only its hook could not reach them", svc))
	}
	r.add(finding.PriorityLow, "Ship each chart's hooks and tests with the NetworkPolicy rules they need, and test policies against them before enforcing a default deny")
}
