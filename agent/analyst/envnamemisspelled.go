package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// A well-known environment variable set under a misspelled name. A
// library reads its settings from variables of fixed names (the
// OpenTelemetry SDKs OTEL_EXPORTER_OTLP_ENDPOINT, the Datadog tracer
// DD_AGENT_HOST, Spring Boot SPRING_PROFILES_ACTIVE) and ignores any other
// name without a word: a variable one or two letters off the real one
// (OTEL_EXPORTER_OTLP_ENDPONT) is set in the pod and never read, and the
// library runs on its default, which its own lines show (spans exported
// to localhost:4318 and refused, "unknown_service", "No active profile
// set"). The value the team wrote is right, only its name is not. Read
// from the containers' environment (pod and deployment specs, kubectl
// describe's Environment section, helm values, a jq of the env list) and
// the workload's own lines that show the default in force: without such a
// line a name off by a letter may be the team's own variable, and is not
// reported.

// KindEnvNameMisspelled is a well-known environment variable set under a
// misspelled name, so the library that reads it runs on its default.
const KindEnvNameMisspelled Kind = "env_name_misspelled"

var envNameMisspelled = &mechanism{
	kind:   KindEnvNameMisspelled,
	class:  classCause,
	label:  "a well-known environment variable set under a misspelled name (ignored, the default is used)",
	detect: func(ev *Gathered, _ []Finding) []Finding { return detectEnvNameMisspelled(ev) },
	// The local default the library falls back to is the subject's own
	// misdirection, not a dependency down.
	related: exceptOwnAndChanges(KindEnvNameMisspelled, func(h *Hypothesis, f *Finding) bool {
		return localHost(f.Subject) && (slices.Contains(f.Related, h.Subject) || strings.Contains(strings.Join(f.Evidence, " "), h.Subject))
	}),
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		t := changeText(c)
		return strings.Contains(t, strings.ToLower(h.fact("variable"))) || strings.Contains(t, "env") || strings.Contains(t, "values")
	},
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("%s sets %s, a misspelled name of %s (a typo: %s reads only %s and ignores the unknown variable), so the value %s never reaches it and it runs on its default, %s",
			h.Subject, h.fact("variable"), h.fact("intended"), h.fact("reader"), h.fact("intended"), quote(orWord(h.fact("value"), "set"), 100), h.fact("default"))
		d += fmt.Sprintf(": %s", quote(h.fact("line"), 220))
		d += ". The value is right, only the name is wrong; what it reaches is not down"
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Rename %s to %s where %s's environment is set (its chart values or manifest), roll it out and check its lines no longer show the default (%s)", h.fact("variable"), h.fact("intended"), h.Subject, h.fact("default"))
		r.med("Lint the environment of manifests against the names the libraries read (OTEL_*, DD_*, SPRING_*) in CI")
		r.low("Alert on a service that stops sending telemetry or logs its library's defaults at start")
	},
}

// knownEnvVar is an environment variable a library reads, with the
// default it runs on without it and what shows that default in its lines.
type knownEnvVar struct {
	name, reader, def string
	shows             *regexp.Regexp
}

var (
	otlpDefaultRE = regexp.MustCompile(`(?:localhost|127\.0\.0\.1|\[::1\]):431[78]\b`)
	knownEnvVars  = []knownEnvVar{
		{"OTEL_EXPORTER_OTLP_ENDPOINT", "the OpenTelemetry SDK", "localhost:4318 (4317 for gRPC)", otlpDefaultRE},
		{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "the OpenTelemetry SDK", "localhost:4318 (4317 for gRPC)", otlpDefaultRE},
		{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "the OpenTelemetry SDK", "localhost:4318 (4317 for gRPC)", otlpDefaultRE},
		{"OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", "the OpenTelemetry SDK", "localhost:4318 (4317 for gRPC)", otlpDefaultRE},
		{"OTEL_SERVICE_NAME", "the OpenTelemetry SDK", "unknown_service", regexp.MustCompile(`\bunknown_service\b`)},
		{"DD_AGENT_HOST", "the Datadog tracer", "localhost:8126", regexp.MustCompile(`(?:localhost|127\.0\.0\.1|\[::1\]):8126\b`)},
		{"DD_TRACE_AGENT_URL", "the Datadog tracer", "localhost:8126", regexp.MustCompile(`(?:localhost|127\.0\.0\.1|\[::1\]):8126\b`)},
		{"JAEGER_AGENT_HOST", "the Jaeger client", "localhost:6831", regexp.MustCompile(`(?:localhost|127\.0\.0\.1|\[::1\]):6831\b`)},
		{"ELASTIC_APM_SERVER_URL", "the Elastic APM agent", "http://localhost:8200", regexp.MustCompile(`(?:localhost|127\.0\.0\.1|\[::1\]):8200\b`)},
		{"SPRING_PROFILES_ACTIVE", "Spring Boot", `the "default" profile`, regexp.MustCompile(`(?i)no active profile set`)},
	}
	// envNameLineRE is a variable's name where a command prints a
	// container's environment: describe's "NAME:  value", helm values'
	// "NAME: value", a jq of the env list's {"name":"NAME",...}.
	envNameLineRE = regexp.MustCompile(`^\s+([A-Z][A-Z0-9_]{5,}):\s+(\S.*)$|"name"\s*:\s*"([A-Z][A-Z0-9_]{5,})"(?:\s*,\s*"value"\s*:\s*"([^"]*)")?`)
)

// misspelledOf is the well-known variable name is a misspelling of: one
// or two edits off (one for short names), not a name of its own.
func misspelledOf(name string) *knownEnvVar {
	for i := range knownEnvVars {
		k := &knownEnvVars[i]
		if strings.EqualFold(name, k.name) {
			return nil
		}
	}
	for i := range knownEnvVars {
		k := &knownEnvVars[i]
		limit := 2
		if len(k.name) < 12 {
			limit = 1
		}
		if d := editDistance(name, k.name); d > 0 && d <= limit {
			return k
		}
	}
	return nil
}

func detectEnvNameMisspelled(ev *Gathered) []Finding {
	type envOf struct {
		ns    string
		vars  map[string]string
		where string
	}
	byWl := map[string]*envOf{}
	var order []string
	add := func(wl, ns, name, value, where string) {
		if wl == "" {
			return
		}
		e := byWl[wl]
		if e == nil {
			e = &envOf{ns: ns, vars: map[string]string{}, where: where}
			byWl[wl] = e
			order = append(order, wl)
		}
		if _, ok := e.vars[name]; !ok {
			e.vars[name] = value
		}
	}
	for _, p := range ev.K8s.Pods {
		for _, c := range p.Spec.Containers {
			for _, e := range c.Env {
				add(WorkloadOfPod(&p), p.Namespace, e.Name, e.Value, "pod "+p.Name)
			}
		}
	}
	for _, d := range ev.K8s.Deployments {
		for _, c := range d.Spec.Template.Spec.Containers {
			for _, e := range c.Env {
				add(d.Name, d.Namespace, e.Name, e.Value, "deployment "+d.Name)
			}
		}
	}
	known := knownServiceNames(ev)
	for _, cmd := range ev.Commands {
		wl := ""
		if cmd.Pod != "" {
			wl = workloadOfName(cmd.Pod)
		} else {
			for _, n := range known {
				if len(n) > len(wl) && containsToken(cmd.Command, n) {
					wl = n
				}
			}
		}
		for _, l := range cmd.Lines {
			if m := findSubmatch(envNameLineRE, l); m != nil {
				name, value := orWord(m[1], m[3]), orWord(m[2], m[4])
				add(wl, cmd.Namespace, name, strings.TrimSpace(value), truncate(cmd.Command, 80))
			}
		}
	}
	var out []Finding
	for _, wl := range order {
		e := byWl[wl]
		names := make([]string, 0, len(e.vars))
		for n := range e.vars {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, name := range names {
			k := misspelledOf(name)
			if k == nil {
				continue
			}
			if _, set := e.vars[k.name]; set {
				continue // the right name is set too: the typo is idle
			}
			// The default in force, in the workload's own lines.
			line, at := "", time.Time{}
			n := 0
			for set, t := range allTemplates(ev) {
				if set.Subject != wl {
					continue
				}
				if l := templateLine(t, k.shows); l != "" {
					if line == "" {
						line, at = l, orTime(t.FirstSeen, t.FirstIncident)
					}
					n += max(t.Count, 1)
				}
			}
			if line == "" {
				continue
			}
			f := Finding{Kind: KindEnvNameMisspelled, Subject: wl, Namespace: e.ns, Time: at, Severity: SevWarning, Weight: 0.85,
				Source: SrcLogs, Object: "workload " + wl}
			f.addCount(n)
			f.setFact("variable", name)
			f.setFact("intended", k.name)
			f.setFact("reader", k.reader)
			f.setFact("default", k.def)
			f.setFact("value", e.vars[name])
			f.setFact("line", ReadableLine(line))
			f.Evidence = append(f.Evidence,
				fmt.Sprintf("%s sets %s=%s (%s), not %s, the name %s reads", wl, name, quote(e.vars[name], 100), e.where, k.name, k.reader),
				fmt.Sprintf("%s's own lines show the default %s in force (%d lines): %s", wl, k.def, n, quote(ReadableLine(line), 220)))
			f.Summary = fmt.Sprintf("%s: %s is a misspelling of %s, the default is used", wl, name, k.name)
			out = append(out, f)
			break
		}
	}
	return out
}

// localHost reports whether a subject names the local host.
func localHost(s string) bool {
	switch strings.Trim(s, "[]") {
	case "localhost", "127.0.0.1", "::1", "0.0.0.0":
		return true
	}
	return false
}
