package analyst

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/finding"
)

// A change merged to git that never reached the cluster because the GitOps
// object that applies its path is suspended: a Flux Kustomization or
// HelmRelease left with spec.suspend: true (flux suspend during a
// migration, never resumed) keeps the revision it last applied, and every
// later commit under its path waits. Nothing fails: the object even shows
// Ready with "Applied revision" of the old commit, and a louder red object
// beside it draws the eye. Read from `flux get kustomizations` (or
// helmreleases) whose SUSPENDED column says True, the revision it applied,
// and the changes: an earlier change of the service with that revision
// says the object delivers the service, a later one of the service is what
// never applied.

// KindGitOpsSuspended is a change that never applied because the GitOps
// object that delivers it is suspended.
const KindGitOpsSuspended Kind = "gitops_suspended"

var gitOpsSuspended = &mechanism{
	kind:   KindGitOpsSuspended,
	class:  classCause,
	label:  "the change never applied: its GitOps object is suspended",
	detect: detectGitOpsSuspended,
	related: func(h *Hypothesis, f *Finding) bool {
		return strings.EqualFold(f.Subject, h.Subject) && f.Kind != KindDeploy && f.Kind != KindConfigChange
	},
	strictTriggers: true,
	fitsChange:     func(h *Hypothesis, c *Finding) bool { return false },
	describe:       describeGitOpsSuspended,
	recommend:      recommendGitOpsSuspended,
}

// fluxRevRE is the commit of a Flux revision ("main@sha1:91d3e2f0",
// "main/91d3e2f0").
var fluxRevRE = regexp.MustCompile(`(?:sha1:|/)([0-9a-f]{7,40})\b`)

type suspendedObj struct{ kind, name, revision string }

// suspendedFluxObjects reads the rows of `flux get` tables whose SUSPENDED
// column says True.
func suspendedFluxObjects(ev *Gathered) []suspendedObj {
	var out []suspendedObj
	for _, c := range ev.Commands {
		cmd := strings.ToLower(c.Command)
		if !strings.Contains(cmd, "flux get") {
			continue
		}
		kind := "Kustomization"
		if strings.Contains(cmd, "helmrelease") || strings.Contains(cmd, " hr") {
			kind = "HelmRelease"
		}
		name, rev, susp := -1, -1, -1
		for _, l := range c.Lines {
			cols := strings.Fields(l)
			if susp < 0 {
				for i, h := range cols {
					switch strings.ToUpper(h) {
					case "NAME":
						name = i
					case "REVISION":
						rev = i
					case "SUSPENDED":
						susp = i
					}
				}
				continue
			}
			if len(cols) <= susp || name < 0 || !strings.EqualFold(cols[susp], "true") {
				continue
			}
			o := suspendedObj{kind: kind, name: cols[name]}
			if rev >= 0 && rev < len(cols) {
				o.revision = cols[rev]
			}
			out = append(out, o)
		}
	}
	return out
}

func detectGitOpsSuspended(ev *Gathered, found []Finding) []Finding {
	objs := suspendedFluxObjects(ev)
	if len(objs) == 0 {
		return nil
	}
	changes := append(append([]evidenceChange{}, toChanges(ev.Earlier)...), toChanges(ev.Changes)...)
	all := append(append([]evidence.Change{}, ev.Earlier...), ev.Changes...)
	var out []Finding
	for _, o := range objs {
		m := findSubmatch(fluxRevRE, o.revision)
		if m == nil {
			continue
		}
		sha := m[1]
		// The earlier change whose revision the object applied names the
		// service it delivers.
		var applied *evidenceChange
		var appliedRev string
		for i, c := range all {
			r := strings.ToLower(c.Revision)
			if len(r) >= 7 && (strings.HasPrefix(sha, r) || strings.HasPrefix(r, sha)) && c.Service != "" {
				applied, appliedRev = &changes[i], c.Revision
			}
		}
		if applied == nil {
			continue
		}
		// A later change of the same service that never applied.
		var pending *evidenceChange
		var pendingRev string
		for i, c := range all {
			if strings.EqualFold(c.Service, applied.service) && c.Timestamp.After(applied.at) && c.Revision != "" && !strings.HasPrefix(sha, strings.ToLower(c.Revision)) {
				pending, pendingRev = &changes[i], c.Revision
			}
		}
		if pending == nil {
			continue
		}
		f := Finding{Kind: KindGitOpsSuspended, Subject: pending.service, Namespace: ev.Scope.Namespace, Severity: SevCritical, Weight: 0.9,
			Source: SrcKubernetes, Time: pending.at, Object: fmt.Sprintf("Flux %s %s", o.kind, o.name)}
		if !ev.Window.recent(f.Time) {
			f.Time = ev.Window.Start
		}
		f.setFact("object", o.name)
		f.setFact("object_kind", o.kind)
		f.setFact("applied", o.revision)
		f.setFact("applied_change", fmt.Sprintf("%s (%s, %s)", applied.text, appliedRev, ts(applied.at)))
		f.setFact("pending_change", fmt.Sprintf("%s (%s, %s)", pending.text, pendingRev, ts(pending.at)))
		f.setFact("pending_at", ts(pending.at))
		f.Evidence = []string{
			fmt.Sprintf("flux get: %s %s is suspended (SUSPENDED True) and still at revision %s", o.kind, o.name, o.revision),
			fmt.Sprintf("that revision is the change %s: %s (%s)", appliedRev, applied.text, ts(applied.at)),
			fmt.Sprintf("the later change of %s %s (%s, %s) is not applied: %s stopped reconciling before it", pending.service, pendingRev, pending.text, ts(pending.at), o.name),
		}
		f.Summary = fmt.Sprintf("Flux %s %s is suspended: the change %s of %s never applied", o.kind, o.name, pendingRev, pending.service)
		out = append(out, f)
	}
	return out
}

func describeGitOpsSuspended(h *Hypothesis, sc Scope) string {
	return fmt.Sprintf("the change %s never reached the cluster: the Flux %s %s that applies %s is suspended (spec.suspend: true) and still at %s, the revision of %s; nothing failed and no deploy of %s ran since, so %s still runs its old configuration",
		h.fact("pending_change"), h.fact("object_kind"), h.fact("object"), h.Subject, h.fact("applied"), h.fact("applied_change"), h.Subject, h.Subject)
}

func recommendGitOpsSuspended(h *Hypothesis, sc Scope, r *recommender) {
	r.add(finding.PriorityHigh, fmt.Sprintf("Resume it: flux resume %s %s (after checking with whoever suspended it that what waits under its path may apply), then check that %s runs the pending change", strings.ToLower(h.fact("object_kind")), h.fact("object"), h.Subject))
	r.add(finding.PriorityLow, "Alert on Flux objects suspended for more than a day and record who suspended them and why")
}
