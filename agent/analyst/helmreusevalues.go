package analyst

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A Helm upgrade that fails to render because it reuses the release's
// stored values: `helm upgrade --reuse-values` merges the values of the
// last release instead of the new chart's defaults, so a block the new
// chart version added to its values.yaml (worker.concurrency under a new
// worker block) is missing, and the template dereferencing it fails: "Error:
// UPGRADE FAILED: template: app/templates/deployment.yaml:61:36: executing
// ... at <.Values.worker.concurrency>: nil pointer evaluating interface
// {}.concurrency". `helm template` or an install with the chart's defaults
// renders fine; the chart and its registry are not at fault. Read from the
// failed upgrade's error (a CI job's log, a terminal) and the upgrade
// command with --reuse-values for the same release; `helm show values` of
// the new chart holding the block and `helm get values` of the release
// without it, and the change that introduced --reuse-values, are quoted.

// KindHelmReuseValues is a Helm upgrade that fails on a value the new
// chart defaults but --reuse-values drops.
const KindHelmReuseValues Kind = "helm_reuse_values"

var helmReuseValues = &mechanism{
	kind:   KindHelmReuseValues,
	class:  classCause,
	label:  "a Helm upgrade with --reuse-values missing the new chart's defaults",
	detect: func(ev *Gathered, _ []Finding) []Finding { return detectHelmReuseValues(ev) },
	related: func(h *Hypothesis, f *Finding) bool {
		return strings.EqualFold(f.Subject, h.Subject) && f.Kind != KindDeploy && f.Kind != KindConfigChange
	},
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return strings.Contains(changeText(c), "reuse-values")
	},
	describe:  describeHelmReuseValues,
	recommend: recommendHelmReuseValues,
}

var (
	// helmNilValueRE: a template failing on a missing value.
	helmNilValueRE = regexp.MustCompile(`(?:UPGRADE FAILED|Error).*?at <\.Values\.([\w.]+)>: nil pointer evaluating interface \{\}\.(\w+)`)
	// helmReuseUpgradeRE: an upgrade reusing the release's values.
	helmReuseUpgradeRE = regexp.MustCompile(`\bhelm\s+upgrade\s+(?:--install\s+|-i\s+)?([a-z0-9][\w.-]*)\s.*--reuse-values\b`)
	helmShowValuesRE   = regexp.MustCompile(`\bhelm\s+show\s+values\b`)
	helmGetValuesRE    = regexp.MustCompile(`\bhelm\s+get\s+values\s+([a-z0-9][\w.-]*)`)
	reuseChangeRE      = regexp.MustCompile(`(?i)reuse-values`)
)

func detectHelmReuseValues(ev *Gathered) []Finding {
	type textLine struct {
		text string
		cmd  *evidence.CommandOutput
	}
	var lines []textLine
	for i := range ev.Commands {
		lines = append(lines, textLine{ev.Commands[i].Command, &ev.Commands[i]})
	}
	airflowLines(ev, func(l string, c *evidence.CommandOutput) { lines = append(lines, textLine{l, c}) })
	var release, upgrade, value, failure string
	var at time.Time
	for _, l := range lines {
		if m := findSubmatch(helmReuseUpgradeRE, l.text); m != nil && release == "" {
			release, upgrade = m[1], strings.TrimSpace(l.text)
			if i := strings.Index(upgrade, "helm upgrade"); i > 0 {
				upgrade = upgrade[i:]
			}
		}
		if m := findSubmatch(helmNilValueRE, l.text); m != nil && value == "" {
			value, failure = m[1], strings.TrimSpace(l.text)
			at = evidence.ParseLogTime(l.text, ev.Window.End)
		}
	}
	if release == "" || value == "" {
		return nil
	}
	block, _, _ := strings.Cut(value, ".")
	f := Finding{Kind: KindHelmReuseValues, Subject: release, Namespace: ev.Scope.Namespace, Severity: SevCritical, Weight: 0.9,
		Source: SrcLogs, Time: ev.Window.End, Object: "helm release " + release}
	if !at.IsZero() {
		f.Time = at
	}
	f.setFact("value", value)
	f.setFact("block", block)
	f.setFact("upgrade", upgrade)
	f.setFact("failure", failure)
	f.Evidence = []string{"the upgrade runs " + quote(upgrade, 200), "it fails to render: " + quote(failure, 240)}
	// The new chart's defaults hold the block; the release's stored
	// values do not.
	for _, c := range ev.Commands {
		top := topLevelKeys(c.Lines)
		switch {
		case matchLine(helmShowValuesRE, c.Command) && top[block]:
			f.setFact("defaults", c.Command)
			f.Evidence = append(f.Evidence, fmt.Sprintf("the new chart's defaults (%s) hold the %s block", c.Command, block))
		case matchLine(helmGetValuesRE, c.Command) && len(top) > 0 && !top[block]:
			f.setFact("stored", c.Command)
			f.Evidence = append(f.Evidence, fmt.Sprintf("the release's stored values (%s) have no %s block", c.Command, block))
		}
	}
	for _, cs := range [][]evidence.Change{ev.Earlier, ev.Changes} {
		for _, c := range cs {
			if matchLine(reuseChangeRE, c.Description) {
				delete(f.Facts, "reuse_change")
				f.setFact("reuse_change", fmt.Sprintf("the change of %s at %s: %q", c.Service, ts(c.Timestamp), c.Description))
			}
		}
	}
	if c := f.fact("reuse_change"); c != "" {
		f.Evidence = append(f.Evidence, "--reuse-values came with "+c)
	}
	f.Summary = fmt.Sprintf("helm upgrade --reuse-values of %s fails on .Values.%s, a value the new chart defaults", release, value)
	return []Finding{f}
}

// topLevelKeys are the keys at the first column of a YAML output.
func topLevelKeys(lines []string) map[string]bool {
	out := map[string]bool{}
	for _, l := range lines {
		if l == "" || l[0] == ' ' || l[0] == '#' || l[0] == '-' {
			continue
		}
		if k, _, ok := strings.Cut(l, ":"); ok && !strings.ContainsAny(k, " \t") {
			out[k] = true
		}
	}
	return out
}

func describeHelmReuseValues(h *Hypothesis, sc Scope) string {
	s := fmt.Sprintf("the upgrade of the Helm release %s runs with --reuse-values (%s): Helm reuses the values stored with the last release instead of the new chart's defaults (its values.yaml), so the %s block the new chart version added is missing and its template fails on .Values.%s (%s)",
		h.Subject, quote(h.fact("upgrade"), 160), h.fact("block"), h.fact("value"), quote(h.fact("failure"), 200))
	if h.fact("defaults") != "" {
		s += fmt.Sprintf("; the new chart's defaults hold %s", h.fact("block"))
	}
	if h.fact("stored") != "" {
		s += " and the release's stored values do not"
	}
	s += "; a render with the chart's defaults (helm template, a fresh install) works, the chart and its registry are not at fault, and the release keeps running its previous version"
	s += h.clause("; --reuse-values came with ", "reuse_change")
	return s
}

func recommendHelmReuseValues(h *Hypothesis, sc Scope, r *recommender) {
	r.high("Upgrade %s without --reuse-values: pass the values explicitly (-f values-prod.yaml), or use --reset-then-reuse-values (Helm 3.14+) so the new chart's defaults apply under the stored overrides", h.Subject)
	r.med("Keep the release's values in git and deploy them with -f instead of reusing what was stored; values set by hand during incidents go into that file")
	r.low("Render the upgrade in CI against the release's stored values (helm get values | helm template -f -) before deploying a new chart major")
}
