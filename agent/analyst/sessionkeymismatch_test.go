package analyst

import (
	"testing"

	"github.com/rootcause/rootcause/agent/evidence"
)

// Session signature failures as Django, Flask (itsdangerous), Rails and
// Laravel log them, in the pods of two versions of one app; a comparison
// of the secrets' key hashes; a single tampered cookie is not the cause.
func TestDetectSessionKeyMismatch(t *testing.T) {
	rep := func(l string, n int) []string {
		var out []string
		for range n {
			out = append(out, l)
		}
		return out
	}
	keys := evidence.CommandOutput{Command: `for s in web-env web-env-v2; do kubectl get secret $s -o jsonpath='{.data.SECRET_KEY}' | base64 -d | sha256sum | cut -c1-12; done`,
		Lines: []string{"web-env 3f0a9c1e77b2", "web-env-v2 c84d21e9a05f"}}
	cases := []struct {
		name     string
		sets     []LogSet
		cmds     []evidence.CommandOutput
		subject  string
		versions string
	}{
		{"Django in the canary and the stable pods", []LogSet{
			minedSetSource("web", "web-7b9c6d5f84-4nqzp", rep(`[2026-11-23 12:00:01,324] WARNING django.security.SuspiciousSession: Session data corrupted`, 3)),
			minedSetSource("web", "web-65f8d7c9b6-mx7vb", rep(`[2026-11-23 12:00:02,324] WARNING django.security.SuspiciousSession: Session data corrupted`, 3)),
		}, []evidence.CommandOutput{keys}, "web", "web-65f8d7c9b6 and web-7b9c6d5f84"},
		{"Flask itsdangerous", []LogSet{
			minedSetSource("portal", "portal", rep(`ERROR in app: itsdangerous.exc.BadSignature: Signature b'x1Yk' does not match`, 6)),
		}, nil, "portal", ""},
		{"Rails", []LogSet{
			minedSetSource("store", "store", rep(`F, [2026-11-23T12:00:01.1 #1] FATAL -- : ActiveSupport::MessageVerifier::InvalidSignature (ActiveSupport::MessageVerifier::InvalidSignature)`, 5)),
		}, nil, "store", ""},
		{"Laravel", []LogSet{
			minedSetSource("shop", "shop", rep(`[2026-11-23 12:00:01] production.ERROR: The MAC is invalid. {"exception":"[object] (Illuminate\\Contracts\\Encryption\\DecryptException(code: 0): The MAC is invalid.`, 5)),
		}, nil, "shop", ""},
		{"one tampered cookie", []LogSet{
			minedSetSource("web", "web", []string{`WARNING django.security.SuspiciousSession: Session data corrupted`}),
		}, nil, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Logs: c.sets, Commands: c.cmds, Window: win}
			f := onlyFinding(t, detectSessionKeyMismatch(ev, nil), c.subject)
			if f == nil {
				return
			}
			if f.fact("versions") != c.versions {
				t.Errorf("versions %q, want %q", f.fact("versions"), c.versions)
			}
			h := &Hypothesis{Kind: KindSessionKeyMismatch, Subject: f.Subject, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, "secret key", "session")
			if c.cmds != nil {
				wantDescribed(t, h, Scope{}, "3f0a9c1e77b2")
			}
			if recs := recommend(h, Scope{}); len(recs) < 2 {
				t.Errorf("recommendations %v", recs)
			}
			ch := &Finding{Kind: KindDeploy, Subject: f.Subject, Summary: "deploy: 2.0.0 canary, envFrom web-env-v2"}
			if !sessionKeyMismatch.fitsChange(h, ch) {
				t.Errorf("a canary with a new secret not taken for the change")
			}
		})
	}
}

// minedSetSource is a log set of subject read from source.
func minedSetSource(subject, source string, lines []string) LogSet {
	s := minedSet(subject, false, 0, lines...)
	s.Source = source
	return s
}
