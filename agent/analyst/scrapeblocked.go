package analyst

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// A scrape that a NetworkPolicy blocks while the service is fine: a
// default-deny ingress policy (a security baseline, a namespace's new
// isolation) selects the service's pods and the policies that allow
// traffic back let in only the application port from the ingress
// controller, not the metrics port from the monitoring namespace.
// Prometheus's scrapes time out (context deadline exceeded, an exec's
// wget timing out), up falls to 0 and TargetDown fires, while the
// service's own traffic flows as before. The alert is true about the
// scrape and false about the service: what to fix is the policy.

// KindScrapeBlocked is a scrape target down because a NetworkPolicy does
// not let the scraper reach the metrics port.
const KindScrapeBlocked Kind = "scrape_blocked"

var (
	// scrapeTimeoutRE is a scrape or a probe of the metrics port timing
	// out: what a dropped packet looks like to the scraper.
	scrapeTimeoutRE = regexp.MustCompile(`(?i)context deadline exceeded|download timed out|i/o timeout|timed out|Connection timed out|operation timed out`)
	// instancePortRE is the port of a scrape target's instance label.
	instancePortRE = regexp.MustCompile(`instance="[^":]+:(\d{2,5})"`)
	// scrapeURLPortRE is the port of a scrape URL.
	scrapeURLPortRE = regexp.MustCompile(`https?://[\w.-]+:(\d{2,5})/(?:metrics|prometheus|actuator/prometheus)\b`)
)

var scrapeBlocked = &mechanism{
	kind:   KindScrapeBlocked,
	class:  classCause,
	label:  "metrics scrape blocked by a NetworkPolicy (the service itself is up)",
	detect: detectScrapeBlocked,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return c.Kind != KindDeploy && c.Kind != KindFeatureFlag && matchLine(networkChangeRE, changeText(c))
	},
	strictTriggers: true,
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("%s is not down: Prometheus cannot reach its metrics port %s because NetworkPolicy %s", h.Subject, orWord(h.fact("port"), "?"), orWord(h.fact("deny"), "a default-deny policy"))
		if at := h.fact("created"); at != "" {
			d += fmt.Sprintf(" (created %s UTC)", at)
		}
		d += " isolates its pods for ingress"
		if a := h.fact("allowed"); a != "" {
			d += " and the network policies let in only " + a
		} else {
			d += " and no network policy allows the scrape"
		}
		d += ", so the scrapes time out (up == 0) and TargetDown fires"
		if s := h.fact("scrape_error"); s != "" {
			d += fmt.Sprintf(" (%s)", quote(s, 120))
		}
		d += fmt.Sprintf(". Meanwhile %s keeps serving (%s): the alert is about the monitoring, not an outage", h.Subject, orWord(h.fact("serving"), "its pods are Running and ready"))
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Allow the scrape: add a NetworkPolicy that lets namespace %s (Prometheus) reach port %s of %s's pods, next to %s", orWord(h.fact("scraper_ns"), "monitoring"), orWord(h.fact("port"), "the metrics port"), h.Subject, orWord(h.fact("deny"), "the default-deny policy"))
		r.med("Make default-deny baselines include the monitoring allowance (the metrics port from the Prometheus namespace) for every namespace they isolate")
		r.low("Alert on the service's availability from its traffic or a blackbox probe, not on up alone, so a blocked scrape does not page as an outage")
	},
}

// detectScrapeBlocked reads a scrape target down whose pods a NetworkPolicy
// isolates for ingress without allowing the metrics port from the
// scraper's namespace.
func detectScrapeBlocked(ev *Gathered, found []Finding) []Finding {
	var out []Finding
	done := map[string]bool{}
	for _, down := range found {
		if down.Kind != KindTargetDown || done[down.Subject] {
			continue
		}
		ns := orWord(down.Namespace, ev.Scope.Namespace)
		port := scrapePort(ev, down)
		if port == 0 {
			continue
		}
		scraperNS := scraperNamespace(ev)
		pods := podsOfWorkload(ev.K8s.Pods, ns, down.Subject)
		var deny *networkingv1.NetworkPolicy
		var allowed []string
		isolated, allows := false, false
		for i := range ev.K8s.NetworkPolicies {
			np := &ev.K8s.NetworkPolicies[i]
			if np.Namespace != ns || !policyIngress(np) || !policySelects(np, pods, down.Subject) {
				continue
			}
			isolated = true
			if len(np.Spec.Ingress) == 0 && (deny == nil || len(np.Spec.PodSelector.MatchLabels)+len(np.Spec.PodSelector.MatchExpressions) == 0) {
				deny = np
			}
			for _, rule := range np.Spec.Ingress {
				what := rulePorts(rule) + " from " + rulePeers(rule)
				allowed = append(allowed, what+" ("+np.Name+")")
				if ruleAllows(rule, port, scraperNS) {
					allows = true
				}
			}
		}
		if !isolated || allows || deny == nil {
			continue
		}
		done[down.Subject] = true
		f := Finding{Kind: KindScrapeBlocked, Subject: down.Subject, Namespace: ns, Source: SrcKubernetes, Object: "networkpolicy " + ns + "/" + deny.Name,
			Time: down.Time, Severity: SevWarning, Weight: 0.95, Related: []string{deny.Name}}
		f.setFact("port", strconv.Itoa(port))
		f.setFact("deny", deny.Name)
		f.setFact("scraper_ns", scraperNS)
		if !deny.CreationTimestamp.IsZero() {
			f.setFact("created", deny.CreationTimestamp.UTC().Format("15:04"))
		}
		sort.Strings(allowed)
		f.setFact("allowed", strings.Join(allowed, "; "))
		f.Summary = fmt.Sprintf("NetworkPolicy %s/%s blocks the scrape of %s's metrics port %d", ns, deny.Name, down.Subject, port)
		f.Evidence = []string{fmt.Sprintf("NetworkPolicy %s/%s (created %s) selects every pod of %s for ingress and allows none; the policies allow only %s: nothing admits port %d from namespace %s",
			ns, deny.Name, ts(deny.CreationTimestamp.Time), ns, orWord(strings.Join(allowed, "; "), "nothing"), port, orWord(scraperNS, "of the scraper"))}
		f.Evidence = append(f.Evidence, down.Evidence...)
		if line, cmd := scrapeTimeout(ev.Commands, port); line != "" {
			f.setFact("scrape_error", line)
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s: %s", truncate(cmd, 120), quote(line, 200)))
		}
		if serving := servingAfter(ev.Logs, down.Subject, down.Time); !serving.IsZero() {
			f.setFact("serving", fmt.Sprintf("normal lines in its log until %s", hm(serving)))
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s logged normal work until %s, after its target went down at %s", down.Subject, hm(serving), hm(down.Time)))
		}
		out = append(out, f)
	}
	return out
}

// scrapePort is the port the scraper targets: the instance label of the
// down series, or a scrape URL in the commands' output.
func scrapePort(ev *Gathered, down Finding) int {
	for _, e := range down.Evidence {
		if m := findSubmatch(instancePortRE, e); m != nil {
			p, _ := strconv.Atoi(m[1])
			return p
		}
	}
	for _, o := range ev.Commands {
		for _, l := range append([]string{o.Run}, o.Lines...) {
			if m := findSubmatch(scrapeURLPortRE, l); m != nil {
				p, _ := strconv.Atoi(m[1])
				return p
			}
		}
	}
	return 0
}

// scraperNamespace is the namespace Prometheus runs in: where a
// transcript exec'd into a Prometheus pod ("" when unknown).
func scraperNamespace(ev *Gathered) string {
	for _, o := range ev.Commands {
		if o.Exec && o.Namespace != "" && strings.Contains(strings.ToLower(o.Pod+" "+o.Target+" "+o.Container), "prometheus") {
			return o.Namespace
		}
	}
	return ""
}

// podsOfWorkload lists a workload's pods in a namespace.
func podsOfWorkload(pods []corev1.Pod, ns, wl string) []corev1.Pod {
	var out []corev1.Pod
	for i := range pods {
		if pods[i].Namespace == ns && strings.EqualFold(WorkloadOfPod(&pods[i]), wl) {
			out = append(out, pods[i])
		}
	}
	return out
}

// policyIngress reports whether a policy restricts ingress.
func policyIngress(np *networkingv1.NetworkPolicy) bool {
	if len(np.Spec.PolicyTypes) == 0 {
		return true
	}
	for _, t := range np.Spec.PolicyTypes {
		if t == networkingv1.PolicyTypeIngress {
			return true
		}
	}
	return false
}

// policySelects reports whether a policy's pod selector takes the
// workload's pods: an empty selector takes all; with the pods' labels
// unknown (a get table), a selector whose values name the workload.
func policySelects(np *networkingv1.NetworkPolicy, pods []corev1.Pod, wl string) bool {
	sel := np.Spec.PodSelector
	if len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0 {
		return true
	}
	s, err := metav1.LabelSelectorAsSelector(&sel)
	if err != nil {
		return false
	}
	for i := range pods {
		if len(pods[i].Labels) > 0 {
			if s.Matches(labels.Set(pods[i].Labels)) {
				return true
			}
			continue
		}
		if selectorNamesWorkload(sel.MatchLabels, wl) {
			return true
		}
	}
	return len(pods) == 0 && selectorNamesWorkload(sel.MatchLabels, wl)
}

// ruleAllows reports whether an ingress rule admits port from namespace
// ns ("" when the scraper's namespace is unknown: the port decides).
func ruleAllows(rule networkingv1.NetworkPolicyIngressRule, port int, ns string) bool {
	portOK := len(rule.Ports) == 0
	for _, p := range rule.Ports {
		switch {
		case p.Port == nil:
			portOK = true
		case p.Port.Type == 1: // a named port: cannot be resolved here, assume it may be the metrics port
			portOK = portOK || strings.Contains(strings.ToLower(p.Port.StrVal), "metric")
		case p.EndPort != nil:
			portOK = portOK || port >= p.Port.IntValue() && port <= int(*p.EndPort)
		default:
			portOK = portOK || p.Port.IntValue() == port
		}
	}
	if !portOK {
		return false
	}
	if len(rule.From) == 0 || ns == "" {
		return true
	}
	for _, peer := range rule.From {
		if peer.IPBlock != nil {
			return true // addresses: cannot tell, assume it may admit the scraper
		}
		if peer.NamespaceSelector == nil {
			continue // a pod selector alone: this namespace's pods only
		}
		ml := peer.NamespaceSelector.MatchLabels
		if len(ml) == 0 && len(peer.NamespaceSelector.MatchExpressions) == 0 {
			return true
		}
		if ml["kubernetes.io/metadata.name"] == ns || ml["name"] == ns {
			return true
		}
		if ml["kubernetes.io/metadata.name"] == "" && ml["name"] == "" {
			return true // other namespace labels: cannot tell
		}
	}
	return false
}

// rulePorts and rulePeers say what a rule admits, in kubectl's words.
func rulePorts(rule networkingv1.NetworkPolicyIngressRule) string {
	if len(rule.Ports) == 0 {
		return "any port"
	}
	var ps []string
	for _, p := range rule.Ports {
		s := "any port"
		if p.Port != nil {
			s = p.Port.String()
		}
		if p.Protocol != nil {
			s += "/" + string(*p.Protocol)
		}
		ps = append(ps, s)
	}
	return strings.Join(ps, ", ")
}

func rulePeers(rule networkingv1.NetworkPolicyIngressRule) string {
	if len(rule.From) == 0 {
		return "anywhere"
	}
	var ps []string
	for _, p := range rule.From {
		switch {
		case p.NamespaceSelector != nil:
			if n := p.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"]; n != "" {
				ps = append(ps, "namespace "+n)
			} else {
				ps = append(ps, "namespaces "+metav1.FormatLabelSelector(p.NamespaceSelector))
			}
		case p.PodSelector != nil:
			ps = append(ps, "pods "+metav1.FormatLabelSelector(p.PodSelector))
		case p.IPBlock != nil:
			ps = append(ps, p.IPBlock.CIDR)
		}
	}
	return strings.Join(ps, ", ")
}

// scrapeTimeout finds a command's output showing a scrape or a fetch of
// the metrics port timing out (the targets API's lastError, a wget from
// the Prometheus pod).
func scrapeTimeout(outs []evidence.CommandOutput, port int) (line, cmd string) {
	p := ":" + strconv.Itoa(port)
	for _, o := range outs {
		for _, l := range o.Lines {
			if !matchLine(scrapeTimeoutRE, l) {
				continue
			}
			if strings.Contains(o.Run, p) || strings.Contains(l, p) {
				if i := strings.Index(l, `"lastError":"`); i >= 0 {
					l = l[i+len(`"lastError":"`):]
					if j := strings.Index(l, `","`); j >= 0 {
						l = l[:j]
					}
				}
				return strings.ReplaceAll(l, `\"`, `"`), o.Run
			}
		}
	}
	return "", ""
}

// servingAfter is the last normal (not error) line of the subject's own
// log after t: it kept working.
func servingAfter(sets []LogSet, subject string, t time.Time) time.Time {
	var serving time.Time
	for i := range sets {
		set := &sets[i]
		if set.Subject != subject {
			continue
		}
		for j, tp := range set.Templates {
			if tp.Incident > 0 && !set.classified(j).isErr && tp.LastSeen.After(serving) {
				serving = tp.LastSeen
			}
		}
	}
	if !serving.After(t.Add(5 * time.Minute)) {
		return time.Time{}
	}
	return serving
}
