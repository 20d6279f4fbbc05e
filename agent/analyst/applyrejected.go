package analyst

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// A release that cannot apply its objects: a Helm upgrade, a Flux
// HelmRelease, an Argo CD sync or a kubectl apply renders a workload the
// API server rejects — its validation ("Deployment.apps "x" is invalid:
// FIELD: Invalid value: ...") or an admission webhook's policy ("admission
// webhook "validate.kyverno.svc-fail" denied the request: resource
// Deployment/ns/x was blocked ..."). Nothing crashes: the live workload
// keeps running the previous version (Helm and Flux roll back, Argo CD
// leaves it OutOfSync), so the question is usually "why is the new
// version not out". A rejection the chart alone does not explain often
// comes from drift: a manual kubectl edit (kubectl set env, edit, patch)
// left a field on the live object that Helm's three-way merge keeps, and
// the merged object is invalid; the object's managedFields name the
// manager (kubectl-set, kubectl-edit, kubectl-patch) and the fields it
// owns. Pods refused by the API server are KindCreateRefused.

// KindApplyRejected is a release or sync whose rendered workload the API
// server (its validation or an admission webhook) rejects.
const KindApplyRejected Kind = "apply_rejected"

var (
	// invalidObjectRE is the API server's validation error of an object:
	// `cannot patch "x" with kind Deployment: Deployment.apps "x" is
	// invalid: ...` (Helm, Flux), `The Deployment "x" is invalid: ...`
	// (kubectl apply), `Deployment.apps "x" is invalid: ...` (Argo CD).
	invalidObjectRE = regexp.MustCompile(`(?:The )?([A-Z]\w+)(?:\.[\w.]+)? "([\w.-]+)" is invalid: (.+)`)
	// blockedResourceRE is the object an admission policy blocked, as
	// Kyverno names it.
	blockedResourceRE = regexp.MustCompile(`resource ([A-Z]\w+)/(?:([\w.-]+)/)?([\w.-]+) was blocked`)
	// deniedKindRE is the object an admission denial of a create or
	// patch names otherwise (`error when creating "x.yaml": admission
	// webhook ... denied`, `cannot patch "x" with kind Deployment:`).
	deniedKindRE = regexp.MustCompile(`cannot (?:patch|create|update) "([\w.-]+)" with kind ([A-Z]\w+)`)
	// applyContextRE is a line that speaks of a release or sync applying
	// objects (not of a pod's creation, which is KindCreateRefused).
	applyContextRE = regexp.MustCompile(`(?i)upgrade\b.*\bfailed|install\b.*\bfailed|failed to apply|sync(?:hronization)? failed|\bOutOfSync\b|cannot (?:patch|create|update) "|error when (?:creating|patching|applying)|\bUpgradeFailed\b|\bInstallFailed\b|\bSyncFailed\b|\bis invalid: `)
	// rolledBackRE is the release rolled back after the failed upgrade.
	rolledBackRE = regexp.MustCompile(`(?i)\brolled back\b|\bRollbackSucceeded\b|\bRollback to \d+|rollback to previous release`)
	// manualManagerRE is a managedFields manager of a hand-run kubectl
	// command that changed the live object.
	manualManagerRE = regexp.MustCompile(`^\s*-?\s*manager:\s*(kubectl-(?:set|edit|patch|label|annotate|scale|client-side-apply))\s*$`)
	managedKeyRE    = regexp.MustCompile(`k:\{"name":"([^"]+)"\}`)
	managedTimeRE   = regexp.MustCompile(`^\s*time:\s*"?([0-9TZ:.+-]+)"?\s*$`)
)

var applyRejected = &mechanism{
	kind:   KindApplyRejected,
	class:  classCause,
	label:  "a release whose workload the API server rejects (validation or admission policy)",
	detect: detectApplyRejected,
	related: exceptChanges(func(h *Hypothesis, f *Finding) bool {
		return f.Subject == h.Subject && (f.Kind == KindDeploy || f.Kind == KindConfigChange)
	}),
	// The change that asked for the new version: not the failed
	// upgrades nor the rollbacks the rejection itself caused.
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		if (c.Kind != KindDeploy && c.Kind != KindConfigChange) || !strings.EqualFold(c.Subject, h.Subject) {
			return false
		}
		text := c.Summary + " " + strings.Join(c.Evidence, " ")
		_, rejected := readRejection(text)
		return !rejected && !matchLine(rolledBackRE, text)
	},
	describe:  describeApplyRejected,
	recommend: recommendApplyRejected,
}

// rejection is one rejection read from a line.
type rejection struct {
	kind, name, how, detail string
}

// readRejection reads a line that says the API server rejected a
// workload object a release or sync applied.
func readRejection(line string) (r rejection, ok bool) {
	if !matchLine(applyContextRE, line) || strings.Contains(line, "FailedCreate") || strings.Contains(line, "Error creating:") {
		return r, false
	}
	if d, ok := readPolicyDenial(line); ok {
		r.how = "admission"
		if m := findSubmatch(blockedResourceRE, line); m != nil {
			r.kind, r.name = m[1], m[3]
		} else if m := findSubmatch(deniedKindRE, line); m != nil {
			r.kind, r.name = m[2], m[1]
		}
		r.detail = "admission webhook"
		if d.Webhook != "" {
			r.detail += " " + d.Webhook
		}
		r.detail += " denied it"
		if d.Policy != "" {
			r.detail += ": policy " + d.Policy
			if d.Rule != "" {
				r.detail += " (rule " + d.Rule + ")"
			}
		}
		if d.Reason != "" {
			r.detail += ": " + d.Reason
		}
	} else if m := findSubmatch(invalidObjectRE, line); m != nil {
		r.how, r.kind, r.name, r.detail = "validation", m[1], m[2], strings.TrimSpace(m[3])
	}
	// A changed selector the API server keeps immutable is
	// KindSelector's: it follows the rejection to the Service
	// that took the new selector alone.
	if strings.Contains(r.detail, "spec.selector") && strings.Contains(r.detail, "immutable") {
		return r, false
	}
	if r.name == "" || r.kind == "Pod" {
		return r, false
	}
	return r, true
}

// manualEdit is a hand-run kubectl command's managedFields entry on the
// rejected object: its manager, the last named key it owns, its time.
type manualEdit struct {
	manager, key, at string
}

func readManualEdit(lines []string) (e manualEdit) {
	start := 0
	for i, l := range lines {
		if strings.Contains(l, "fieldsType:") || strings.HasPrefix(strings.TrimSpace(l), "- apiVersion:") {
			start = i
		}
		m := findSubmatch(manualManagerRE, l)
		if m == nil {
			continue
		}
		e.manager = m[1]
		for _, b := range lines[start:i] {
			if k := findSubmatch(managedKeyRE, b); k != nil {
				e.key = k[1]
			}
		}
		for _, a := range lines[i+1 : min(len(lines), i+4)] {
			if t := findSubmatch(managedTimeRE, a); t != nil {
				e.at = t[1]
				break
			}
		}
		return e
	}
	return e
}

func detectApplyRejected(ev *Gathered, found []Finding) []Finding {
	type seen struct {
		r        rejection
		count    int
		where    string
		line     string
		at       time.Time
		rollback bool
		edit     manualEdit
	}
	var order []string
	byName := map[string]*seen{}
	note := func(r rejection, where, line string, at time.Time) {
		s := byName[r.name]
		if s == nil {
			s = &seen{r: r, where: where, line: line, at: at}
			byName[r.name] = s
			order = append(order, r.name)
		}
		s.count++
		if s.at.IsZero() || !at.IsZero() && at.Before(s.at) {
			s.at = at
		}
		// A denial that names its policy wins over one that does not.
		if r.how == "admission" && len(r.detail) > len(s.r.detail) {
			s.r = r
		}
	}
	for _, c := range ev.Commands {
		for _, l := range c.Lines {
			if r, ok := readRejection(l); ok {
				note(r, c.Command, l, time.Time{})
			}
		}
	}
	for i := range ev.K8s.Events {
		e := &ev.K8s.Events[i]
		if r, ok := readRejection(e.Reason + " " + e.Message); ok {
			first, _ := eventTime(e)
			note(r, "event "+e.Reason, e.Message, first)
		}
	}
	for _, c := range ev.Changes {
		if r, ok := readRejection(c.Description); ok {
			note(r, "change", c.Description, c.Timestamp)
		}
	}
	if len(order) == 0 {
		return nil
	}
	var out []Finding
	for _, name := range order {
		s := byName[name]
		for _, c := range ev.Commands {
			for _, l := range c.Lines {
				if matchLine(rolledBackRE, l) && strings.Contains(l, name) {
					s.rollback = true
				}
			}
			if s.edit.manager == "" && (strings.Contains(c.Command, name) || len(order) == 1) {
				s.edit = readManualEdit(c.Lines)
			}
		}
		for i := range ev.K8s.Events {
			if e := &ev.K8s.Events[i]; matchLine(rolledBackRE, e.Reason+" "+e.Message) && strings.Contains(e.Message, name) {
				s.rollback = true
			}
		}
		// An admission controller's own report of the same object
		// (Kyverno's PolicyViolation events).
		reports := 0
		var report string
		for i := range ev.K8s.Events {
			if e := &ev.K8s.Events[i]; e.Reason == "PolicyViolation" && e.InvolvedObject.Name == name {
				reports++
				report = e.Message
			}
		}
		at := s.at
		if at.IsZero() {
			at = ev.Window.Start
		}
		f := Finding{Kind: KindApplyRejected, Subject: name, Object: strings.ToLower(s.r.kind) + " " + name, Namespace: ev.Scope.Namespace,
			Source: SrcKubernetes, Time: at, Severity: SevCritical, Weight: 0.8}
		f.setFact("object_kind", s.r.kind)
		f.setFact("how", s.r.how)
		f.setFact("detail", s.r.detail)
		if s.rollback {
			f.setFact("rolled_back", "true")
		}
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s: %s", s.where, quote(ReadableLine(s.line), 300)))
		if s.count > 1 {
			f.Evidence = append(f.Evidence, fmt.Sprintf("the rejection repeats: %d times in the evidence read", s.count))
		}
		if reports > 0 {
			f.Evidence = append(f.Evidence, fmt.Sprintf("%d PolicyViolation event(s) on %s: %s", reports, name, quote(report, 240)))
		}
		if s.edit.manager != "" {
			f.setFact("manual_manager", s.edit.manager)
			f.setFact("manual_key", s.edit.key)
			f.setFact("manual_at", s.edit.at)
			e := fmt.Sprintf("managedFields of %s: manager %s (a hand-run kubectl command) owns", name, s.edit.manager)
			if s.edit.key != "" {
				e += " " + s.edit.key
			} else {
				e += " fields"
			}
			if s.edit.at != "" {
				e += " since " + s.edit.at
			}
			f.Evidence = append(f.Evidence, e)
			f.Weight = 0.85
		}
		f.Summary = fmt.Sprintf("%s %s rejected by the API server on apply (%s)", s.r.kind, name, s.r.how)
		out = append(out, f)
	}
	return out
}

func describeApplyRejected(h *Hypothesis, sc Scope) string {
	kind := orWord(h.fact("object_kind"), "workload")
	d := fmt.Sprintf("the release of %s cannot apply: the API server rejects the rendered %s %s", h.Subject, kind, h.Subject)
	if h.fact("how") == "admission" {
		d += " — an " + h.fact("detail")
	} else {
		d += " as invalid (" + truncate(h.fact("detail"), 240) + ")"
	}
	if h.fact("rolled_back") != "" {
		d += "; each upgrade fails and is rolled back, so the previous version keeps running"
	} else {
		d += "; the new version is never applied and the previous one keeps running"
	}
	if m := h.fact("manual_manager"); m != "" {
		d += fmt.Sprintf("; the cause is drift from a manual edit: %s (manager %s", orWord(h.fact("manual_key"), "a field"), m)
		d += h.clause(", ", "manual_at") + ") was set by hand on the live object, and the release's merge keeps it next to what the chart now renders"
	}
	return d
}

func recommendApplyRejected(h *Hypothesis, sc Scope, r *recommender) {
	if m := h.fact("manual_manager"); m != "" {
		r.high("Remove the hand-set %s (owned by %s) from the live %s %s, then let the release retry the upgrade", orWord(h.fact("manual_key"), "field"), m, h.fact("object_kind"), h.Subject)
		r.med("Forbid manual kubectl edits of release-managed objects (drift detection, RBAC); put hotfixes through the chart's values")
	} else if h.fact("how") == "admission" {
		r.high("Make the rendered %s %s satisfy the admission policy that denies it (the denial names the rule and path), or exempt it while the manifest is fixed", h.fact("object_kind"), h.Subject)
		r.med("Run the cluster's admission policies against rendered manifests in CI (kyverno apply, gator test) so a denial fails the build, not the sync")
	} else {
		r.high("Fix the field the API server rejects in the rendered %s %s and release again", h.fact("object_kind"), h.Subject)
		r.med("Validate rendered manifests against the cluster in CI (kubectl apply --dry-run=server) before release")
	}
	r.low("Alert on failed release upgrades and syncs (Flux UpgradeFailed, Argo CD sync failed), not only on unhealthy pods")
}
