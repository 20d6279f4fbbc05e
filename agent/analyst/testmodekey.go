package analyst

import (
	"fmt"
	"regexp"
	"strings"
)

// A payment provider's test-mode key used in production (or a live key
// against test objects). Stripe keeps test and live data apart: a
// PaymentMethod, customer or intent created by the live checkout does not
// exist for a test-mode key, and every call that names one is refused
// with "No such PaymentMethod: 'pm_…'; a similar object exists in live
// mode, but a test mode key was used to make this request" (400
// resource_missing). Nothing in the code changed: the key the service
// reads did, typically because the Secret it comes from was pointed at
// another source (an ExternalSecret's remoteRef moved to a shared or
// non-production path) and a reloader restarted the service with it. The
// answer names the mode mismatch, the key's prefix when a command shows
// it (sk_test_), the ExternalSecret and the source it syncs from, and the
// change that moved it; a release of the front end at the same time is a
// coincidence.

// KindTestModeKey is a provider refusing a service's calls because its
// key is of the other mode (test in production).
const KindTestModeKey Kind = "test_mode_key"

var testModeKey = &mechanism{
	kind:   KindTestModeKey,
	class:  classCause,
	label:  "a payment provider's test-mode key used in production",
	detect: detectTestModeKey,
	related: exceptOwnAndChanges(KindTestModeKey, func(h *Hypothesis, f *Finding) bool {
		return refusalOf(h, f, false)
	}),
	// A change to the secret the key comes from.
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		t := strings.ToLower(changeText(c))
		return strings.Contains(t, "secret") || strings.Contains(t, "api key") || strings.Contains(t, "api-key")
	},
	contentTriggers: true,
	describe:        describeTestModeKey,
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		src := "the production source"
		if s := h.fact("secret"); s != "" {
			src = fmt.Sprintf("the production path (ExternalSecret %s's remoteRef)", s)
		}
		r.high("Point the key %s reads back at %s, force a refresh of the Secret and restart %s; verify the key's prefix is live (sk_live_) before traffic returns", h.Subject, src, h.Subject)
		r.med("Keep test and live keys in separate stores or paths that a production ExternalSecret cannot name (a ClusterSecretStore per environment, a policy denying nonprod paths)")
		r.low("Check at startup that the provider key's mode matches the environment (refuse a test key in production), and alert on the provider's resource_missing errors")
	},
}

var (
	// Stripe's refusal of an object of the other mode.
	testModeRE = regexp.MustCompile(`(?i)exists in (live|test) mode, but an? (test|live) mode key was used`)
	// A key's prefix as a command prints it (sk_test_, rk_live_...).
	keyModeRE = regexp.MustCompile(`^\s*((?:sk|rk|pk)_(?:test|live)_)`)
	// An ExternalSecret's name and its remoteRef keys in -o yaml.
	esNameRE   = regexp.MustCompile(`^  name:\s*(\S+)`)
	esRemoteRE = regexp.MustCompile(`^\s+key:\s*(\S+)`)
	// A secret manager's description of a secret.
	secretNameRE = regexp.MustCompile(`"Name":\s*"([^"]+)"`)
	secretDescRE = regexp.MustCompile(`"Description":\s*"([^"]+)"`)
	envTagRE     = regexp.MustCompile(`(?s)"Key":\s*"(?:env|environment|stage)",\s*"Value":\s*"([^"]+)"`)
)

func detectTestModeKey(ev *Gathered, _ []Finding) []Finding {
	mode := ""
	clients, names := refusedByPattern(ev, testModeRE, func(line string) {
		if m := findSubmatch(testModeRE, line); m != nil && mode == "" {
			mode = strings.ToLower(m[2])
		}
	})
	if len(names) == 0 {
		return nil
	}
	subject, c := names[0], clients[names[0]]
	f := c.workloadFinding(KindTestModeKey, subject)
	f.setFact("key_mode", mode)
	if m := findSubmatch(testModeRE, ReadableLine(c.line)); m != nil {
		f.setFact("refusal", m[0])
	}
	f.Evidence = append(f.Evidence, fmt.Sprintf("%s's calls are refused from %s (%d lines): %s", subject, ts(c.first), c.n, quote(ReadableLine(c.line), 240)))
	// What the commands show: the key's prefix, the ExternalSecret that
	// syncs it, the source it reads.
	for _, cmd := range ev.Commands {
		for _, l := range cmd.Lines {
			if m := findSubmatch(keyModeRE, l); m != nil && f.fact("key_prefix") == "" {
				f.setFact("key_prefix", m[1])
				f.Evidence = append(f.Evidence, fmt.Sprintf("the key %s runs with begins %s (%s)", subject, m[1], strings.TrimSpace(cmd.Command)))
			}
		}
		text := strings.Join(cmd.Lines, "\n")
		if !strings.Contains(text, "kind: ExternalSecret") || f.fact("secret") != "" {
			continue
		}
		name := ""
		var keys []string
		inMeta := false
		for _, l := range cmd.Lines {
			switch {
			case strings.HasPrefix(l, "metadata:"):
				inMeta = true
			case inMeta && !strings.HasPrefix(l, " "):
				inMeta = false
			}
			if m := findSubmatch(esNameRE, l); m != nil && inMeta && name == "" {
				name = m[1]
			}
			if m := findSubmatch(esRemoteRE, l); m != nil && !inMeta && !containsString(keys, m[1]) {
				keys = append(keys, m[1])
			}
		}
		if name == "" || len(keys) == 0 {
			continue
		}
		f.setFact("secret", name)
		f.setFact("remote_key", strings.Join(keys, ", "))
		f.Evidence = append(f.Evidence, fmt.Sprintf("ExternalSecret %s syncs the key from %s", name, strings.Join(keys, ", ")))
	}
	// An ExternalSecret read as an object: the one of the client's
	// namespace, when it has one.
	if f.fact("secret") == "" {
		var es []string
		for _, o := range ev.K8s.Custom {
			if o.Kind == "ExternalSecret" && o.Namespace == c.ns {
				es = append(es, o.Name)
			}
		}
		if len(es) == 1 {
			f.setFact("secret", es[0])
		}
	}
	// The source's own description (a secret manager's describe-secret):
	// of the source the ExternalSecret reads, or one a change names.
	named := func(name string) bool {
		if rk := f.fact("remote_key"); rk != "" {
			return strings.Contains(rk, name)
		}
		for _, ch := range ev.Changes {
			if containsToken(ch.Description, name) {
				return true
			}
		}
		return false
	}
	{
		for _, cmd := range ev.Commands {
			text := strings.Join(cmd.Lines, "\n")
			m := findSubmatch(secretNameRE, text)
			if m == nil || !named(m[1]) {
				continue
			}
			rk := m[1]
			f.setFact("source", rk)
			var about []string
			if m := findSubmatch(secretDescRE, text); m != nil {
				about = append(about, quote(m[1], 120))
			}
			if m := findSubmatch(envTagRE, text); m != nil {
				about = append(about, "tagged env "+m[1])
			}
			if len(about) > 0 {
				f.setFact("source_about", strings.Join(about, ", "))
				f.Evidence = append(f.Evidence, fmt.Sprintf("the source %s: %s", rk, strings.Join(about, ", ")))
			}
		}
	}
	f.Summary = fmt.Sprintf("%s: the payment provider refuses its calls, a %s-mode key is used against %s objects", subject, orWord(mode, "test"), otherMode(orWord(mode, "test")))
	return []Finding{f}
}

func otherMode(m string) string {
	if m == "live" {
		return "test"
	}
	return "live"
}

func containsString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func describeTestModeKey(h *Hypothesis, sc Scope) string {
	mode := orWord(h.fact("key_mode"), "test")
	d := fmt.Sprintf("%s calls the payment provider with a %s mode key", h.Subject, mode)
	if mode == "test" {
		d += " in production"
	}
	if p := h.fact("key_prefix"); p != "" {
		d += fmt.Sprintf(" (its key begins %s)", p)
	}
	d += fmt.Sprintf(": the provider refuses every call on %s objects from %s (%s)", otherMode(mode), h.fact("refused_from"), quote(orWord(h.fact("refusal"), ReadableLine(h.fact("line"))), 160))
	if s := h.fact("secret"); s != "" {
		d += fmt.Sprintf("; the key comes from the ExternalSecret %s", s)
		if rk := h.fact("remote_key"); rk != "" {
			d += ", which syncs it from " + rk
			if a := h.fact("source_about"); a != "" {
				d += " (" + a + ")"
			}
		}
	}
	if s := h.fact("source"); s != "" && h.fact("remote_key") == "" {
		d += fmt.Sprintf("; the source %s is %s", s, h.fact("source_about"))
	}
	d += ". The code did not change: the key it reads did, so rolling back a release does not help"
	return d
}
