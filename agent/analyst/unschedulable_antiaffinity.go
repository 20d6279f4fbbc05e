package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Pods refused by their own required pod anti-affinity: a workload whose
// template says no two of its pods may share a topology domain
// (requiredDuringSchedulingIgnoredDuringExecution with topologyKey
// topology.kubernetes.io/zone, or kubernetes.io/hostname) runs at most one
// pod per domain, whatever its replicas or autoscaler ask: the extra pods
// stay Pending with "didn't match pod anti-affinity rules", and the
// cluster autoscaler declines to add nodes in domains that already hold
// one (NotTriggerScaleUp). The rule is read from the workload's spec, or
// from a YAML projection of it handed over as text; the change that added
// it is often days older than the first scale-up past the domain count.

var (
	topologyKeyRE  = regexp.MustCompile(`topologyKey:\s*"?([\w./-]+)"?`)
	antiAffinityRE = regexp.MustCompile(`(?i)anti-?affinity`)
)

// antiAffinityRule is a workload's pod anti-affinity as read.
type antiAffinityRule struct {
	key      string
	required bool
	self     bool // its selector names the workload itself
}

// explainAntiAffinity adds to pods refused by anti-affinity the rule of
// their workload, the number of domains of its key and the change that
// added it.
func explainAntiAffinity(ev *Gathered, found []Finding) {
	for i := range found {
		f := &found[i]
		if f.Kind != KindUnschedulable || !strings.Contains(strings.ToLower(f.fact("message")), "anti-affinity") || f.fact("anti_key") != "" {
			continue
		}
		rule, ok := workloadAntiAffinity(ev, f.Namespace, f.Subject)
		if !ok {
			continue
		}
		f.setFact("anti_key", rule.key)
		if rule.self {
			f.setFact("anti_self", "true")
		}
		if rule.required {
			f.setFact("anti_required", "true")
		}
		if n := topologyDomains(ev.K8s.Nodes, rule.key); n > 0 {
			f.setFact("anti_domains", fmt.Sprint(n))
		}
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s's pod template sets a %s pod anti-affinity on its own pods with topologyKey %s", f.Subject, map[bool]string{true: "required", false: "preferred"}[rule.required], rule.key))
		for _, c := range slices.Concat(ev.Earlier, ev.Changes) {
			if strings.EqualFold(c.Service, f.Subject) && matchLine(antiAffinityRE, c.Description) {
				f.setFact("anti_change", fmt.Sprintf("%s (%s)", quote(c.Description, 140), c.Timestamp.UTC().Format("2006-01-02 15:04 UTC")))
			}
		}
	}
}

// workloadAntiAffinity reads the pod anti-affinity of a workload's
// template: from its Deployment or StatefulSet, else from a YAML
// projection of it in the commands handed over.
func workloadAntiAffinity(ev *Gathered, ns, name string) (antiAffinityRule, bool) {
	var specs []*corev1.PodSpec
	for i := range ev.K8s.Deployments {
		if d := &ev.K8s.Deployments[i]; d.Name == name && (ns == "" || d.Namespace == ns) {
			specs = append(specs, &d.Spec.Template.Spec)
		}
	}
	for i := range ev.K8s.StatefulSets {
		if s := &ev.K8s.StatefulSets[i]; s.Name == name && (ns == "" || s.Namespace == ns) {
			specs = append(specs, &s.Spec.Template.Spec)
		}
	}
	for _, s := range specs {
		if a := s.Affinity; a != nil && a.PodAntiAffinity != nil {
			if r := a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution; len(r) > 0 {
				return antiAffinityRule{key: r[0].TopologyKey, required: true, self: selectsName(r[0].LabelSelector, name)}, true
			}
			if p := a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution; len(p) > 0 {
				return antiAffinityRule{key: p[0].PodAffinityTerm.TopologyKey, self: selectsName(p[0].PodAffinityTerm.LabelSelector, name)}, true
			}
		}
	}
	for _, c := range ev.Commands {
		if !strings.Contains(c.Command, name) {
			continue
		}
		in, rule := false, antiAffinityRule{}
		for _, l := range c.Lines {
			t := strings.TrimSpace(l)
			switch {
			case strings.HasPrefix(t, "podAntiAffinity:"):
				in = true
			case in && strings.HasPrefix(t, "requiredDuringScheduling"):
				rule.required = true
			case in && strings.HasSuffix(t, ": "+name):
				rule.self = true
			case in && matchLine(topologyKeyRE, t):
				rule.key = findSubmatch(topologyKeyRE, t)[1]
				return rule, true
			case in && (strings.HasPrefix(t, "podAffinity:") || strings.HasPrefix(t, "nodeAffinity:") || strings.HasPrefix(t, "containers:")):
				in = false
			}
		}
	}
	return antiAffinityRule{}, false
}

// selectsName reports whether a label selector names the workload.
func selectsName(s *metav1.LabelSelector, name string) bool {
	if s == nil {
		return false
	}
	for _, v := range s.MatchLabels {
		if v == name {
			return true
		}
	}
	for _, e := range s.MatchExpressions {
		if slices.Contains(e.Values, name) {
			return true
		}
	}
	return false
}

// topologyDomains counts the values of a node label across the nodes.
func topologyDomains(nodes []corev1.Node, key string) int {
	seen := map[string]bool{}
	for _, n := range nodes {
		if v := n.Labels[key]; v != "" {
			seen[v] = true
		}
	}
	return len(seen)
}

// antiAffinityClause is what the rule read says of the pods refused.
func antiAffinityClause(h *Hypothesis) string {
	key := h.fact("anti_key")
	if key == "" {
		return ""
	}
	strength := map[bool]string{true: "required (requiredDuringSchedulingIgnoredDuringExecution)", false: "preferred"}[h.fact("anti_required") != ""]
	if h.fact("anti_self") == "" {
		return fmt.Sprintf(". %s's template sets a %s podAntiAffinity with topologyKey %s", h.Subject, strength, key) + h.clause("; the rule came with ", "anti_change")
	}
	d := fmt.Sprintf(". Their own pod anti-affinity forbids it: %s's template sets a %s podAntiAffinity on its own pods with topologyKey %s, so no two of its pods may share a %s",
		h.Subject, strength, key, domainWord(key))
	if n := h.fact("anti_domains"); n != "" && h.fact("anti_required") != "" {
		d += fmt.Sprintf(" and at most %s pods can run (%s %ss), whatever its replicas or autoscaler ask; adding nodes does not help", n, n, domainWord(key))
	}
	return d + h.clause("; the rule came with ", "anti_change")
}

// domainWord names a topology key's domain.
func domainWord(key string) string {
	switch {
	case strings.HasSuffix(key, "/zone"):
		return "zone"
	case strings.HasSuffix(key, "/region"):
		return "region"
	case strings.HasSuffix(key, "/hostname"):
		return "node"
	}
	return "domain"
}
