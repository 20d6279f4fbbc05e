package secretref

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// ErrOutOfScope is returned for a reference a node may not resolve: a vault:
// reference written at the node's own level outside the Vault path prefixes
// admins granted it (secret_scopes), or a secret an admin set that would be
// sent to an address written at the node's own level.
var ErrOutOfScope = errors.New("outside the secret scopes granted to this node")

// Scope says for which node references are resolved. Admins grant Vault
// path prefixes to a node and its ancestors (the secret_scopes setting);
// a team's own vault: references resolve only under them. References
// written at ancestor levels (which only admins write) resolve as they
// are, except that they are never handed to an integration whose address
// the team chose.
type Scope struct {
	// Node is the team's name (for messages).
	Node string
	// Prefixes are the granted Vault paths without "vault:", each ending
	// in "/" ("secret/teams/payments/"), {team} already expanded.
	Prefixes []string
	// Own are the vault: references written in the node's own config. The
	// same reference also written by an ancestor still counts as the
	// node's: copying an admin's reference grants nothing.
	Own map[string]bool
}

// ScopePrefixes turns secret_scopes entries ("vault:secret/teams/{team}/")
// into prefixes for team: {team} expanded, "vault:" removed, a trailing "/"
// added. Entries that are not vault: prefixes are errors naming them.
func ScopePrefixes(entries []string, team string) ([]string, error) {
	var out []string
	for _, e := range entries {
		p, ok := strings.CutPrefix(e, KindVault+":")
		if !ok {
			return nil, fmt.Errorf("secret_scopes: %q must start with vault:", e)
		}
		p = strings.ReplaceAll(p, "{team}", team)
		if !strings.HasSuffix(p, "/") {
			p += "/"
		}
		if !cleanVaultPath(strings.TrimSuffix(p, "/")) {
			return nil, fmt.Errorf("secret_scopes: %q is not a clean Vault path", e)
		}
		out = append(out, p)
	}
	return out, nil
}

// cleanVaultPath reports whether a Vault path has no empty, "." or ".."
// segment and no escape or separator a server could normalise into
// another path.
func cleanVaultPath(p string) bool {
	if p == "" || strings.ContainsAny(p, "%\\?#\x00") {
		return false
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

// Within reports whether ref is a vault: reference under one of the
// scope's prefixes.
func (s *Scope) Within(ref string) bool {
	p, err := Parse(ref)
	if err != nil || p.Kind != KindVault || !cleanVaultPath(p.Path) {
		return false
	}
	for _, pre := range s.Prefixes {
		if strings.HasPrefix(p.Path+"/", pre) && len(p.Path) >= len(pre) {
			return true
		}
	}
	return false
}

// Resolver returns base restricted to what the node may resolve for one
// integration. teamAddress says whether that integration's destination is
// written at the node's own level: then only references within the scopes
// resolve, so no secret an admin set is sent to an address the team chose.
// Otherwise the node's own vault: references resolve within the scopes and
// references inherited from ancestors resolve as they are. A nil scope
// returns base unchanged (the offline commands, run by the server's
// operator).
func (s *Scope) Resolver(base Resolver, teamAddress bool) Resolver {
	if s == nil || base == nil {
		return base
	}
	return scoped{s: s, base: base, teamAddress: teamAddress}
}

type scoped struct {
	s           *Scope
	base        Resolver
	teamAddress bool
}

func (r scoped) Resolve(ctx context.Context, ref string) (string, error) {
	p, err := Parse(ref)
	if err != nil {
		return "", err
	}
	if r.s.Within(ref) {
		return r.base.Resolve(ctx, ref)
	}
	if r.teamAddress {
		return "", fmt.Errorf("resolving a %s: reference for %s: %w (a secret not granted to the team is never sent to an address set at the team's level)", p.Kind, r.s.Node, ErrOutOfScope)
	}
	if p.Kind == KindVault && r.s.Own[ref] {
		return "", fmt.Errorf("resolving vault:%s for %s: %w", p.Path, r.s.Node, ErrOutOfScope)
	}
	return r.base.Resolve(ctx, ref)
}

// VaultRefs returns every vault: reference among the string values of v
// (objects and arrays walked), for Scope.Own.
func VaultRefs(v any, into map[string]bool) {
	switch x := v.(type) {
	case string:
		if p, err := Parse(x); err == nil && p.Kind == KindVault {
			into[x] = true
		}
	case map[string]any:
		for _, e := range x {
			VaultRefs(e, into)
		}
	case []any:
		for _, e := range x {
			VaultRefs(e, into)
		}
	}
}

// ScopeFor is the scope of team given the own config documents of its
// lineage, org root first and the team last: the union of the
// secret_scopes granted at every level, and the vault: references of the
// team's own document.
func ScopeFor(team string, lineage []map[string]any) (*Scope, error) {
	sc := &Scope{Node: team, Own: map[string]bool{}}
	for _, doc := range lineage {
		var entries []string
		list, _ := doc["secret_scopes"].([]any)
		for _, e := range list {
			if s, ok := e.(string); ok {
				entries = append(entries, s)
			}
		}
		p, err := ScopePrefixes(entries, team)
		if err != nil {
			return nil, err
		}
		sc.Prefixes = append(sc.Prefixes, p...)
	}
	if len(lineage) > 0 {
		VaultRefs(lineage[len(lineage)-1], sc.Own)
	}
	return sc, nil
}
