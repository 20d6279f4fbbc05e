package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// KindSettingInvalid is a process that refuses the value of one of its
// settings and exits.
const KindSettingInvalid Kind = "setting_invalid"

// One setting with a value the software does not accept: "sslmode" set to
// "required" where PostgreSQL's clients know "require", a port that is not
// a number, a directive's value nginx does not know. The process exits at
// start-up and its pods crash-loop; its log names the setting and the
// value, and what the software accepts is known (the line lists it, or
// the setting is a well-known one). The chain goes on to where the value
// comes from: the container's environment variable, the ConfigMap or
// Secret the pod reads it from.
//
// Read from real lines: pgx ("failed to configure TLS (sslmode is
// invalid)" after the connection string), libpq and psycopg ("invalid
// sslmode value: \"required\""), lib/pq ("pq: unsupported sslmode
// \"required\"; only \"require\" (default), \"verify-full\", \"verify-ca\",
// and \"disable\" supported"), PostgreSQL's server ("invalid value for
// parameter \"work_mem\": \"64XB\""), Go's flag package ("invalid value
// \"eighty\" for flag -port"), nginx ("invalid value \"of\" in
// \"proxy_buffering\" directive"), Spring Boot ("Failed to bind properties
// under 'server.port'" with its "Value:" line) and MySQL ("unknown
// variable 'sql-mode=...'").
var settingInvalid = &mechanism{
	kind:       KindSettingInvalid,
	class:      classCause,
	label:      "invalid setting value",
	lines:      settingInvalidRE,
	lineWeight: 0.9,
	detect:     detectSettingInvalid,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		d := changeText(c)
		return c.Kind == KindConfigChange || strings.Contains(d, "configmap") || strings.Contains(d, "secret") ||
			h.fact("setting") != "" && strings.Contains(d, strings.ToLower(h.fact("setting")))
	},
	describe: describeSettingInvalid,
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		key := orWord(h.fact("setting"), "the setting")
		to := "a value it accepts"
		if s := h.fact("suggest"); s != "" {
			to = quote(s, 40)
		} else if v := h.fact("valid"); v != "" {
			to = "one of " + v
		}
		where := "where it is set"
		if v, cm := h.fact("variable"), h.fact("config_map"); v != "" && cm != "" {
			where = fmt.Sprintf("%s in ConfigMap %s", v, cm)
		} else if cm != "" {
			where = "ConfigMap " + cm
		} else if v != "" {
			where = "the environment variable " + v
		}
		if c := h.Trigger; c != nil && (c.Kind == KindConfigChange || c.Kind == KindDeploy) {
			r.high("Set %s of %s to %s (%s), or revert the change that set it (%s), and restart the pods", key, h.Subject, to, where, truncate(orWord(c.fact("description"), c.Summary), 140))
		} else {
			r.high("Set %s of %s to %s (%s) and restart the pods", key, h.Subject, to, where)
		}
		r.med("Validate setting values against what the software accepts in CI (a start-up dry run of the new configuration) before they reach the cluster")
		r.low("Alert on crash-looping pods right after config changes")
	},
}

var (
	// settingInvalidRE matches a line refusing a setting's value in any
	// log (a bare "X is invalid" is read only in a crashed container's
	// last lines, and only with X's assignment in the line).
	settingInvalidRE = regexp.MustCompile(`(?i)invalid [a-z][\w.-]* value\b|unsupported [a-z][\w.-]* "[^"]*"|invalid value for (?:parameter|setting|option|key|flag) "?[\w.-]+|invalid value "[^"]*" (?:for flag|in ")|failed to bind properties under '[^']+'|unknown variable '[\w-]+=`)

	// The forms that name the setting and the value, each with the
	// groups of its key and value (0 when the line does not hold it).
	settingForms = []struct {
		re         *regexp.Regexp
		key, value int
	}{
		{regexp.MustCompile(`(?i)invalid value for (?:parameter|setting|option|key|flag) "?([\w.-]+)"?:?\s*"?([^"\s,;]*)`), 1, 2},
		{regexp.MustCompile(`(?i)invalid value "([^"]*)" for flag -+([\w.-]+)`), 2, 1},
		{regexp.MustCompile(`(?i)invalid value "([^"]*)" in "([\w.-]+)" directive`), 2, 1},
		{regexp.MustCompile(`(?i)invalid ([a-z][\w.-]*) value:?\s*"?([^"\s,;)]*)`), 1, 2},
		{regexp.MustCompile(`(?i)unsupported ([a-z][\w.-]*) "([^"]*)"`), 1, 2},
		{regexp.MustCompile(`(?i)unknown variable '([\w-]+)=([^']*)'`), 1, 2},
		{regexp.MustCompile(`(?i)failed to bind properties under '([^']+)'`), 1, 0},
		{regexp.MustCompile(`(?i)\b([a-z][\w.-]*) is invalid\b`), 1, 0},
	}
	// valueLineRE is Spring Boot's "Value: \"eighty\"" under its binding
	// failure.
	valueLineRE = regexp.MustCompile(`^\s*Value:\s*"?([^"]*)"?\s*$`)
	// validListRE is a list of accepted values the line gives.
	validListRE = regexp.MustCompile(`(?i)(?:only|must be one of|one of|possible values(?: are)?|available values(?: are)?|valid values(?: are)?|expected one of)\s*:?\s*((?:"?[\w.-]+"?(?:\s*\(default\))?(?:,?\s*and\s+|,?\s*or\s+|,\s*|\s*\|\s*)?)+)`)
	valueWordRE = regexp.MustCompile(`"?([\w.-]+)"?`)
)

// wellKnownValues are the values well-known settings accept, by the
// setting's name as their software spells it: libpq's sslmode (every
// PostgreSQL client built on it or copying it: pgx, lib/pq, psycopg, JDBC
// sslmode=), MySQL's ssl-mode.
var wellKnownValues = map[string][]string{
	"sslmode":  {"disable", "allow", "prefer", "require", "verify-ca", "verify-full"},
	"ssl-mode": {"DISABLED", "PREFERRED", "REQUIRED", "VERIFY_CA", "VERIFY_IDENTITY"},
}

// refusedSetting reads the setting a line refuses and its value (and, for
// a refusal that does not quote it, the "Value:" line after it). ok is
// false when the line refuses no setting; a bare "X is invalid" counts
// only when the line assigns X a value (a connection string).
func refusedSetting(lines []evidence.LogLine, i int) (key, value string, ok bool) {
	text := ReadableLine(lines[i].Text)
	bare := false
	for k, form := range settingForms {
		m := findSubmatch(form.re, text)
		if m == nil {
			continue
		}
		key, bare = m[form.key], k == len(settingForms)-1
		if form.value > 0 {
			value = m[form.value]
		}
		break
	}
	if key == "" {
		return "", "", false
	}
	// The value, when the refusal does not quote it: the key's
	// assignment in the line (a connection string, a command line), or a
	// "Value:" line after it.
	if value == "" {
		if m := regexp.MustCompile(`(?i)(?:^|[\s"'` + "`" + `(,;?&])-{0,2}` + regexp.QuoteMeta(key) + `\s*=\s*"?([^\s"'` + "`" + `,;&)]+)`).FindStringSubmatch(text); m != nil {
			value = m[1]
		}
	}
	if bare {
		return key, value, value != ""
	}
	for j := i + 1; value == "" && j < len(lines) && j <= i+6; j++ {
		if m := findSubmatch(valueLineRE, lines[j].Text); m != nil {
			value = m[1]
		}
	}
	return key, value, true
}

// detectSettingInvalid reads, in the last lines of each crashed
// container, the first line refusing a setting's value: the crash is the
// symptom, the setting its cause, followed to where the pod takes it from.
func detectSettingInvalid(ev *Gathered, found []Finding) []Finding {
	var out []Finding
	crashLines(ev, found, func(c Finding, pod string, lines []evidence.LogLine, i int) bool {
		setting, value, ok := refusedSetting(lines, i)
		if !ok {
			return false
		}
		f := crashLineFinding(c, pod, KindSettingInvalid, 0.9, lines[i].Text, refusalSnippet(ReadableLine(lines[i].Text)))
		readSetting(&f, setting, value, ReadableLine(lines[i].Text))
		settingSource(&f, ev.K8s.Pods)
		obj := crashedObject(c, pod)
		f.Summary = fmt.Sprintf("%s exits: its setting %s=%s is invalid", obj, setting, orWord(value, "?"))
		if src := f.fact("config_map"); src != "" {
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s takes its environment from ConfigMap %s%s", obj, src, orWord(wrapped(" (", f.fact("variable"), ")"), "")))
		}
		out = append(out, f)
		return true
	})
	return out
}

// wrapped is s between pre and post, "" for an empty s.
func wrapped(pre, s, post string) string {
	if s == "" {
		return ""
	}
	return pre + s + post
}

// readSetting records the setting, its value and the values it accepts
// (listed by the line, or the setting's well-known values).
func readSetting(f *Finding, key, value, text string) {
	f.setFact("setting", key)
	f.setFact("value", value)
	valid := wellKnownValues[key]
	if m := findSubmatch(validListRE, text); m != nil {
		var listed []string
		for _, q := range findAllSubmatch(valueWordRE, m[1], -1) {
			switch strings.ToLower(q[1]) {
			case "default", "and", "or":
				continue
			}
			listed = append(listed, q[1])
		}
		if len(listed) >= 2 {
			valid = listed
		}
	}
	if len(valid) > 0 && value != "" && !slices.ContainsFunc(valid, func(v string) bool { return strings.EqualFold(v, value) }) {
		f.setFact("valid", strings.Join(valid, ", "))
		f.setFact("suggest", closestValue(value, valid))
	}
	why := fmt.Sprintf("%s refuses %s", f.Subject, key)
	if value != "" {
		why += fmt.Sprintf("=%s", value)
	}
	if v := f.fact("valid"); v != "" {
		why += " (it accepts " + v + ")"
	}
	f.setFact("why", why)
}

// closestValue is the accepted value the refused one was most likely
// meant to be: one that the value starts with or that starts with it
// ("required" for "require"), else one within two edits; "" for none.
func closestValue(v string, valid []string) string {
	lv := strings.ToLower(v)
	best, bestD := "", 3
	for _, x := range valid {
		lx := strings.ToLower(x)
		if strings.HasPrefix(lv, lx) || strings.HasPrefix(lx, lv) {
			if d := abs(len(lx) - len(lv)); d < bestD {
				best, bestD = x, d
			}
			continue
		}
		if d := editDistance(lv, lx); d < bestD {
			best, bestD = x, d
		}
	}
	return best
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// editDistance is the Levenshtein distance of two short strings.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// settingSource follows the refused value to where the pod takes it from:
// an environment variable of the container whose name holds the setting's
// (PGSSLMODE for sslmode) and whose value is the refused one, or that a
// ConfigMap or Secret key fills; else the ConfigMaps the container reads
// whole (envFrom).
func settingSource(f *Finding, pods []corev1.Pod) {
	key := normalSetting(f.fact("setting"))
	if key == "" {
		return
	}
	p := podOfObject(pods, f.Object)
	if p == nil {
		return
	}
	for _, c := range p.Spec.Containers {
		if cn := f.fact("container"); cn != "" && c.Name != cn {
			continue
		}
		for _, e := range c.Env {
			if !strings.Contains(normalSetting(e.Name), key) {
				continue
			}
			switch {
			case e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil:
				f.setFact("variable", e.Name)
				f.setFact("config_map", e.ValueFrom.ConfigMapKeyRef.Name)
			case e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil:
				f.setFact("variable", e.Name)
				f.setFact("secret", e.ValueFrom.SecretKeyRef.Name)
			case e.Value != "" && strings.EqualFold(e.Value, f.fact("value")):
				f.setFact("variable", e.Name)
				f.setFact("set_by", "the container's env")
			}
		}
		if f.fact("variable") != "" {
			return
		}
		var cms []string
		for _, ef := range c.EnvFrom {
			if ef.ConfigMapRef != nil {
				cms = append(cms, ef.ConfigMapRef.Name)
			}
		}
		if len(cms) == 1 {
			f.setFact("config_map", cms[0])
			f.setFact("set_by", "envFrom")
		}
	}
}

// normalSetting is a setting's or variable's name without case, dashes,
// dots or underscores ("ssl-mode", "SSL_MODE" and "sslmode" alike).
func normalSetting(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '-', '_', '.':
			return -1
		}
		return r
	}, strings.ToLower(s))
}

func describeSettingInvalid(h *Hypothesis, sc Scope) string {
	key, value := h.fact("setting"), h.fact("value")
	d := fmt.Sprintf("%s exits at start-up because it refuses the value of one of its settings", h.Subject)
	if key != "" && value != "" {
		d = fmt.Sprintf("%s exits at start-up because its setting %s is set to %s, which is invalid", h.Subject, key, quote(value, 60))
	} else if key != "" {
		d = fmt.Sprintf("%s exits at start-up because the value of its setting %s is invalid", h.Subject, key)
	}
	if v := h.fact("valid"); v != "" {
		d += fmt.Sprintf(": %s accepts only %s", key, v)
		if s := h.fact("suggest"); s != "" {
			d += fmt.Sprintf(" (%s was most likely meant as %s)", quote(value, 60), quote(s, 40))
		}
	}
	switch v, cm := h.fact("variable"), h.fact("config_map"); {
	case v != "" && cm != "":
		d += fmt.Sprintf(". The value comes from the environment variable %s, set by ConfigMap %s", v, cm)
	case v != "" && h.fact("secret") != "":
		d += fmt.Sprintf(". The value comes from the environment variable %s, set by Secret %s", v, h.fact("secret"))
	case v != "":
		d += fmt.Sprintf(". The value comes from the environment variable %s of the pod spec", v)
	case cm != "":
		d += fmt.Sprintf(". The pod takes its environment from ConfigMap %s (envFrom), where the value is most likely set", cm)
	}
	if c := h.fact("exit_code"); c != "" {
		d += fmt.Sprintf(" (exit code %s", c)
		if h.fact("crashloop") != "" {
			d += ", CrashLoopBackOff"
		}
		d += ")"
	} else if h.fact("crashloop") != "" {
		d += " (CrashLoopBackOff)"
	}
	if l := h.fact("line"); l != "" {
		d += " — " + quote(refusalSnippet(ReadableLine(l)), 220)
	}
	return d
}

// refusalSnippet is the part of a long line around its refusal (a
// connection string's error comes after the string).
func refusalSnippet(text string) string {
	if len(text) <= 200 {
		return text
	}
	for _, form := range settingForms {
		if loc := form.re.FindStringIndex(text); loc != nil {
			from := max(0, loc[0]-120)
			to := min(len(text), loc[1]+60)
			s := text[from:to]
			if from > 0 {
				s = "…" + s
			}
			return s
		}
	}
	return text
}
