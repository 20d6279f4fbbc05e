package analyst

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/rootcause/rootcause/agent/evidence"
)

// KindMissingEnv is a process that exits because a required environment
// variable (or a placeholder filled from one) is not set.
const KindMissingEnv Kind = "missing_env"

// A required environment variable missing: the application validates its
// settings at start-up and exits (often with code 1, sometimes 0), so the
// pod crash-loops. Its log names the variable; the Secret or ConfigMap
// that should provide it, or the pod spec's env, is where to fix it.
var missingEnv = &mechanism{
	kind:       KindMissingEnv,
	class:      classCause,
	label:      "required environment variable missing",
	lines:      regexp.MustCompile(`(?i)missing (required )?(environment|env)\b|(environment|env) ?var(iable)?s? .{0,40}\b(is |are )?(not set|missing|undefined|not defined|required|empty|unset)\b|required (environment|env) ?var(iable)?|required key \S+ missing value|\bunbound variable\b|parameter (null or )?not set|(?-i:\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b:? (is|was) (not set|undefined|not defined|missing|empty|required))|could not resolve placeholder '[^']+'|KeyError: '(?-i:[A-Z][A-Z0-9]*_[A-Z0-9_]+)'`),
	lineWeight: 0.95,
	detect: func(ev *Gathered, found []Finding) []Finding {
		return crashLogCauses(ev, found, KindMissingEnv, func(f *Finding, lines []evidence.LogLine, i int) {
			f.setFact("variable", envVariable(lines, i))
		})
	},
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		d := strings.ToLower(c.fact("description") + " " + c.Summary)
		return c.Kind == KindDeploy || c.Kind == KindConfigChange || strings.Contains(d, "secret") || strings.Contains(d, "env")
	},
	describe: func(h *Hypothesis, sc Scope) string {
		v := h.fact("variable")
		d := fmt.Sprintf("%s exits at start-up because a required environment variable is missing", h.Subject)
		if v != "" {
			d = fmt.Sprintf("%s exits at start-up because the required environment variable %s is not set", h.Subject, v)
		}
		if c := h.fact("exit_code"); c != "" {
			d += fmt.Sprintf(" (exit code %s)", c)
		}
		if h.fact("crashloop") != "" {
			d += ", so its pods are in CrashLoopBackOff"
		} else {
			d += ", so its containers exit"
		}
		d += h.quoteClause(" — ", "line", 200)
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		v := orWord(h.fact("variable"), "the missing variable")
		r.high("Provide %s to %s: add it to the Secret or ConfigMap the pod reads (envFrom/valueFrom) or to the Deployment's env, then restart the pods", v, h.Subject)
		r.rollback()
		r.med("Compare the variables the new version requires with what the pod spec provides (release notes, its config schema)")
		r.low("Validate required settings in CI against the target environment's Secrets and ConfigMaps")
	},
}

var envNameRE = regexp.MustCompile(`\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b|\b[A-Z]{4,}\b`)

// envVariable names the variable a missing-variable line (or, for tools
// that list them below a heading, the next lines) names.
func envVariable(lines []evidence.LogLine, i int) string {
	for j := i; j < len(lines) && j <= i+3; j++ {
		for _, m := range findAllString(envNameRE, lines[j].Text, -1) {
			switch m {
			case "ERROR", "FATAL", "WARN", "WARNING", "INFO", "DEBUG", "KEYERROR", "NOTE", "HINT":
				continue
			}
			return m
		}
	}
	return ""
}
