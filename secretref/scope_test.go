package secretref

import (
	"context"
	"errors"
	"testing"
)

type fixed map[string]string

func (f fixed) Resolve(_ context.Context, ref string) (string, error) {
	if v, ok := f[ref]; ok {
		return v, nil
	}
	return "", ErrNotFound
}

func TestScopePrefixes(t *testing.T) {
	got, err := ScopePrefixes([]string{"vault:secret/teams/{team}/", "vault:kv/shared/payments"}, "payments")
	if err != nil || len(got) != 2 || got[0] != "secret/teams/payments/" || got[1] != "kv/shared/payments/" {
		t.Fatalf("prefixes %q, %v", got, err)
	}
	for _, bad := range []string{"secret/teams/", "env:X", "vault:secret/../teams/", "vault:secret//x/", "vault:secret/%2e%2e/"} {
		if _, err := ScopePrefixes([]string{bad}, "a"); err == nil {
			t.Errorf("ScopePrefixes(%q) accepted", bad)
		}
	}
}

func TestScopeWithin(t *testing.T) {
	s := &Scope{Node: "a", Prefixes: []string{"secret/teams/a/"}}
	for ref, want := range map[string]bool{
		"vault:secret/teams/a/prom#token":    true,
		"vault:secret/teams/a/x/y#k":         true,
		"vault:secret/teams/ab/prom#token":   false, // a sibling sharing a prefix of the name
		"vault:secret/teams/b/slack#token":   false,
		"vault:secret/teams/a/./../b/x#k":    false,
		"vault:secret/teams/a//x#k":          false,
		"vault:secret/teams/a/%2e%2e/b/x#k":  false,
		"env:SECRET":                         false,
		"file:/etc/secret":                   false,
		"vault:secret/teams/a#token":         false, // the prefix itself is a folder, not a secret
		"vault:other/secret/teams/a/prom#tk": false,
	} {
		if got := s.Within(ref); got != want {
			t.Errorf("Within(%s) = %v, want %v", ref, got, want)
		}
	}
}

// The resolver of a node: its own vault references only within its scope;
// inherited ones as they are, except for an integration whose address the
// team wrote.
func TestScopeResolver(t *testing.T) {
	base := fixed{"vault:secret/teams/a/p#k": "a-secret", "vault:secret/teams/b/p#k": "b-secret", "env:ORG": "org-secret", "vault:secret/org/p#k": "org-vault"}
	s := &Scope{Node: "a", Prefixes: []string{"secret/teams/a/"}, Own: map[string]bool{"vault:secret/teams/b/p#k": true, "vault:secret/teams/a/p#k": true}}
	cases := []struct {
		ref         string
		teamAddress bool
		want        string // "" for ErrOutOfScope
	}{
		{"vault:secret/teams/a/p#k", false, "a-secret"},
		{"vault:secret/teams/a/p#k", true, "a-secret"},
		{"vault:secret/teams/b/p#k", false, ""},
		{"vault:secret/teams/b/p#k", true, ""},
		{"env:ORG", false, "org-secret"},
		{"env:ORG", true, ""},
		{"vault:secret/org/p#k", false, "org-vault"},
		{"vault:secret/org/p#k", true, ""},
	}
	for _, c := range cases {
		v, err := s.Resolver(base, c.teamAddress).Resolve(context.Background(), c.ref)
		if c.want == "" {
			if !errors.Is(err, ErrOutOfScope) || v != "" {
				t.Errorf("%s (team address %v) = %q, %v; want out of scope", c.ref, c.teamAddress, v, err)
			}
			continue
		}
		if err != nil || v != c.want {
			t.Errorf("%s (team address %v) = %q, %v", c.ref, c.teamAddress, v, err)
		}
	}
	var none *Scope
	if v, _ := none.Resolver(base, true).Resolve(context.Background(), "env:ORG"); v != "org-secret" {
		t.Error("a nil scope must resolve as the base does")
	}
}
