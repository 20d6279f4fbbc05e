package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Sessions signed with one secret key and read with another: web
// frameworks sign (or encrypt) the session cookie or the session's stored
// data with the application's secret key (Django's SECRET_KEY, Flask's
// SECRET_KEY, Rails' secret_key_base, Laravel's APP_KEY, ASP.NET's data
// protection key ring, gorilla/securecookie's hash key). When two versions
// of an app run side by side (a canary, a rollout in progress, blue and
// green) with different keys, or the key changes under a running app, a
// session written by one is refused by the other: Django logs
// "SuspiciousSession: Session data corrupted", itsdangerous "BadSignature:
// Signature ... does not match", Rails "MessageVerifier::InvalidSignature",
// Laravel "The MAC is invalid", ASP.NET "The key {...} was not found in
// the key ring". The user is sent to the login page, apparently at random
// (whenever the load balancer picks the other version). The session store
// is not losing anything; the key must be the same everywhere.

// KindSessionKeyMismatch is a session signed with a key the reader does
// not have.
const KindSessionKeyMismatch Kind = "session_key_mismatch"

var (
	// sessionKeyRE is a framework refusing a session it cannot verify or
	// decrypt.
	sessionKeyRE = regexp.MustCompile(`(?i)SuspiciousSession:? Session data corrupted|\bSession data corrupted\b|itsdangerous\.exc\.BadSignature|\bBadSignature: Signature\b.{0,40}does not match|MessageVerifier::InvalidSignature|MessageEncryptor::InvalidMessage|\bThe MAC is invalid\b|was not found in the key ring|Error unprotecting the session cookie|securecookie: the value is not valid`)
	// sessionKeyCmdRE is a command comparing the secret key of two
	// secrets or pods (a hash of it, never the key).
	sessionKeyCmdRE = regexp.MustCompile(`(?i)SECRET_KEY(?:_BASE)?\b|\bAPP_KEY\b|secret_key_base|signing[_-]?key|session[_-]?(?:secret|key)`)
	// sessionKeyHashRE is a line of that comparison: a name and a hash.
	sessionKeyHashRE = regexp.MustCompile(`^\s*(\S+)[\s:]+([0-9a-f]{8,64})\b`)
	// sessionKeyChangeRE is a change that can give an app another key:
	// its secret, its env, a release of a new version beside the old.
	sessionKeyChangeRE = regexp.MustCompile(`(?i)secret|\bkey\b|\benv(?:from)?\b|envfrom|credential|vault|canary|blue.?green`)
	// podHashRE strips a pod's own suffix, leaving its ReplicaSet.
	podHashRE = regexp.MustCompile(`^(.+-[a-z0-9]{6,10})-[a-z0-9]{5}$`)
)

var sessionKeyMismatch = &mechanism{
	kind:       KindSessionKeyMismatch,
	class:      classCause,
	label:      "sessions signed with one secret key and read with another",
	detect:     detectSessionKeyMismatch,
	fitsChange: changeSays(sessionKeyChangeRE),
	related: func(h *Hypothesis, f *Finding) bool {
		return strings.EqualFold(f.Subject, h.Subject) && (f.Kind == KindLogErrors || f.Kind == KindErrorRate || f.Kind == KindAuth)
	},
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("%s cannot read its own users' sessions: the session is signed with the application's secret key, and ", h.Subject)
		if v := h.fact("versions"); v != "" {
			d += fmt.Sprintf("the versions running side by side (%s) sign with different secret keys, so a session written by one is refused by the other", v)
		} else {
			d += "the secret key that signed the sessions is not the one reading them"
		}
		d += h.quoteClause(" — ", "line", 160)
		if n := h.fact("count"); n != "" {
			d += fmt.Sprintf(" (%s times from %s)", n, h.fact("since"))
		}
		if k := h.fact("keys"); k != "" {
			d += "; the secrets' keys differ: " + k
		}
		d += ". Each refused session sends the user back to the login page whenever the load balancer picks the other version; the session store is not losing sessions"
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Give every version of %s the same secret key (point the new version's secret back at the production key), or abort the release that runs with another key; sessions signed since then stay invalid", h.Subject)
		r.med("Rotate a session signing key with a fallback list (Django SECRET_KEY_FALLBACKS, Rails rotations, a shared data-protection key ring) so the old key still verifies while the new one signs")
		r.low("Alert on session signature failures (SuspiciousSession, BadSignature, InvalidSignature) in %s's log", h.Subject)
	},
}

// detectSessionKeyMismatch reads session signature failures in a
// workload's logs, the ReplicaSets (versions) that log them, and a
// comparison of the secrets' keys handed over.
func detectSessionKeyMismatch(ev *Gathered, _ []Finding) []Finding {
	type acc struct {
		ns, line string
		first    time.Time
		n        int
		rs       []string
	}
	by := map[string]*acc{}
	var order []string
	for i := range ev.Logs {
		set := &ev.Logs[i]
		if set.Subject == "" || set.Host {
			continue
		}
		for _, t := range set.Templates {
			l := templateLine(t, sessionKeyRE)
			if l == "" {
				continue
			}
			a := by[set.Subject]
			if a == nil {
				a = &acc{ns: set.Namespace, line: strings.TrimSpace(l)}
				by[set.Subject] = a
				order = append(order, set.Subject)
			}
			a.n += t.Count
			if at := earliest(t.FirstSeen, t.FirstIncident); !at.IsZero() && (a.first.IsZero() || at.Before(a.first)) {
				a.first = at
			}
			for _, s := range append([]string{set.Source}, t.Sources...) {
				if m := findSubmatch(podHashRE, s); m != nil && !slices.Contains(a.rs, m[1]) {
					a.rs = append(a.rs, m[1])
				}
			}
		}
	}
	// A comparison of the keys: two names with different hashes.
	var keys []string
	for _, c := range ev.Commands {
		if !matchLine(sessionKeyCmdRE, c.Command) {
			continue
		}
		seen := map[string]string{}
		var ks []string
		for _, l := range c.Lines {
			if m := findSubmatch(sessionKeyHashRE, l); m != nil {
				seen[m[2]] = m[1]
				ks = append(ks, m[1]+" "+m[2])
			}
		}
		if len(seen) > 1 {
			keys = ks
		}
	}
	var out []Finding
	for _, s := range order {
		a := by[s]
		slices.Sort(a.rs)
		// One failure is a tampered cookie; the cause shows in many, or
		// in several versions, or in keys seen to differ.
		if a.n < 5 && len(a.rs) < 2 && keys == nil {
			continue
		}
		f := Finding{Kind: KindSessionKeyMismatch, Subject: s, Namespace: a.ns, Object: "sessions of " + s, Time: a.first,
			Severity: SevCritical, Weight: 0.88, Source: SrcLogs}
		f.setFact("line", a.line)
		f.setFact("count", fmt.Sprint(a.n))
		f.setFact("since", ts(a.first))
		if len(a.rs) > 1 {
			f.setFact("versions", strings.Join(a.rs, " and "))
		}
		if keys != nil {
			f.setFact("keys", strings.Join(keys, " vs "))
		}
		ev := fmt.Sprintf("%s logs %d session signature failures", s, a.n)
		if len(a.rs) > 1 {
			ev += " in both versions (" + strings.Join(a.rs, ", ") + ")"
		}
		f.Evidence = append(f.Evidence, ev+": "+quote(ReadableLine(a.line), 200))
		if keys != nil {
			f.Evidence = append(f.Evidence, "the secret keys differ between the secrets: "+strings.Join(keys, " vs "))
		}
		f.Summary = fmt.Sprintf("%s: sessions refused, signed with another secret key", s)
		out = append(out, f)
	}
	return out
}
