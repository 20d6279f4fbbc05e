package analyst

import (
	"fmt"
	"regexp"
	"strings"
)

// A Helm install or upgrade refused before it applies anything because
// the chart now renders an object that already exists and Helm does not
// own for this release: "ConfigMap "x" in namespace "ns" exists and cannot
// be imported into the current release: invalid ownership metadata;
// annotation validation error: key "meta.helm.sh/release-name" must equal
// "a": current value is "b"". The object belongs to another release (b),
// or was made outside Helm (the keys missing). Nothing in the cluster
// changed: the release stays at its last revision. The answer is the
// object, its owner and the change that moved it into this chart; the fix
// is to remove it from one of the two releases, or to hand it over by
// rewriting its ownership metadata.

// KindHelmOwnership is a release refused for an object it does not own.
const KindHelmOwnership Kind = "helm_ownership"

var (
	// helmImportRE is Helm's refusal to adopt an existing object, with
	// the object's kind, name and namespace.
	helmImportRE = regexp.MustCompile(`(?:^|: )([A-Z]\w+) "([\w.:-]+)" in namespace "([\w.-]*)" exists and cannot be imported into the current release: invalid ownership metadata`)
	// helmOwnerRE is the release that owns it; helmOwnerMissingRE the
	// keys an object made outside Helm lacks.
	helmOwnerRE        = regexp.MustCompile(`key "meta\.helm\.sh/release-name" must equal "([\w.-]+)": current value is "([\w.-]+)"`)
	helmOwnerMissingRE = regexp.MustCompile(`missing key "(?:meta\.helm\.sh/release-name|app\.kubernetes\.io/managed-by)": must be set to "([\w.-]+)"`)
	// helmVerbRE is the release a helm command installs or upgrades.
	helmVerbRE = regexp.MustCompile(`\bhelm(?:3)?\s+(?:upgrade|install)\s+(?:--?[\w-]+(?:[= ]\S+)?\s+)*([a-z0-9][\w.-]*)`)
)

var helmOwnership = &mechanism{
	kind:   KindHelmOwnership,
	class:  classCause,
	label:  "Helm release refused: an object it renders belongs to another release",
	detect: detectHelmOwnership,
	related: exceptChanges(func(h *Hypothesis, f *Finding) bool {
		return f.Subject == h.Subject && (f.Kind == KindDeploy || f.Kind == KindConfigChange)
	}),
	describe: func(h *Hypothesis, sc Scope) string {
		obj := h.fact("object")
		var d string
		if owner := h.fact("owner"); owner != "" {
			d = fmt.Sprintf("the Helm upgrade of release %s failed before applying anything: its chart now renders %s, which already exists and belongs to another release, %s (invalid ownership metadata: meta.helm.sh/release-name is %q), and Helm will not import an object another release owns", h.Subject, obj, owner, owner)
		} else {
			d = fmt.Sprintf("the Helm upgrade of release %s failed before applying anything: its chart now renders %s, which already exists without Helm's ownership metadata (made outside Helm: no meta.helm.sh/release-name, no managed-by Helm label), so it cannot be imported into the release", h.Subject, obj)
		}
		d += h.clause("; the object came into the chart with the ", "added_by")
		return d + "; the release stays at its last revision: " + quote(h.fact("line"), 300)
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		ns := orWord(h.fact("object_ns"), orWord(h.top().Namespace, sc.Namespace))
		if owner := h.fact("owner"); owner != "" {
			r.high("Remove %s from one of the two releases: drop it from %s's chart (or retire %s first), then upgrade %s again", h.fact("object"), owner, owner, h.Subject)
			r.med("Or hand the object over: kubectl -n %s annotate %s meta.helm.sh/release-name=%s --overwrite (and meta.helm.sh/release-namespace), then upgrade; the next upgrade of %s would delete it unless it no longer renders it", ns, h.fact("object_ref"), h.Subject, owner)
		} else {
			r.high("Adopt the object into the release: kubectl -n %s label %s app.kubernetes.io/managed-by=Helm and annotate it meta.helm.sh/release-name=%s meta.helm.sh/release-namespace=%s, or delete it and upgrade again", ns, h.fact("object_ref"), h.Subject, ns)
		}
		r.low("Check new objects a chart renders against what exists before upgrading (helm diff upgrade, helm template | kubectl diff -f -)")
	},
}

func detectHelmOwnership(ev *Gathered, _ []Finding) []Finding {
	var out []Finding
	seen := map[string]bool{}
	for _, c := range ev.Commands {
		for _, l := range c.Lines {
			m := findSubmatch(helmImportRE, l)
			if m == nil {
				continue
			}
			kind, name, ns := m[1], m[2], m[3]
			release, owner := "", ""
			if o := findSubmatch(helmOwnerRE, l); o != nil {
				release, owner = o[1], o[2]
			} else if o := findSubmatch(helmOwnerMissingRE, l); o != nil && o[1] != "Helm" {
				release = o[1]
			}
			if v := findSubmatch(helmVerbRE, c.Command); v != nil && release == "" {
				release = v[1]
			}
			if release == "" || seen[release+"/"+name] {
				continue
			}
			seen[release+"/"+name] = true
			f := Finding{Kind: KindHelmOwnership, Subject: release, Object: "helm release " + release, Namespace: orWord(ns, ev.Scope.Namespace),
				Source: SrcKubernetes, Severity: SevCritical, Weight: 0.9, Time: ev.Window.Start}
			f.setFact("line", ReadableLine(strings.TrimSpace(l)))
			f.setFact("object", fmt.Sprintf("%s %s in namespace %s", kind, name, ns))
			f.setFact("object_ref", strings.ToLower(kind)+"/"+name)
			f.setFact("object_ns", ns)
			f.setFact("owner", owner)
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s: %s", c.Command, quote(strings.TrimSpace(l), 300)))
			if owner != "" {
				f.Related = append(f.Related, owner)
				f.Evidence = append(f.Evidence, fmt.Sprintf("%s %s belongs to release %s (meta.helm.sh/release-name), not %s", kind, name, owner, release))
			}
			// The change that put the object into this release's chart.
			for _, ch := range append(append(ev.Earlier[:0:0], ev.Earlier...), ev.Changes...) {
				if mentionsName(ch.Description, name) && (strings.EqualFold(ch.Service, release) || mentionsName(ch.Description, release)) {
					f.setFact("added_by", fmt.Sprintf("%s change of %s at %s: %q", changeKindWords(ch.Kind), ch.Service, ts(ch.Timestamp), ch.Description))
					f.Evidence = append(f.Evidence, "the object came into the chart with the "+f.fact("added_by"))
					if ch.Timestamp.After(f.Time) || f.Time.IsZero() {
						f.Time = ch.Timestamp
					}
				}
			}
			f.Summary = fmt.Sprintf("helm upgrade of %s refused: %s %s belongs to %s", release, kind, name, orWord(owner, "no release"))
			out = append(out, f)
		}
	}
	return out
}
