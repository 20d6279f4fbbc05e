package analyst

import (
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// A setting changed in a configuration file that an environment variable
// overrides. Configuration systems layer their sources and the
// environment comes late: ASP.NET Core reads appsettings.json, then
// appsettings.{Environment}.json, then environment variables
// ("PspClient__TimeoutSeconds" for PspClient:TimeoutSeconds); Spring Boot
// binds APPLICATION_PSP_TIMEOUT over application.yml's application.psp.timeout.
// An old `kubectl set env` or a chart value that set the variable keeps
// winning: the file's edit is applied, the pods restarted, and the
// process still runs with the variable's value. The chain: the change
// that sets the key in the file, the container's variable for the same
// key with another value.

// KindEnvOverride is a file setting overridden by an environment variable.
const KindEnvOverride Kind = "env_override"

// settingChangeRE is a change that sets a dotted or colon-separated key
// from one value to another: "PspClient.TimeoutSeconds 5 -> 30",
// "app.psp.timeout: 5s → 30s", "Logging:LogLevel:Default from Debug to Information".
var settingChangeRE = regexp.MustCompile(`\b([A-Za-z][\w-]*(?:[.:][A-Za-z][\w-]*)+):?\s+(?:from\s+)?(\S+?)\s*(?:->|→|=>|\bto\b)\s*([^\s,;)]+)`)

var envOverride = &mechanism{
	kind:   KindEnvOverride,
	class:  classCause,
	label:  "setting overridden by an environment variable",
	detect: detectEnvOverride,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return strings.Contains(changeText(c), strings.ToLower(h.fact("key")))
	},
	strictTriggers: true,
	describe: func(h *Hypothesis, sc Scope) string {
		return fmt.Sprintf("the change to %s's configuration file sets %s to %s (%s), but the container's environment variable %s=%s overrides it: environment variables take precedence over the configuration files, so %s still runs with %s = %s and the edit (and the restart to pick it up) has no effect",
			h.Subject, h.fact("key"), h.fact("new"), truncate(h.fact("change"), 160), h.fact("env"), h.fact("env_value"), h.Subject, h.fact("key"), h.fact("env_value"))
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Remove the environment variable %s from %s (kubectl set env deployment/%s %s-, or the chart value that sets it) or set it to %s; the file's value then applies", h.fact("env"), h.Subject, h.Subject, h.fact("env"), h.fact("new"))
		r.med("Keep each setting in one place: list where %s's settings come from and which source wins (environment over files)", h.Subject)
		r.low("Log the effective configuration at start (the values the process runs with), so an override shows")
	},
}

// settingKey normalises a configuration key or an environment variable's
// name for comparison: lower-cased, without separators.
func settingKey(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '.', ':', '_', '-':
			return -1
		}
		return r
	}, strings.ToLower(s))
}

// detectEnvOverride finds a change that sets a key in a configuration
// file while a container of the changed workload sets the same key, with
// another value, in its environment.
func detectEnvOverride(ev *Gathered, found []Finding) []Finding {
	var out []Finding
	for _, c := range ev.Changes {
		m := findSubmatch(settingChangeRE, c.Description)
		if m == nil || c.Service == "" {
			continue
		}
		key, old, nv := m[1], strings.Trim(m[2], `"'`), strings.Trim(m[3], `"'`)
		name, val, ok := envOf(ev, c.Service, key)
		if !ok || val == nv {
			continue
		}
		f := Finding{Kind: KindEnvOverride, Subject: c.Service, Object: "env " + name, Source: SrcKubernetes, Severity: SevCritical, Weight: 0.93, Time: c.Timestamp}
		f.setFact("key", key)
		f.setFact("old", old)
		f.setFact("new", nv)
		f.setFact("env", name)
		f.setFact("env_value", val)
		f.setFact("change", c.Description)
		f.Evidence = append(f.Evidence,
			fmt.Sprintf("change at %s: %s", ts(c.Timestamp), truncate(c.Description, 200)),
			fmt.Sprintf("%s's container sets %s=%s in its environment, which overrides %s from the file", c.Service, name, val, key))
		for _, co := range ev.Commands {
			for _, l := range co.Lines {
				if strings.TrimSpace(l) == name+"="+val {
					f.Evidence = append(f.Evidence, fmt.Sprintf("%s: %s", truncate(co.Command, 100), l))
					break
				}
			}
		}
		f.Summary = fmt.Sprintf("%s's %s is overridden by the environment variable %s=%s", c.Service, key, name, val)
		out = append(out, f)
	}
	return out
}

// envOf is the environment variable of a workload's containers that sets
// key, and its value.
func envOf(ev *Gathered, workload, key string) (string, string, bool) {
	want := settingKey(key)
	look := func(cs []corev1.Container) (string, string, bool) {
		for _, c := range cs {
			for _, e := range c.Env {
				// A hierarchical name (Section__Key) or a relaxed one
				// (SECTION_KEY), never a one-word variable.
				if e.ValueFrom == nil && strings.Contains(e.Name, "_") && settingKey(e.Name) == want {
					return e.Name, e.Value, true
				}
			}
		}
		return "", "", false
	}
	for i := range ev.K8s.Deployments {
		if d := &ev.K8s.Deployments[i]; d.Name == workload {
			if n, v, ok := look(d.Spec.Template.Spec.Containers); ok {
				return n, v, ok
			}
		}
	}
	for i := range ev.K8s.Pods {
		if p := &ev.K8s.Pods[i]; WorkloadOfPod(p) == workload {
			if n, v, ok := look(p.Spec.Containers); ok {
				return n, v, ok
			}
		}
	}
	return "", "", false
}
