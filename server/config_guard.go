package server

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rootcause/rootcause/agent/evidence/bundle"
	"github.com/rootcause/rootcause/db"
	"github.com/rootcause/rootcause/mergeconf"
	"github.com/rootcause/rootcause/outbound"
	"github.com/rootcause/rootcause/secretref"
)

// The checks of a config write that protect the server and other teams
// (contract section 3), run inside the write transaction after the schema
// checks. Each judges only what the write changes: a value saved earlier
// and left alone is checked again where it is used.

// outboundGuard is the guard of team-settable addresses: Config.Outbound,
// or one built from WebhookAllow.
func (s *Server) outboundGuard() *outbound.Guard {
	if s.cfg.Outbound != nil {
		return s.cfg.Outbound
	}
	return outbound.New(s.cfg.WebhookAllow)
}

// guardChecks runs the outbound-address, secret-scope and evidence-bundle
// checks on the change from own to newOwn of node cp.node.
func (s *Server) guardChecks(cp checkParams, lineage []map[string]any, own, newOwn map[string]any) error {
	type change struct {
		keys []string
		new  any
	}
	var changes []change
	mergeconf.WalkChanges(own, newOwn, func(keys []string, c mergeconf.Change) {
		if c.New != nil {
			changes = append(changes, change{keys, c.New})
		}
	})
	slices.SortFunc(changes, func(a, b change) int {
		return strings.Compare(mergeconf.JoinPath(a.keys...), mergeconf.JoinPath(b.keys...))
	})
	var scope *secretref.Scope
	if cp.level == mergeconf.LevelTeam {
		after := append(append([]map[string]any{}, lineage[:len(lineage)-1]...), newOwn)
		sc, err := scopeOf(cp.node, after)
		if err != nil {
			return err
		}
		scope = sc
	}
	for _, ch := range changes {
		field := mergeconf.JoinPath(ch.keys...)
		if isAddressField(ch.keys) {
			if v, ok := ch.new.(string); ok && v != "" {
				var err error
				switch host, port, splitErr := net.SplitHostPort(v); {
				case strings.Contains(v, "://"):
					err = s.outboundGuard().CheckURL(v)
				case splitErr == nil && port != "":
					err = s.outboundGuard().CheckHost(host) // host:port
				default:
					err = s.outboundGuard().CheckHost(v)
				}
				if err != nil {
					return validationError(field, err.Error())
				}
			}
		}
		if scope != nil {
			for _, ref := range vaultRefsOf(ch.new) {
				if !scope.Within(ref) {
					return validationError(field, fmt.Sprintf("a vault: reference at a team's level must be under the Vault paths granted to team %s (secret_scopes); this one is not", cp.node))
				}
			}
		}
		if len(ch.keys) == 1 && ch.keys[0] == "evidence_bundle" {
			if p, ok := ch.new.(string); ok {
				if err := checkBundlePath(p); err != nil {
					return validationError(field, err.Error())
				}
			}
		}
	}
	return nil
}

// isAddressField reports whether a config path holds an outbound address a
// team may set: tools.<integration>...<url|domain|endpoint|...> that the
// schema does not reserve to admins. Admin-only addresses (tool servers,
// A2A peers, tools.cloudwatch.endpoint) are exempt by design.
func isAddressField(keys []string) bool {
	if len(keys) < 3 || keys[0] != "tools" || !slices.Contains(outbound.AddressKeys, keys[len(keys)-1]) {
		return false
	}
	return !mergeconf.AdminOnly(keys...)
}

func vaultRefsOf(v any) []string {
	m := map[string]bool{}
	secretref.VaultRefs(v, m)
	out := make([]string, 0, len(m))
	for r := range m {
		out = append(out, r)
	}
	slices.Sort(out)
	return out
}

// scopeOf is the secret scope of team given its lineage's own documents,
// root first.
func scopeOf(team string, lineage []map[string]any) (*secretref.Scope, error) {
	sc, err := secretref.ScopeFor(team, lineage)
	if err != nil {
		return nil, validationError("secret_scopes", err.Error())
	}
	return sc, nil
}

// bundleParts are the entries of which an incident bundle has at least one
// (docs/bundles.md).
var bundleParts = []string{"bundle.json", "kubernetes", "prometheus", "logs", "changes.json", "cloudwatch", "repos", "traces", "alerts.json"}

// systemRoots are directories that are never incident bundles: pseudo file
// systems whose contents describe the server itself.
var systemRoots = []string{"/proc", "/sys", "/dev", "/run"}

// checkBundlePath holds an evidence_bundle path to what a bundle is: an
// absolute, clean path to an existing directory outside the system's
// pseudo file systems (after symbolic links), holding at least one part of
// a bundle, that opens as one.
func checkBundlePath(p string) error {
	if !filepath.IsAbs(p) {
		return errors.New("must be an absolute path on the server")
	}
	if filepath.Clean(p) != p && filepath.Clean(p)+"/" != p {
		return errors.New("must be a clean path (no \".\", \"..\" or repeated separators)")
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return errors.New("does not exist or cannot be read by the server")
	}
	for _, root := range systemRoots {
		for _, q := range []string{p, real} {
			if q == root || strings.HasPrefix(q, root+"/") {
				return fmt.Errorf("must not be under %s", root)
			}
		}
	}
	st, err := os.Stat(real)
	if err != nil {
		return errors.New("does not exist or cannot be read by the server")
	}
	if !st.IsDir() {
		return errors.New("is not a directory")
	}
	found := false
	for _, part := range bundleParts {
		if _, err := os.Stat(filepath.Join(real, part)); err == nil {
			found = true
			break
		}
	}
	if !found {
		if m, _ := filepath.Glob(filepath.Join(real, "*.txt")); len(m) > 0 {
			found = true
		}
	}
	if !found {
		return fmt.Errorf("is not an incident bundle: it has none of %s (docs/bundles.md)", strings.Join(bundleParts, ", "))
	}
	if _, err := bundle.OpenDir(real); err != nil {
		return fmt.Errorf("does not open as an incident bundle: %s", strings.TrimPrefix(err.Error(), "bundle "+real+": "))
	}
	return nil
}

// validationError is the 400 validation_error naming field.
func validationError(field, msg string) error {
	return &db.Error{Code: db.EVALIDATION, Field: field, Message: field + ": " + msg,
		Details: map[string]any{"field": field, "error": msg}}
}
