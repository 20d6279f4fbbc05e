package analyst

import (
	"testing"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A Helm upgrade with --reuse-values failing on a value the new chart
// defaults: a GitLab CI job's log (timestamped script lines), a GitHub
// Actions log (##[error] prefix, upgrade --install), and a terminal with
// helm show values and helm get values. An upgrade without --reuse-values,
// or one failing on something else than a missing value, is none.
func TestHelmReuseValues(t *testing.T) {
	nilErr := `Error: UPGRADE FAILED: template: mailer/templates/deployment.yaml:48:24: executing "mailer/templates/deployment.yaml" at <.Values.pool.size>: nil pointer evaluating interface {}.size`
	logOf := func(lines ...string) []LogSet {
		var ls []evidence.LogLine
		for _, l := range lines {
			ls = append(ls, evidence.LogLine{Text: l})
		}
		return []LogSet{{Source: "ci-job", Lines: ls}}
	}
	terminal := []evidence.CommandOutput{
		{Command: "helm upgrade mailer ./charts/mailer -n mail --reuse-values --set image.tag=3.0.0", Lines: []string{nilErr}},
		{Command: "helm show values ./charts/mailer", Lines: []string{"image:", "  tag: \"\"", "pool:", "  size: 4"}},
		{Command: "helm get values mailer -n mail", Lines: []string{"USER-SUPPLIED VALUES:", "image:", "  tag: 2.9.1", "replicaCount: 2"}},
	}
	cases := []struct {
		name     string
		logs     []LogSet
		commands []evidence.CommandOutput
		subject  string
		want     []string
	}{
		{"gitlab ci job log", logOf(
			`2026-03-14T10:01:02.004Z $ helm upgrade mailer oci://registry.local/charts/mailer --version "$CHART_VERSION" --namespace mail --reuse-values --atomic`,
			"2026-03-14T10:01:04.338Z "+nilErr), nil, "mailer",
			[]string{"--reuse-values", "the pool block the new chart version added is missing", ".Values.pool.size"}},
		{"github actions log, upgrade --install", logOf(
			`2026-03-14T10:01:02.1Z helm upgrade --install mailer ./chart -n mail --reuse-values -f overrides.yaml`,
			"2026-03-14T10:01:04.3Z ##[error]"+nilErr), nil, "mailer", []string{".Values.pool.size"}},
		{"terminal with the chart's and the release's values", nil, terminal, "mailer",
			[]string{"the new chart's defaults hold pool and the release's stored values do not"}},
		{"no --reuse-values: none", logOf(`$ helm upgrade mailer ./chart -n mail -f values-prod.yaml`, nilErr), nil, "", nil},
		{"another render error: none", logOf(`$ helm upgrade mailer ./chart -n mail --reuse-values`,
			`Error: UPGRADE FAILED: template: mailer/templates/deployment.yaml:12:3: function "tpl2" not defined`), nil, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := onlyFinding(t, detectHelmReuseValues(&Gathered{Logs: c.logs, Commands: c.commands, Window: win}), c.subject)
			if f == nil {
				return
			}
			wantDescribed(t, &Hypothesis{Kind: KindHelmReuseValues, Subject: f.Subject, Primary: []*Finding{f}}, Scope{}, c.want...)
		})
	}
}
