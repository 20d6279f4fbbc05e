package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// A custom resource whose kind the API server no longer serves. Operators
// and controllers (Traefik, cert-manager, the Prometheus operator, Istio,
// Argo Rollouts, external-secrets) define their kinds in
// CustomResourceDefinitions; an upgrade that moves a kind to a new API
// group (traefik.containo.us to traefik.io in Traefik v3), drops an old
// version (cert-manager's v1alpha2, Istio's v1alpha3 served=false), or
// deletes the old CRDs takes every custom resource of the old kind with
// it: the route, certificate or monitor the application relied on is
// gone (a 404 where the route was, no certificate, no scrape), and every
// later apply of the application's unchanged manifests fails:
//
//	error: resource mapping not found for name: "docs-site" namespace: "docs" from "k8s/ingressroute.yaml": no matches for kind "IngressRoute" in version "traefik.containo.us/v1alpha1"
//	ensure CRDs are installed first
//	Error: UPGRADE FAILED: unable to build kubernetes objects from release manifest: resource mapping not found for name: "api" namespace: "" from "": no matches for kind "Certificate" in version "cert-manager.io/v1alpha2"
//	IngressRoute/docs/docs-site dry-run failed: no matches for kind "IngressRoute" in version "traefik.containo.us/v1alpha1"
//	The Kubernetes API could not find traefik.containo.us/IngressRoute for requested resource docs/docs-site. Make sure the "IngressRoute" CRD is installed on the destination cluster.
//
// The pods are up and the Service has endpoints: the application is not
// at fault, its manifests ask for an API version that no longer exists.
// The CRDs listed say where the kind lives now, and the upgrade of the
// operator (a change, a Helm history) is when the old one went.

// KindCRDMissing is a custom resource kind (in an API group and version)
// the API server does not serve.
const KindCRDMissing Kind = "crd_missing"

var (
	// noMatchRE is the API server's refusal of a kind it does not serve,
	// as kubectl, Helm and Flux print it: kind, group/version.
	noMatchRE = regexp.MustCompile(`no matches for kind \\?"(\w+)\\?" in version \\?"([\w.-]+/[\w.-]+|[\w.-]+)\\?"`)
	// argoNotFoundRE is Argo CD's form: group/Kind, the resource.
	argoNotFoundRE = regexp.MustCompile(`The Kubernetes API could not find ([\w.-]+)/(\w+) for requested resource ([\w.-]+)/([\w-]+(?:\.[\w-]+)*)`)
	// mappingNameRE is the resource the refused manifest names.
	mappingNameRE = regexp.MustCompile(`resource mapping not found for name: \\?"([\w.-]+)\\?"(?: namespace: \\?"([\w.-]*)\\?")?(?: from \\?"([^"\\]*)\\?")?`)
	// fluxObjectRE is Flux's "Kind/namespace/name dry-run failed".
	fluxObjectRE = regexp.MustCompile(`(\w+)/([\w.-]+)/([\w.-]+) dry-run failed`)
	// crdRowRE is a row of kubectl get crd: plural.group and its
	// creation time.
	crdRowRE = regexp.MustCompile(`^\s*([a-z0-9-]+)\.([a-z0-9.-]+\.[a-z]+)\s+(\d{4}-\d\d-\d\dT[\d:]+Z)`)
)

var crdMissing = &mechanism{
	kind:   KindCRDMissing,
	class:  classCause,
	label:  "custom resource kind no longer served (its CRD removed or its API version dropped)",
	detect: detectCRDMissing,
	// A deploy of the application itself changed nothing the API serves:
	// only a change of the operator or its CRDs triggers this.
	strictTriggers: true,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return crdChangeFits(changeText(c), h.fact("group"))
	},
	// The 404s, failed applies and failed deploys of the application are
	// what the missing kind produces.
	related: func(h *Hypothesis, f *Finding) bool {
		return strings.EqualFold(f.Subject, h.Subject) || slices.Contains(strings.Split(h.fact("operator_names"), ", "), f.Subject)
	},
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("the API server no longer serves kind %s in API version %s: %s's manifests still use %s, so applying them fails (%s)",
			h.fact("crd_kind"), h.fact("apiversion"), h.Subject, h.fact("apiversion"), quote(h.fact("line"), 220))
		d += fmt.Sprintf(", and the %s %s that routed or configured it is gone with the removed CustomResourceDefinition (CRD)", h.fact("crd_kind"), orWord(h.fact("resource"), h.Subject))
		d += h.clause("; ", "now_in")
		d += h.clause("; ", "removed_by")
		d += fmt.Sprintf(". %s's pods and Service are not at fault", h.Subject)
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		if g := h.fact("new_group"); g != "" {
			r.high("Move %s's manifests from %s to %s/%s (kind %s), apply them, and check the %s exists again", h.Subject, h.fact("apiversion"), g, orWord(h.fact("version"), "v1alpha1"), h.fact("crd_kind"), h.fact("crd_kind"))
		} else {
			r.high("Install the CustomResourceDefinition of %s in %s again (or move %s's manifests to the API version the upgraded operator serves), then re-apply them", h.fact("crd_kind"), h.fact("apiversion"), h.Subject)
		}
		r.med("Before the next operator upgrade, list every custom resource of the kinds it moves or drops (kubectl get <kind>.<group> -A) and migrate them first")
		r.low("Fail the deploy pipeline loudly on \"no matches for kind\" and alert on 404s where a route used to answer")
	},
}

// crdChangeFits reports whether a change's text touches custom resource
// definitions or the operator of group.
func crdChangeFits(t, group string) bool {
	if strings.Contains(t, "crd") || strings.Contains(t, "customresourcedefinition") {
		return true
	}
	if group == "" {
		return false
	}
	if strings.Contains(t, strings.ToLower(group)) {
		return true
	}
	op := operatorOf(group)
	return op != "" && strings.Contains(t, op) && (strings.Contains(t, "upgrade") || strings.Contains(t, "->") || strings.Contains(t, "migrat"))
}

// operatorOf is the first label of an API group, the operator's name as a
// rule (traefik.containo.us: traefik; cert-manager.io: cert-manager).
func operatorOf(group string) string {
	first, _, _ := strings.Cut(strings.ToLower(group), ".")
	if first == "networking" || first == "monitoring" || first == "security" || first == "apps" {
		return ""
	}
	return first
}

// crdRefusal is one refusal of a kind: where it was read.
type crdRefusal struct {
	kind, apiversion, group, version string
	name, namespace, file            string
	line                             string
	at                               time.Time
}

// detectCRDMissing finds the API server's refusal of a kind in a
// transcript's commands or a log (a CI job, Flux, Argo CD) and follows it
// to the CRDs listed and the change that removed the kind.
func detectCRDMissing(ev *Gathered, found []Finding) []Finding {
	var rs []crdRefusal
	read := func(l string, at time.Time) {
		if r, ok := parseCRDRefusal(l); ok {
			r.at = at
			rs = append(rs, r)
		}
	}
	for _, c := range ev.Commands {
		for _, l := range c.Lines {
			read(l, time.Time{})
		}
	}
	for i := range ev.Logs {
		for _, t := range ev.Logs[i].Templates {
			read(t.Example, orTime(t.FirstIncident, t.FirstSeen))
		}
	}
	if len(rs) == 0 {
		return nil
	}
	r := rs[0]
	subject := orWord(ev.Scope.Service, r.name)
	if r.name != "" && ev.Scope.Service == "" {
		subject = r.name
	}
	f := Finding{Kind: KindCRDMissing, Subject: subject, Namespace: orWord(r.namespace, ev.Scope.Namespace), Source: SrcKubernetes, Severity: SevCritical, Weight: 0.9, Time: r.at}
	f.Object = fmt.Sprintf("%s %s", r.kind, orWord(r.name, subject))
	f.setFact("crd_kind", r.kind)
	f.setFact("apiversion", r.apiversion)
	f.setFact("group", r.group)
	f.setFact("version", r.version)
	f.setFact("resource", r.name)
	f.setFact("line", r.line)
	f.Evidence = append(f.Evidence, fmt.Sprintf("the API server refuses kind %s in %s: %s", r.kind, r.apiversion, quote(r.line, 240)))
	// The kind stays unserved until the CRD or the manifests change: the
	// current state however long ago it went.
	f.setFact("current", "true")
	if op := operatorOf(r.group); op != "" {
		f.setFact("operator_names", op)
	}

	// The CRDs listed: the kind under another group, or none of its group.
	plural := strings.ToLower(r.kind) + "s"
	var sameGroup, elsewhere []string
	var created time.Time
	listed := false
	for _, c := range ev.Commands {
		for _, l := range c.Lines {
			m := findSubmatch(crdRowRE, l)
			if m == nil {
				continue
			}
			listed = true
			if m[2] == r.group {
				sameGroup = append(sameGroup, m[1])
			}
			if m[1] == plural && m[2] != r.group {
				elsewhere = append(elsewhere, m[2])
				if t, err := time.Parse(time.RFC3339, m[3]); err == nil {
					created = t
				}
			}
		}
	}
	switch {
	case len(elsewhere) > 0:
		f.setFact("new_group", elsewhere[0])
		d := fmt.Sprintf("the CRDs installed define %s only in group %s (%s.%s, created %s), and none of group %s is left", r.kind, elsewhere[0], plural, elsewhere[0], ts(created), r.group)
		if len(sameGroup) > 0 {
			d = fmt.Sprintf("the CRDs installed define %s in group %s (%s.%s, created %s)", r.kind, elsewhere[0], plural, elsewhere[0], ts(created))
		}
		f.setFact("now_in", d)
		f.setFact("why", d)
		f.Evidence = append(f.Evidence, d)
	case listed && len(sameGroup) == 0:
		d := fmt.Sprintf("no CRD of group %s is installed any more", r.group)
		f.setFact("now_in", d)
		f.setFact("why", d)
		f.Evidence = append(f.Evidence, d)
	}

	// The change that removed it: the operator's upgrade, or a change of
	// its CRDs, in the month before.
	for _, c := range slices.Concat(ev.Earlier, ev.Changes) {
		t := strings.ToLower(c.Service + " " + c.Description)
		if strings.Contains(strings.ToLower(c.Kind), "deploy") && !crdChangeFits(t, r.group) || !crdChangeFits(t, r.group) {
			continue
		}
		d := fmt.Sprintf("the change of %s at %s removed it: %s", c.Service, ts(c.Timestamp), truncate(c.Description, 200))
		f.setFact("removed_by", d)
		f.setFact("why", d)
		f.Evidence = append(f.Evidence, d)
		f.Time = earliest(f.Time, c.Timestamp)
		break
	}
	if f.fact("why") == "" {
		f.setFact("state_only", "true")
	}
	if f.Time.IsZero() {
		f.Time = orTime(created, ev.Window.Start)
	}
	f.Summary = fmt.Sprintf("kind %s in %s not served: %s's manifests cannot be applied", r.kind, r.apiversion, subject)
	return []Finding{f}
}

// parseCRDRefusal reads one line refusing a kind, in the forms of kubectl,
// Helm, Flux and Argo CD.
func parseCRDRefusal(l string) (crdRefusal, bool) {
	var r crdRefusal
	if m := findSubmatch(noMatchRE, l); m != nil {
		r.kind, r.apiversion = m[1], m[2]
	} else if m := findSubmatch(argoNotFoundRE, l); m != nil {
		r.group, r.kind, r.namespace, r.name = m[1], m[2], m[3], m[4]
		r.apiversion = m[1]
	} else {
		return r, false
	}
	if g, v, ok := strings.Cut(r.apiversion, "/"); ok {
		r.group, r.version = g, v
	} else if r.group == "" {
		r.version = r.apiversion
	}
	if m := findSubmatch(mappingNameRE, l); m != nil {
		r.name, r.namespace, r.file = m[1], m[2], m[3]
	} else if m := findSubmatch(fluxObjectRE, l); m != nil && m[1] == r.kind {
		r.namespace, r.name = m[2], m[3]
	}
	r.line = strings.TrimSpace(ReadableLine(l))
	return r, true
}
