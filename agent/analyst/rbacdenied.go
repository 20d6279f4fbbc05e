package analyst

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A workload whose ServiceAccount may not do what it needs: the API server
// answers 403 Forbidden and names the user, the verb, the resource and the
// namespace ('leases.coordination.k8s.io "x-leader" is forbidden: User
// "system:serviceaccount:warehouse:stock-reconciler" cannot get resource
// "leases" in API group "coordination.k8s.io" in the namespace
// "warehouse"'). The pods run and look healthy, but a controller that
// cannot take its leader lease, list what it watches or write its results
// stays idle. The cause is the RBAC binding (a Role or RoleBinding that
// does not name the ServiceAccount, often after a deploy moved the
// workload to a new ServiceAccount), not a credential.

// KindRBACDenied is a workload's ServiceAccount refused by RBAC.
const KindRBACDenied Kind = "rbac_denied"

var rbacDenied = &mechanism{
	kind:   KindRBACDenied,
	class:  classCause,
	label:  "RBAC permission denied (forbidden) to the workload's ServiceAccount",
	detect: detectRBACDenied,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		if matchLine(rbacChangeRE, c.fact("description")) {
			return true
		}
		// A change of the namespace the refusal is in (its objects
		// re-applied or pruned).
		if ns := h.fact("namespace"); ns != "" && ns != h.top().Namespace && (c.Subject == ns || namesNamespace(c.fact("description"), ns)) && c.Kind != KindDeploy {
			return true
		}
		if c.Kind == KindDeploy && matchLine(imageOnlyRE, c.fact("description")) {
			return false // the same manifests, another image: no new ServiceAccount
		}
		return c.Subject == h.Subject && (c.Kind == KindDeploy || c.Kind == KindConfigChange || c.Kind == KindInfraChange)
	},
	strictTriggers: true,
	describe: func(h *Hypothesis, sc Scope) string {
		scope := "at the cluster scope"
		if ns := h.fact("namespace"); ns != "" {
			scope = "in the namespace " + ns
		}
		res := h.fact("resource")
		res += h.clause(".", "group")
		d := fmt.Sprintf("%s's ServiceAccount %s is forbidden by RBAC to %s %s %s: no Role or RoleBinding grants it this permission, so the API server refuses every call (403 Forbidden)",
			h.Subject, h.fact("user"), h.fact("verb"), res, scope)
		if strings.Contains(h.fact("resource"), "lease") {
			d += fmt.Sprintf("; %s cannot take its leader lease, so no replica becomes leader and it stays idle although its pods run", h.Subject)
		}
		if l := h.fact("line"); l != "" {
			d += ": " + quote(forbiddenMessage(ReadableLine(l)), 240)
		}
		if c := h.fact("can_i"); c != "" {
			d += "; " + c
			d += h.wrapped(" (yes in ", "allowed_in", ")")
		}
		d += h.clause("; ", "cluster_binding")
		if b := h.fact("bound_elsewhere"); b != "" {
			d += "; " + b
			d += h.clause(", but ", "missing_here")
		}
		switch {
		case h.fact("cause_change") != "":
			d += "; the binding went with the change " + h.fact("cause_change")
		case h.fact("cause_words") != "":
			d += "; " + h.fact("cause_words")
		}
		d += h.clause("; ", "later_deploy")
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		if crb := h.fact("crb_name"); crb != "" {
			if other := h.fact("crb_other_sa"); other != "" {
				r.high("Add ServiceAccount %s to the subjects of ClusterRoleBinding %s (it names %s, of another namespace): kubectl patch clusterrolebinding %s --type=json -p '[{\"op\":\"add\",\"path\":\"/subjects/-\",\"value\":{\"kind\":\"ServiceAccount\",\"name\":\"%s\",\"namespace\":\"%s\"}}]', in the manifests that own it, then re-run %s",
					h.fact("user"), crb, other, crb, h.fact("sa_name"), h.fact("sa_ns"), h.Subject)
			} else {
				r.high("Add the rule to %s that ClusterRoleBinding %s binds to %s: %s %s (kubectl edit clusterrole %s), then re-run %s", h.fact("crb_role"), crb, h.fact("user"), h.fact("verb"), h.fact("resource"), strings.TrimPrefix(h.fact("crb_role"), "ClusterRole/"), h.Subject)
			}
		} else if rb, role := h.fact("bound_name"), h.fact("bound_role"); rb != "" && h.fact("missing_here") != "" {
			flag := "--role="
			if kind, name, _ := strings.Cut(role, "/"); kind == "ClusterRole" {
				flag = "--clusterrole="
				role = name
			} else {
				role = name
			}
			r.high("Recreate the RoleBinding %s in namespace %s as it is in namespace %s (%s to ServiceAccount %s): kubectl create rolebinding %s -n %s %s%s --serviceaccount=%s; put it in the manifests that now own namespace %s (its GitOps repository or chart) so the next sync does not prune it, then re-run %s",
				rb, h.fact("namespace"), h.fact("bound_ns"), h.fact("bound_role"), h.fact("user"), rb, h.fact("namespace"), flag, role, strings.Replace(h.fact("user"), "/", ":", 1), h.fact("namespace"), h.Subject)
		} else {
			r.high("Grant the ServiceAccount %s the permission: add it to the subjects of the RoleBinding that grants %s %s (or bind a Role that does), or point the workload back at the ServiceAccount that is bound", h.fact("user"), h.fact("verb"), h.fact("resource"))
		}
		r.rollback()
		r.med("Check with: kubectl auth can-i %s %s --as=%s%s", h.fact("verb"), h.fact("resource"), h.fact("user_full"), nsFlag(h.fact("namespace")))
		r.low("Ship the RBAC objects with the workload's manifests and alert on 403 Forbidden answers of the API server to its ServiceAccount")
	},
}

func nsFlag(ns string) string {
	if ns == "" {
		return ""
	}
	return " -n " + ns
}

// forbiddenRE reads the refusal as client-go, fabric8 ("Failure executing:
// GET ... Message: ... is forbidden: ...") and the Python client print it;
// the Python client's "HTTP response body:" line holds it inside a JSON
// Status, its quotes escaped (\").
// rbacChangeRE reads a change of the RBAC objects or the ServiceAccounts;
// imageOnlyRE a deploy that only pushed or re-tagged an image.
var (
	rbacChangeRE = regexp.MustCompile(`(?i)\brbac\b|serviceaccount|service account|rolebinding|clusterrole|\brole\b`)
	imageOnlyRE  = regexp.MustCompile(`(?i)\bre-?tag|image (?:pushed|push|bump)|retagged`)
)

// forbiddenMessage is the refusal of a line as the API server wrote it:
// the message of a JSON Status with its quotes unescaped, else the line.
func forbiddenMessage(line string) string {
	s := strings.ReplaceAll(line, `\"`, `"`)
	if i := strings.Index(s, `"message":"`); i >= 0 && strings.Contains(s[i:], "is forbidden") {
		s = s[i+len(`"message":"`):]
		if j := strings.Index(s, `","reason"`); j >= 0 {
			s = s[:j]
		}
	}
	return s
}

var forbiddenRE = regexp.MustCompile(`is forbidden: User \\?"([^"\\]+)\\?" cannot (\w+) resource \\?"([^"\\]+)\\?" in API group \\?"([^"\\]*)\\?"(?: in the namespace \\?"([^"\\]+)\\?"| at the cluster scope)?`)

// detectRBACDenied reads the API server's refusals the workloads log,
// in their log sets and in the last lines of their failed containers (a
// Job's pods that exited on the refusal), and follows each to the
// ServiceAccount's bindings.
func detectRBACDenied(ev *Gathered, _ []Finding) []Finding {
	out := rbacDeniedInLogSets(ev)
	out = append(out, rbacDeniedInPodLogs(ev, out)...)
	for i := range out {
		followRBACBindings(&out[i], ev)
	}
	return out
}

// rbacDeniedInLogSets reads the refusals of the mined log sets.
func rbacDeniedInLogSets(ev *Gathered) []Finding {
	var out []Finding
	seen := map[string]int{}
	for set, t := range incidentTemplates(ev) {
		line := t.Example
		m := findSubmatch(forbiddenRE, line)
		if m == nil {
			if m = findSubmatch(forbiddenRE, t.Last); m == nil {
				continue
			}
			line = t.Last
		}
		key := set.Subject + "\x00" + m[1] + m[2] + m[3]
		if j, ok := seen[key]; ok {
			out[j].addCount(t.Incident)
			out[j].Time = earliest(out[j].Time, orTime(t.FirstIncident, t.FirstSeen))
			continue
		}
		f := rbacFinding(m, set.Subject, set.Namespace, set.Origin+" "+set.Source, set.Origin, line, orTime(t.FirstIncident, t.FirstSeen))
		f.addCount(t.Incident)
		f.Evidence = []string{templateEvidence(*set, t, line),
			fmt.Sprintf("the API server refuses %s to %s %s (RBAC: forbidden)", f.fact("user"), m[2], m[3])}
		seen[key] = len(out)
		out = append(out, f)
	}
	return out
}

// rbacFinding is the finding of one refusal line: who may not do what,
// where.
func rbacFinding(m []string, subject, ns, object, source, line string, at time.Time) Finding {
	f := Finding{Kind: KindRBACDenied, Subject: subject, Namespace: ns, Object: object, Source: source,
		Time: at, Severity: SevCritical, Weight: 0.9}
	user := m[1]
	f.setFact("user_full", user)
	if strings.HasPrefix(user, "system:serviceaccount:") {
		user = strings.Replace(strings.TrimPrefix(user, "system:serviceaccount:"), ":", "/", 1)
	}
	f.setFact("user", user)
	f.setFact("verb", m[2])
	f.setFact("resource", m[3])
	f.setFact("group", m[4])
	f.setFact("namespace", m[5])
	f.setFact("line", line)
	f.setFact("caller", subject)
	f.Summary = fmt.Sprintf("%s is forbidden to %s %s%s (RBAC), from %s", user, m[2], m[3], inNamespace(m[5]), hm(at))
	return f
}

func inNamespace(ns string) string {
	if ns == "" {
		return " at the cluster scope"
	}
	return " in namespace " + ns
}

// rbacDeniedInPodLogs reads the refusals in the last lines of containers
// (kubectl logs, --previous): a Job's pod, or a container that exits on
// the refusal, logs it once before it ends, too rarely to be mined as a
// template.
func rbacDeniedInPodLogs(ev *Gathered, have []Finding) []Finding {
	var out []Finding
	known := func(subject string, m []string) bool {
		for _, f := range append(slices.Clone(have), out...) {
			if f.Subject == subject && f.fact("user_full") == m[1] && f.fact("verb") == m[2] && f.fact("resource") == m[3] {
				return true
			}
		}
		return false
	}
	for _, key := range slices.Sorted(maps.Keys(ev.K8s.PreviousLogs)) {
		ns, rest, _ := strings.Cut(key, "/")
		pod, container, _ := strings.Cut(rest, "/")
		var lastT time.Time // a traceback's lines carry no time: the line above them does
		for _, l := range ev.K8s.PreviousLogs[key] {
			if !l.Time.IsZero() {
				lastT = l.Time
			}
			m := findSubmatch(forbiddenRE, l.Text)
			if m == nil {
				continue
			}
			subject := workloadOfPodNamed(ev.K8s, ns, pod)
			if known(subject, m) {
				break
			}
			at := orTime(lastT, podStarted(ev.K8s, ns, pod))
			if at.IsZero() {
				at = ev.Window.End
			}
			obj := "pod " + ns + "/" + pod + containerWord(container)
			f := rbacFinding(m, subject, ns, obj, SrcKubernetes, l.Text, at)
			// The last words of a container that ended: its current
			// state, however long ago it ran.
			f.setFact("current", "true")
			f.Evidence = []string{fmt.Sprintf("log of %s: %s", obj, quote(forbiddenMessage(ReadableLine(l.Text)), 240)),
				fmt.Sprintf("the API server refuses %s to %s %s%s (RBAC: forbidden)", f.fact("user"), m[2], m[3], inNamespace(m[5]))}
			out = append(out, f)
			break
		}
	}
	return out
}

// workloadOfPodNamed names the workload of a pod: its CronJob or Job for a
// Job's pod, else its workload (from the pod when it was read, else its
// name).
func workloadOfPodNamed(k K8sEvidence, ns, name string) string {
	for i := range k.Pods {
		p := &k.Pods[i]
		if p.Namespace != ns || p.Name != name {
			continue
		}
		if j := jobOfPod(p); j != "" {
			return orWord(cronJobOf(j), j)
		}
		return WorkloadOfPod(p)
	}
	// A Job's pod is named <job>-<5 characters>.
	if i := strings.LastIndexByte(name, '-'); i > 0 && len(name)-i-1 == 5 {
		if cj := cronJobOf(name[:i]); cj != "" {
			return cj
		}
	}
	return trimHash(name)
}

// canIAnswer is one answer of kubectl auth can-i handed over in a
// transcript.
type canIAnswer struct {
	verb, resource, namespace, as string
	allowed                       bool
	command                       string
}

// canIAnswers reads the kubectl auth can-i answers among the commands.
func canIAnswers(cmds []evidence.CommandOutput) []canIAnswer {
	var out []canIAnswer
	for _, c := range cmds {
		fields := strings.Fields(c.Run)
		i := slices.Index(fields, "can-i")
		if i < 1 || fields[i-1] != "auth" {
			continue
		}
		a := canIAnswer{command: c.Run}
		var pos []string
		// Flags may come before the subcommand (kubectl -n ns auth can-i).
		for j := 1; j < len(fields); j++ {
			f := fields[j]
			name, val, hasVal := strings.Cut(f, "=")
			takeNext := func() string {
				if hasVal {
					return val
				}
				if j+1 < len(fields) {
					j++
					return fields[j]
				}
				return ""
			}
			switch name {
			case "-n", "--namespace":
				a.namespace = takeNext()
			case "--as":
				a.as = takeNext()
			case "-A", "--all-namespaces", "--list":
				if name == "--list" {
					pos = nil
					j = len(fields)
				}
			default:
				if j > i && !strings.HasPrefix(f, "-") {
					pos = append(pos, f)
				}
			}
		}
		if len(pos) < 2 {
			continue
		}
		a.verb, a.resource = pos[0], pos[1]
		answered := false
		for k := len(c.Lines) - 1; k >= 0 && !answered; k-- {
			switch t := strings.TrimSpace(c.Lines[k]); {
			case t == "yes":
				a.allowed, answered = true, true
			case t == "no" || strings.HasPrefix(t, "no - "):
				answered = true
			}
		}
		if answered {
			out = append(out, a)
		}
	}
	return out
}

// followRBACBindings follows a refusal to what the evidence says of the
// ServiceAccount's permissions: kubectl auth can-i answers for it (denied
// here, allowed elsewhere), the RoleBindings that name it in other
// namespaces, and whether the denied namespace has their like. When every
// RoleBinding of the denied namespace was created at one moment, later
// than the binding the ServiceAccount keeps elsewhere, the namespace's
// bindings were recreated then (a re-apply, a GitOps sync that prunes what
// is not in its repository) without the ServiceAccount's: that moment is
// when the permission went. A change of the namespace or its RBAC objects
// in the changes says it with its own words.
func followRBACBindings(f *Finding, ev *Gathered) {
	user, ns := f.fact("user_full"), f.fact("namespace")
	var yes []string
	for _, a := range canIAnswers(ev.Commands) {
		if a.as != user || !sameResource(a.resource, f.fact("resource")) {
			continue
		}
		if !a.allowed && a.namespace == ns {
			f.setFact("can_i", fmt.Sprintf("kubectl auth can-i %s %s%s answers no", a.verb, a.resource, nsFlag(a.namespace)))
			f.Evidence = append(f.Evidence, quote(a.command, 200)+": no")
		}
		if a.allowed && a.namespace != ns {
			yes = append(yes, orWord(a.namespace, "the cluster scope"))
			f.Evidence = append(f.Evidence, quote(a.command, 200)+": yes")
		}
	}
	if len(yes) > 0 {
		f.setFact("allowed_in", strings.Join(yes, ", "))
	}
	saNS, saName, isSA := strings.Cut(f.fact("user"), "/")
	if isSA && ns == "" {
		// Refused at the cluster scope: only a ClusterRoleBinding grants it.
		clusterBindings(f, ev.K8s.ClusterRoleBindings, saNS, saName)
	}
	if !isSA || ns == "" {
		f.setFact("why", rbacWhy(f))
		return
	}
	// Its bindings elsewhere, and the denied namespace's.
	var own *rbacv1.RoleBinding
	var here []rbacv1.RoleBinding
	for i := range ev.K8s.RoleBindings {
		rb := &ev.K8s.RoleBindings[i]
		if rb.Namespace == ns {
			here = append(here, *rb)
			continue
		}
		for _, s := range rb.Subjects {
			if s.Kind == "ServiceAccount" && s.Name == saName && orWord(s.Namespace, rb.Namespace) == saNS && own == nil {
				own = rb
			}
		}
	}
	if own == nil {
		clusterBindings(f, ev.K8s.ClusterRoleBindings, saNS, saName)
	}
	if own != nil {
		f.setFact("bound_elsewhere", fmt.Sprintf("RoleBinding %s/%s binds %s/%s to it", own.Namespace, own.Name, own.RoleRef.Kind, own.RoleRef.Name))
		f.setFact("bound_name", own.Name)
		f.setFact("bound_role", own.RoleRef.Kind+"/"+own.RoleRef.Name)
		f.setFact("bound_ns", own.Namespace)
		f.Evidence = append(f.Evidence, f.fact("bound_elsewhere"))
	}
	if len(here) > 0 && own != nil && !slices.ContainsFunc(here, func(rb rbacv1.RoleBinding) bool {
		return rb.Name == own.Name || rb.RoleRef == own.RoleRef || slices.ContainsFunc(rb.Subjects, func(s rbacv1.Subject) bool { return s.Kind == "ServiceAccount" && s.Name == saName })
	}) {
		names := make([]string, 0, len(here))
		for _, rb := range here {
			names = append(names, rb.Name)
		}
		f.setFact("missing_here", fmt.Sprintf("namespace %s has no such RoleBinding: its RoleBindings (%s) neither bind %s/%s nor name the ServiceAccount", ns, strings.Join(names, ", "), own.RoleRef.Kind, own.RoleRef.Name))
		f.Evidence = append(f.Evidence, f.fact("missing_here"))
		// All created at one moment, after the one kept elsewhere: the
		// namespace's bindings were recreated then.
		first, last := here[0].CreationTimestamp.Time, here[0].CreationTimestamp.Time
		for _, rb := range here[1:] {
			first, last = earliest(first, rb.CreationTimestamp.Time), latest(last, rb.CreationTimestamp.Time)
		}
		if len(here) > 1 && !first.IsZero() && last.Sub(first) <= 15*time.Minute && own.CreationTimestamp.Before(&metav1.Time{Time: first}) && first.Before(f.Time) {
			f.setFact("cause_at", first.UTC().Format(time.RFC3339))
			f.setFact("cause_event", fmt.Sprintf("the RoleBindings of namespace %s are recreated (all %d created ~%s), none for ServiceAccount %s", ns, len(here), first.UTC().Format("2006-01-02 15:04 UTC"), f.fact("user")))
			f.setFact("cause_words", fmt.Sprintf("the RoleBindings of namespace %s were recreated without it: all %s there were created at one moment, ~%s, while its binding in namespace %s is older", ns, plural(len(here), "binding", "bindings"), first.UTC().Format("2006-01-02 15:04 UTC"), own.Namespace))
		}
	}
	// A change of the namespace or of its RBAC objects says it in its own
	// words.
	for _, c := range append(slices.Clone(ev.Earlier), ev.Changes...) {
		if c.Timestamp.After(f.Time) || !(c.Service == ns || namesNamespace(c.Description, ns)) {
			continue
		}
		if c.Kind == "deploy" && !matchLine(rbacChangeRE, c.Description) && !matchLine(prunesRE, c.Description) {
			continue
		}
		at := c.Timestamp.UTC()
		f.setFact("cause_at", at.Format(time.RFC3339))
		f.setFact("cause_event", fmt.Sprintf("change to namespace %s: %s", ns, quote(c.Description, 200)))
		f.setFact("cause_change", fmt.Sprintf("%s (%s, %s%s)", quote(c.Description, 200), c.Kind, at.Format("2006-01-02 15:04 UTC"), prefixed(" by ", c.Author)))
	}
	// A deploy of the refused workload between the permission's loss and
	// the refusal is no cause of it: an image does not bind a
	// ServiceAccount.
	if at, err := time.Parse(time.RFC3339, f.fact("cause_at")); err == nil {
		for _, c := range append(slices.Clone(ev.Earlier), ev.Changes...) {
			if c.Service == f.Subject && c.Kind == "deploy" && c.Timestamp.After(at) && c.Timestamp.Before(f.Time) && !matchLine(rbacChangeRE, c.Description) {
				f.setFact("later_deploy", fmt.Sprintf("the deploy of %s at %s (%s) came after and binds nothing: RBAC is granted by bindings, not by the image", f.Subject, c.Timestamp.UTC().Format("2006-01-02 15:04 UTC"), quote(c.Description, 120)))
			}
		}
	}
	f.setFact("why", rbacWhy(f))
	if f.fact("missing_here") != "" || f.fact("can_i") != "" {
		f.Weight = max(f.Weight, 0.95)
	}
}

// clusterBindings reads what the cluster's ClusterRoleBindings say of a
// refused ServiceAccount with no RoleBinding: one binds it cluster-wide
// (then its ClusterRole lacks the permission refused), or one binds the
// ServiceAccount of that name in another namespace (the workload moved,
// the binding still names where it was).
func clusterBindings(f *Finding, crbs []rbacv1.ClusterRoleBinding, saNS, saName string) {
	var other *rbacv1.ClusterRoleBinding
	otherSA := ""
	for i := range crbs {
		crb := &crbs[i]
		for _, s := range crb.Subjects {
			if s.Kind != "ServiceAccount" || s.Name != saName {
				continue
			}
			role := crb.RoleRef.Kind + "/" + crb.RoleRef.Name
			if s.Namespace == saNS {
				f.setFact("crb_name", crb.Name)
				f.setFact("crb_role", role)
				f.setFact("cluster_binding", fmt.Sprintf("ClusterRoleBinding %s binds %s to it cluster-wide, so %s does not grant %s %s", crb.Name, role, role, f.fact("verb"), f.fact("resource")))
				f.Evidence = append(f.Evidence, fmt.Sprintf("ClusterRoleBinding %s binds %s to ServiceAccount %s/%s", crb.Name, role, saNS, saName))
				return
			}
			if other == nil && s.Namespace != "" {
				other, otherSA = crb, s.Namespace+"/"+s.Name
			}
		}
	}
	if other == nil {
		return
	}
	role := other.RoleRef.Kind + "/" + other.RoleRef.Name
	f.setFact("crb_name", other.Name)
	f.setFact("crb_role", role)
	f.setFact("crb_other_sa", otherSA)
	f.setFact("sa_ns", saNS)
	f.setFact("sa_name", saName)
	f.setFact("cluster_binding", fmt.Sprintf("ClusterRoleBinding %s binds %s to ServiceAccount %s, of another namespace, not to %s/%s", other.Name, role, otherSA, saNS, saName))
	f.Evidence = append(f.Evidence, f.fact("cluster_binding"))
	f.Weight = max(f.Weight, 0.95)
}

// prunesRE is a change that removes objects it does not manage.
var prunesRE = regexp.MustCompile(`(?i)\bprun|argo ?cd|flux|gitops|kustomiz|helm (?:uninstall|upgrade)|re-?applied|migrat`)

// namesNamespace reports whether a change's text names namespace ns.
func namesNamespace(desc, ns string) bool {
	return regexp.MustCompile(`(?i)\bnamespace[s]? ` + regexp.QuoteMeta(ns) + `\b|\bns[/ ]` + regexp.QuoteMeta(ns) + `\b|-n ` + regexp.QuoteMeta(ns) + `\b`).MatchString(desc)
}

// sameResource compares a resource as kubectl auth can-i names it (pods,
// pod, deployments.apps) with the one the API server names.
func sameResource(asked, refused string) bool {
	a, _, _ := strings.Cut(strings.ToLower(asked), ".")
	a = strings.TrimSuffix(a, "s")
	return a != "" && a == strings.TrimSuffix(strings.ToLower(refused), "s")
}

// rbacWhy is the short reason of a refusal: which permission is missing
// where.
func rbacWhy(f *Finding) string {
	return fmt.Sprintf("no RBAC binding lets %s %s %s%s", f.fact("user"), f.fact("verb"), f.fact("resource"), inNamespace(f.fact("namespace")))
}

// podStarted is when a pod started (or was created), zero when it was not
// read.
func podStarted(k K8sEvidence, ns, name string) time.Time {
	for i := range k.Pods {
		if p := &k.Pods[i]; p.Namespace == ns && p.Name == name {
			if p.Status.StartTime != nil {
				return p.Status.StartTime.Time
			}
			return p.CreationTimestamp.Time
		}
	}
	return time.Time{}
}
