package analyst

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/finding"
)

// A change made by hand in the cluster (kubectl set resources, edit,
// patch, scale, set env) to a workload that a GitOps controller owns with
// self-heal: Argo CD's automated sync with selfHeal, or Flux's drift
// correction, sees the live object differ from git and re-applies the
// spec in git seconds later. The fix never takes effect, the pods run the
// values in git, and whatever the change meant to fix (pods OOMKilled at
// the old limit, too few replicas) goes on while the operator believes it
// applied. Read from the changes (a manual kubectl change of the service)
// and what the controller printed after it: Argo CD's "Self-healing:
// resource apps/Deployment:ns/name was changed in the cluster,
// re-applying the desired state", Flux's "drift detected" / "corrected
// drift", or `argocd app get` with "Sync Policy: Automated (...SelfHeal)"
// and a sync operation started minutes after the change.

// KindSelfHealReverted is a manual change to a workload reverted by its
// GitOps controller's self-heal.
const KindSelfHealReverted Kind = "selfheal_reverted"

var selfHealReverted = &mechanism{
	kind:   KindSelfHealReverted,
	class:  classCause,
	label:  "a manual change reverted by the GitOps controller's self-heal",
	detect: detectSelfHealReverted,
	related: func(h *Hypothesis, f *Finding) bool {
		return strings.EqualFold(f.Subject, h.Subject) && f.Kind != KindDeploy && f.Kind != KindConfigChange
	},
	strictTriggers: true,
	fitsChange:     func(h *Hypothesis, c *Finding) bool { return false },
	describe:       describeSelfHealReverted,
	recommend:      recommendSelfHealReverted,
}

var (
	// manualChangeRE is a change made by hand against the live cluster.
	manualChangeRE = regexp.MustCompile(`(?i)\b(?:kubectl|oc)\s+(?:-n\s+\S+\s+)?(?:set\s+(?:resources|env|image)|edit|patch|scale|apply\s+-f|replace|rollout\s+undo)\b|\bhelm\s+upgrade\b.*--set\b`)
	// argoSelfHealRE is Argo CD's controller re-applying a drifted
	// resource: kind and name.
	argoSelfHealRE = regexp.MustCompile(`Self-healing: resource (?:[\w.]*/)?(\w+):(?:[\w.-]*/)?([\w.-]+) was changed in the cluster`)
	// fluxDriftRE is Flux correcting drift of a resource: its name.
	fluxDriftRE = regexp.MustCompile(`(?i)(?:drift detected|correct(?:ed|ing) (?:cluster state )?drift|drift correct(?:ed|ion)).*?\b(?:Deployment|StatefulSet|DaemonSet)/(?:[\w.-]+/)?([\w.-]+)|\b(?:Deployment|StatefulSet|DaemonSet)/(?:[\w.-]+/)?([\w.-]+)\b.*?(?:drift detected|drift corrected)`)
	// argoAutoSelfHealRE is the sync policy argocd app get prints.
	argoAutoSelfHealRE = regexp.MustCompile(`(?i)^\s*Sync Policy:\s+Automated\b.*SelfHeal`)
	argoOpStartRE      = regexp.MustCompile(`^\s*Start:\s+(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) ([+-]\d{4})`)
	argoAppNameRE      = regexp.MustCompile(`^\s*Name:\s+(?:[\w.-]+/)?([\w.-]+)\s*$`)
	// limitValueRE is a quantity set by the change (memory=2Gi, cpu=2).
	changeSetRE = regexp.MustCompile(`(?i)--(?:limits|requests)=(\S+)|--(replicas=\d+)`)
)

// selfHealWindow bounds how long after the change the controller's
// re-apply counts as undoing it (Argo CD re-applies within seconds, its
// self-heal timeout and the refresh take at most a few minutes).
const selfHealWindow = 15 * time.Minute

type healLine struct {
	at   time.Time
	text string
}

// selfHealLines collects the lines that show a controller re-applying the
// spec in git over a drifted workload, by its name.
func selfHealLines(ev *Gathered) map[string][]healLine {
	out := map[string][]healLine{}
	ref := ev.Window.End
	add := func(l string, at time.Time) {
		name := ""
		if m := findSubmatch(argoSelfHealRE, l); m != nil {
			name = m[2]
		} else if m := findSubmatch(fluxDriftRE, l); m != nil {
			name = m[1] + m[2]
		}
		if name == "" {
			return
		}
		if at.IsZero() {
			at = evidence.ParseLogTime(l, ref)
		}
		out[strings.ToLower(name)] = append(out[strings.ToLower(name)], healLine{at: at, text: strings.TrimSpace(l)})
	}
	for _, c := range ev.Commands {
		app, selfHeal := "", false
		for _, l := range c.Lines {
			add(l, time.Time{})
			if m := findSubmatch(argoAppNameRE, l); m != nil && app == "" {
				app = m[1]
			}
			if matchLine(argoAutoSelfHealRE, l) {
				selfHeal = true
			}
			if m := findSubmatch(argoOpStartRE, l); m != nil && selfHeal && app != "" {
				if t, err := time.Parse("2006-01-02 15:04:05 -0700", m[1]+" "+m[2]); err == nil {
					out[strings.ToLower(app)] = append(out[strings.ToLower(app)], healLine{at: t.UTC(),
						text: fmt.Sprintf("argocd app get %s: Sync Policy Automated with SelfHeal, a sync started at %s", app, ts(t.UTC()))})
				}
			}
		}
	}
	for _, s := range ev.Logs {
		for _, t := range s.Templates {
			add(t.Example, time.Time{})
			if t.Last != "" {
				add(t.Last, time.Time{})
			}
		}
		for _, l := range s.Lines {
			add(l.Text, l.Time)
		}
	}
	return out
}

func detectSelfHealReverted(ev *Gathered, found []Finding) []Finding {
	var heals map[string][]healLine
	var out []Finding
	seen := map[string]bool{}
	for _, c := range ev.Changes {
		if c.Service == "" || !matchLine(manualChangeRE, c.Description) || seen[strings.ToLower(c.Service)] {
			continue
		}
		if heals == nil {
			heals = selfHealLines(ev)
		}
		var heal *healLine
		for i, h := range heals[strings.ToLower(c.Service)] {
			if h.at.IsZero() || h.at.Before(c.Timestamp) || h.at.Sub(c.Timestamp) > selfHealWindow {
				continue
			}
			if heal == nil || strings.HasPrefix(heal.text, "argocd app get") {
				heal = &heals[strings.ToLower(c.Service)][i]
			}
		}
		if heal == nil {
			continue
		}
		seen[strings.ToLower(c.Service)] = true
		f := Finding{Kind: KindSelfHealReverted, Subject: c.Service, Namespace: ev.Scope.Namespace, Severity: SevCritical, Weight: 0.9,
			Source: SrcKubernetes, Time: c.Timestamp, Object: "deployment " + c.Service}
		if !ev.Window.recent(f.Time) {
			f.Time = ev.Window.Start
		}
		f.setFact("change", fmt.Sprintf("%s (%s)", c.Description, ts(c.Timestamp)))
		f.setFact("after", heal.at.Sub(c.Timestamp).Round(time.Second).String())
		if m := findSubmatch(changeSetRE, c.Description); m != nil {
			f.setFact("set", m[1]+m[2])
		}
		controller := "Argo CD's automated sync with selfHeal"
		if !strings.Contains(heal.text, "Self-healing") && !strings.HasPrefix(heal.text, "argocd") {
			controller = "Flux's drift correction"
		}
		f.setFact("controller", controller)
		f.Evidence = []string{
			"the manual change of " + c.Service + ": " + f.Facts["change"],
			fmt.Sprintf("%s later, the GitOps controller re-applied the spec in git over it: %s", f.Facts["after"], clip(heal.text, 300)),
		}
		f.Summary = fmt.Sprintf("the manual change of %s was reverted by %s %s later", c.Service, controller, f.Facts["after"])
		out = append(out, f)
	}
	return out
}

// selfHealSymptom is what the reverted change meant to fix and still
// fails: the strongest other finding about the subject.
func selfHealSymptom(h *Hypothesis) string {
	if f := selfHealSymptomFinding(h); f != nil {
		return f.Summary
	}
	return ""
}

// selfHealSymptomFinding is the finding selfHealSymptom tells, or nil.
func selfHealSymptomFinding(h *Hypothesis) *Finding {
	var best *Finding
	for _, f := range h.Support {
		if f.Kind == KindSelfHealReverted || f.Kind == KindDeploy || f.Kind == KindConfigChange {
			continue
		}
		if best == nil || f.Weight > best.Weight {
			best = f
		}
	}
	return best
}

func describeSelfHealReverted(h *Hypothesis, sc Scope) string {
	s := fmt.Sprintf("the manual change %s never took effect: %s owns %s and re-applied the spec in git %s later (self-heal of a drift from git), so the pods still run the values in git", h.fact("change"), h.fact("controller"), h.Subject, h.fact("after"))
	if v := h.fact("set"); v != "" {
		s += fmt.Sprintf(", not %s", v)
	}
	if sym := selfHealSymptom(h); sym != "" {
		s += "; what the change meant to fix goes on: " + sym
	}
	return s
}

func recommendSelfHealReverted(h *Hypothesis, sc Scope, r *recommender) {
	r.add(finding.PriorityHigh, fmt.Sprintf("Make the change in git (the manifest or values that %s syncs for %s) and let it sync; a kubectl change to a self-healed application is undone within seconds", h.fact("controller"), h.Subject))
	r.add(finding.PriorityMedium, "For an emergency change outside git, disable self-heal on the application first (argocd app set --self-heal=false, or flux suspend) and record it, then re-enable after the fix is merged")
	r.add(finding.PriorityLow, "Tell on-call runbooks that workloads managed by GitOps with self-heal cannot be fixed with kubectl set/edit/patch")
}
