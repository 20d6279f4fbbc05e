package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// The asker's own kubectl command refused by RBAC: "can't exec into the
// pod", "kubectl logs says forbidden". The transcript shows the API
// server's answer to the person ('Error from server (Forbidden): pods "x"
// is forbidden: User "ana@example.com" cannot create resource "pods/exec"
// in API group "" in the namespace "shop"'); the pod itself is fine. The
// chain reads who the asker is (kubectl auth whoami's Username and
// Groups), kubectl auth can-i answers, and the namespace's RoleBindings:
// those that apply to the user or one of its groups, and a binding of a
// role that would grant the verb whose subjects are a group the user's
// token does not carry (a binding regenerated with another group name, an
// identity provider's group renamed). A diff of the RBAC manifests in the
// transcript that replaced one of the user's groups says when and how.
// Only a question about that action (exec, logs, port-forward, or the
// refusal itself) is answered so: a refused exec beside a question about
// something else is the asker's tooling, not the incident.

// KindAskerForbidden is the asker's own kubectl command refused by RBAC.
const KindAskerForbidden Kind = "asker_forbidden"

var askerForbidden = &mechanism{
	kind:  KindAskerForbidden,
	class: classCause,
	label: "the asker's own kubectl command refused by RBAC (forbidden)",
	detect: func(ev *Gathered, _ []Finding) []Finding {
		return detectAskerForbidden(ev)
	},
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return matchLine(rbacChangeRE, c.fact("description"))
	},
	strictTriggers: true,
	describe:       describeAskerForbidden,
	recommend:      recommendAskerForbidden,
}

// askedActionRE reads a question about a refused action in general;
// askedVerbRE the words people use for each subresource's action.
var (
	askedRefusalRE = regexp.MustCompile(`(?i)forbidden|permission|\brbac\b|not allowed|access denied|denied|unauthori[sz]ed|\b403\b|\bcan-i\b`)
	askedVerbRE    = map[string]*regexp.Regexp{
		"pods/exec":        regexp.MustCompile(`(?i)\bexec\b|\bshell\b|\bssh\b|\bget into\b|\bsh into\b|\bbash\b`),
		"pods/attach":      regexp.MustCompile(`(?i)\battach\b`),
		"pods/log":         regexp.MustCompile(`(?i)\blogs?\b`),
		"pods/portforward": regexp.MustCompile(`(?i)port[- ]?forward`),
		"pods/eviction":    regexp.MustCompile(`(?i)\bevict|\bdrain`),
	}
	// whoamiGroupsRE reads kubectl auth whoami's Groups row ("Groups
	// [a b c]"); whoamiUserRE its Username row.
	whoamiGroupsRE = regexp.MustCompile(`^Groups\s+\[(.*)\]\s*$`)
	whoamiUserRE   = regexp.MustCompile(`^Username\s+(\S+)\s*$`)
	// A diff line of a manifest's subject name: removed or added.
	diffNameRE = regexp.MustCompile(`^([-+])\s+(?:-\s+)?name:\s*"?([^"\s]+)"?\s*$`)
	// The resource a refusal names: pods "x" is forbidden.
	forbiddenObjectRE = regexp.MustCompile(`(\w+) "([^"]+)" is forbidden`)
)

// askedAbout reports whether the question asks about an action on the
// refused resource.
func askedAbout(question, verb, resource string) bool {
	if matchLine(askedRefusalRE, question) {
		return true
	}
	if re := askedVerbRE[resource]; re != nil {
		return matchLine(re, question)
	}
	// Another resource: the question names it and the verb ("can't
	// delete the job").
	res := strings.TrimSuffix(resource, "s")
	return res != "" && strings.Contains(strings.ToLower(question), res) && strings.Contains(strings.ToLower(question), verb)
}

func detectAskerForbidden(ev *Gathered) []Finding {
	q := ev.Scope.Message
	if q == "" {
		return nil
	}
	for _, c := range ev.Commands {
		for _, l := range c.Lines {
			m := findSubmatch(forbiddenRE, l)
			if m == nil || strings.HasPrefix(m[1], "system:") || m[2] == "impersonate" {
				continue
			}
			if !askedAbout(q, m[2], m[3]) {
				continue
			}
			f := askerFinding(ev, c, l, m)
			return []Finding{f}
		}
	}
	return nil
}

// askerFinding is the finding of the asker's refused command, followed to
// its identity, can-i answers and the namespace's bindings.
func askerFinding(ev *Gathered, c evidence.CommandOutput, line string, m []string) Finding {
	ns := orWord(m[5], c.Namespace)
	subject := ""
	if om := findSubmatch(forbiddenObjectRE, line); om != nil && strings.HasPrefix(om[1], "pod") {
		subject = workloadOfPodNamed(ev.K8s, ns, om[2])
	}
	if subject == "" && c.Pod != "" {
		subject = workloadOfPodNamed(ev.K8s, ns, c.Pod)
	}
	if subject == "" {
		subject = orWord(ev.Scope.Service, ns)
	}
	f := Finding{Kind: KindAskerForbidden, Subject: subject, Namespace: ns, Object: "kubectl command " + quote(orWord(c.Command, c.Run), 120),
		Source: SrcKubernetes, Time: ev.Window.End, Severity: SevCritical, Weight: 0.85}
	f.setFact("user", m[1])
	f.setFact("verb", m[2])
	f.setFact("resource", m[3])
	f.setFact("namespace", ns)
	f.setFact("command", orWord(c.Command, c.Run))
	f.setFact("line", strings.TrimSpace(line))
	f.Summary = fmt.Sprintf("%s is forbidden to %s %s%s (RBAC): %s refused", m[1], m[2], m[3], inNamespace(ns), quote(orWord(c.Command, c.Run), 100))
	f.Evidence = []string{fmt.Sprintf("%s (%s): %s", quote(orWord(c.Command, c.Run), 160), c.Source, quote(strings.TrimSpace(line), 240))}
	// can-i answers of the asker itself (no --as).
	var can []string
	for _, a := range canIAnswers(ev.Commands) {
		if a.as != "" || a.namespace != ns {
			continue
		}
		word := "no"
		if a.allowed {
			word = "yes"
		}
		can = append(can, fmt.Sprintf("can-i %s %s: %s", a.verb, a.resource, word))
	}
	if len(can) > 0 {
		f.setFact("can_i", "kubectl auth can-i answers "+strings.Join(can, ", "))
		f.Evidence = append(f.Evidence, f.fact("can_i"))
		f.Weight = 0.9
	}
	groups := whoamiGroups(ev.Commands, m[1])
	if len(groups) > 0 {
		f.setFact("groups", strings.Join(groups, " "))
		f.Evidence = append(f.Evidence, fmt.Sprintf("kubectl auth whoami: %s carries the groups %s", m[1], strings.Join(groups, ", ")))
	}
	followAskerBindings(&f, ev, ns, m[1], groups)
	return f
}

// whoamiGroups reads the groups kubectl auth whoami lists for user.
func whoamiGroups(cmds []evidence.CommandOutput, user string) []string {
	for _, c := range cmds {
		if !strings.Contains(c.Run, "whoami") {
			continue
		}
		who, groups := "", []string(nil)
		for _, l := range c.Lines {
			t := strings.TrimSpace(l)
			if m := whoamiUserRE.FindStringSubmatch(t); m != nil {
				who = m[1]
			}
			if m := whoamiGroupsRE.FindStringSubmatch(t); m != nil {
				groups = strings.Fields(m[1])
			}
		}
		if len(groups) > 0 && (who == "" || who == user) {
			return groups
		}
	}
	return nil
}

// grantsWrite reports whether a binding's role would grant an action
// beyond reading (edit, admin, cluster-admin, a Role named for developers
// or operators).
func grantsWrite(ref rbacv1.RoleRef) bool {
	n := strings.ToLower(ref.Name)
	return n == "edit" || n == "admin" || n == "cluster-admin" || strings.Contains(n, "develop") || strings.Contains(n, "exec") || strings.Contains(n, "operator") || strings.Contains(n, "maintain") || strings.Contains(n, "debug")
}

// followAskerBindings reads the namespace's RoleBindings: the ones that
// apply to the user and a binding of a stronger role to a group it lacks.
func followAskerBindings(f *Finding, ev *Gathered, ns, user string, groups []string) {
	applies := func(s rbacv1.Subject) bool {
		switch s.Kind {
		case "User":
			return s.Name == user
		case "Group":
			return slices.Contains(groups, s.Name) || s.Name == "system:authenticated"
		}
		return false
	}
	var mine []string
	var other *rbacv1.RoleBinding
	otherGroup := ""
	for i := range ev.K8s.RoleBindings {
		rb := &ev.K8s.RoleBindings[i]
		if rb.Namespace != ns && rb.Namespace != "" {
			continue
		}
		if slices.ContainsFunc(rb.Subjects, applies) {
			mine = append(mine, fmt.Sprintf("%s (%s/%s)", rb.Name, rb.RoleRef.Kind, rb.RoleRef.Name))
			continue
		}
		if len(groups) == 0 || !grantsWrite(rb.RoleRef) || other != nil {
			continue
		}
		for _, s := range rb.Subjects {
			if s.Kind == "Group" {
				other, otherGroup = rb, s.Name
				break
			}
		}
	}
	if len(mine) > 0 {
		f.setFact("applies", strings.Join(mine, ", "))
	}
	if other == nil {
		return
	}
	f.setFact("binding", other.Name)
	f.setFact("binding_role", other.RoleRef.Kind+"/"+other.RoleRef.Name)
	f.setFact("binding_group", otherGroup)
	e := fmt.Sprintf("RoleBinding %s/%s binds %s/%s to group %s, which %s's token does not carry", ns, other.Name, other.RoleRef.Kind, other.RoleRef.Name, otherGroup, user)
	f.Evidence = append(f.Evidence, e)
	f.Weight = 0.95
	if t := other.CreationTimestamp.Time; !t.IsZero() && t.Before(ev.Window.End) {
		f.setFact("cause_at", t.UTC().Format(time.RFC3339))
		f.setFact("cause_event", fmt.Sprintf("RoleBinding %s/%s (%s/%s) created for group %s", ns, other.Name, other.RoleRef.Kind, other.RoleRef.Name, otherGroup))
	}
	// A diff in the transcript that replaced one of the user's groups by
	// the binding's group.
	for _, c := range ev.Commands {
		removed, added := "", false
		for _, l := range c.Lines {
			dm := diffNameRE.FindStringSubmatch(strings.TrimRight(l, " "))
			if dm == nil {
				continue
			}
			if dm[1] == "-" && slices.Contains(groups, dm[2]) {
				removed = dm[2]
			}
			if dm[1] == "+" && dm[2] == otherGroup {
				added = true
			}
		}
		if removed != "" && added {
			f.setFact("replaced", removed)
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s: the binding's subject changed from group %s to %s", quote(c.Run, 160), removed, otherGroup))
			break
		}
	}
}

func describeAskerForbidden(h *Hypothesis, sc Scope) string {
	d := fmt.Sprintf("the asker's own command %s is refused by RBAC (403 Forbidden): user %s may not %s %s%s, so the request never reaches %s, which is not at fault",
		quote(h.fact("command"), 120), h.fact("user"), h.fact("verb"), h.fact("resource"), inNamespace(h.fact("namespace")), h.Subject)
	d += ": " + quote(h.fact("line"), 240)
	d += h.clause("; ", "can_i")
	if b := h.fact("binding"); b != "" {
		d += fmt.Sprintf("; RoleBinding %s (%s) binds group %s, but the user's token carries the groups %s, so that binding does not apply",
			b, h.fact("binding_role"), h.fact("binding_group"), strings.ReplaceAll(h.fact("groups"), " ", ", "))
		if r := h.fact("replaced"); r != "" {
			d += fmt.Sprintf(" (the binding named group %s before it was regenerated)", r)
		}
		if a := h.fact("applies"); a != "" {
			d += "; only " + a + " applies to it"
		}
	} else if a := h.fact("applies"); a != "" {
		d += "; the RoleBindings that apply to it (" + a + ") do not grant it"
	}
	return d
}

func recommendAskerForbidden(h *Hypothesis, sc Scope, r *recommender) {
	ns := h.fact("namespace")
	if b := h.fact("binding"); b != "" {
		g := orWord(h.fact("replaced"), "the group the user's token carries")
		r.high("Bind the role to the group the users actually carry: add group %s to the subjects of RoleBinding %s in namespace %s (in the manifests that generate it), or make the identity provider issue group %s", g, b, ns, h.fact("binding_group"))
	} else {
		r.high("Grant user %s (or one of its groups) %s %s in namespace %s through a RoleBinding of a role that has it", h.fact("user"), h.fact("verb"), h.fact("resource"), ns)
	}
	r.med("Check with: kubectl auth can-i %s %s -n %s (as the user), and kubectl get rolebindings -n %s -o wide", h.fact("verb"), h.fact("resource"), ns, ns)
	r.low("Test generated RBAC against the groups the identity provider issues before it is synced")
}
