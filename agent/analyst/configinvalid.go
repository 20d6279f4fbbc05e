package analyst

import (
	"fmt"
	"regexp"
	"strings"
)

// A configuration file the application cannot parse (a YAML, JSON or TOML
// error in a ConfigMap, an invalid setting): it exits at start-up, so its
// pods crash-loop. Found in the crashed container's log (configCrash,
// below) and in any log's lines.
var configInvalid = &mechanism{
	kind:  KindConfigInvalid,
	class: classCause,
	label: "configuration error (invalid config file)",
	fromCrash: func(crash Finding, c *containerState) (Finding, bool) {
		return configCrash(crash, c.Object, c.Waiting != nil)
	},
	lines:      configInvalidRE,
	lineWeight: 0.85,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		d := strings.ToLower(c.fact("description") + " " + c.Summary)
		return c.Kind == KindConfigChange || strings.Contains(d, "configmap") || strings.Contains(d, "secret")
	},
	describe: func(h *Hypothesis, sc Scope) string { return describeConfigInvalid(h) },
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		if c := h.Trigger; c != nil && c.Kind == KindConfigChange {
			r.high("Revert the config change (%s) so the pods can start again", truncate(orWord(c.fact("description"), c.Summary), 160))
		} else {
			r.rollback()
		}
		r.high("Fix the configuration of %s: %s", h.Subject, truncate(h.fact("line"), 200))
		r.med("Validate configuration files (YAML/JSON schema) in CI before they reach the ConfigMap, and keep the last good version to roll back to")
		r.low("Alert on crash-looping pods right after config changes or restarts")
	},
}

// configInvalidRE matches an application refusing its configuration: a
// YAML/JSON/TOML parse error, an invalid or unparsable config file.
var configInvalidRE = regexp.MustCompile(`(?i)yaml: (line \d+|unmarshal errors)|mapping values are not allowed|did not find expected (key|node)|could not find expected ':'|json: cannot unmarshal|invalid character '.' looking for|toml: (line|expected)|failed to (parse|load|read|decode) (the )?(config|configuration|rules|settings|properties)\b[^"]*|(config|configuration) (file )?(is )?(invalid|malformed)|invalid (config|configuration)\b|(error|unable to|could not) (parsing|parse|load|loading) (the )?(config|configuration)|ScannerError|ParserError: while parsing|JsonParseException|malformed (yaml|json|config)`)

func describeConfigInvalid(h *Hypothesis) string {
	s := h.Subject
	where := "its config file"
	if p := h.fact("config_path"); p != "" {
		where = "config file " + p
	}
	d := fmt.Sprintf("configuration error in %s of %s (ConfigMap/config file): the application cannot parse it and exits", where, s)
	if c := h.fact("exit_code"); c != "" {
		d += fmt.Sprintf(" (exit code %s)", c)
	}
	if h.fact("crashloop") != "" {
		d += ", so its pods are in CrashLoopBackOff"
	}
	d += h.quoteClause(": ", "line", 220)
	return d
}

// configCrash turns a crash whose cause line is a configuration error
// into a config_invalid finding: the application cannot parse its
// configuration (a ConfigMap or config file) and exits.
func configCrash(crash Finding, cobj string, loop bool) (Finding, bool) {
	line := crash.fact("last_log")
	if line == "" || !matchLine(configInvalidRE, line) {
		return Finding{}, false
	}
	f := crash
	f.Facts = nil
	f.Kind, f.Severity, f.Weight = KindConfigInvalid, SevCritical, 0.9
	f.Summary = fmt.Sprintf("%s exits on a configuration error: %s", cobj, truncate(ReadableLine(line), 160))
	f.Evidence = []string{fmt.Sprintf("%s exits (code %s) on a configuration error: %s", cobj, orDash(crash.fact("exit_code")), quote(ReadableLine(line), 240))}
	f.setFact("line", line)
	f.setFact("exit_code", crash.fact("exit_code"))
	f.setFact("container", crash.fact("container"))
	if loop {
		f.setFact("crashloop", "true")
	}
	if m := findSubmatch(configPathRE, line); m != nil {
		f.setFact("config_path", m[1]+m[2])
	}
	return f, true
}
