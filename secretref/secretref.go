// Package secretref parses and resolves secret references (contract section
// 3): env:NAME, file:/path and vault:<mount>/<path>#<key> (HashiCorp Vault
// KV v2 over its HTTP API). Configuration stores references, never values;
// values are resolved only at the moment of use and never stored or logged.
package secretref

import (
	"context"
	"errors"
	"strings"
)

// Kinds of reference.
const (
	KindEnv   = "env"
	KindFile  = "file"
	KindVault = "vault"
)

// Ref is a parsed reference.
type Ref struct {
	Kind  string // env, file, vault
	Name  string // env: variable name
	Path  string // file: absolute path; vault: mount/path
	Mount string // vault: the KV v2 mount (first path element)
	Key   string // vault: the key inside the secret
}

// Resolver turns a reference string into the secret value.
type Resolver interface {
	Resolve(ctx context.Context, ref string) (string, error)
}

// Parse parses s as a reference. It returns an error that says what a
// reference looks like when s is not one (for example a plain secret value).
// The error never quotes s: a mistyped reference may be a pasted secret.
func Parse(s string) (Ref, error) {
	kind, rest, ok := strings.Cut(s, ":")
	if !ok {
		return Ref{}, errNotRef
	}
	switch kind {
	case KindEnv:
		if !validEnvName(rest) {
			return Ref{}, errors.New("env reference: variable name must match [A-Za-z_][A-Za-z0-9_]*")
		}
		return Ref{Kind: KindEnv, Name: rest}, nil
	case KindFile:
		if !strings.HasPrefix(rest, "/") || strings.Contains(rest, "\x00") {
			return Ref{}, errors.New("file reference: path must be absolute")
		}
		return Ref{Kind: KindFile, Path: rest}, nil
	case KindVault:
		path, key, ok := strings.Cut(rest, "#")
		mount, sub, ok2 := strings.Cut(path, "/")
		if !ok || !ok2 || key == "" || mount == "" || sub == "" || strings.Contains(path, "..") {
			return Ref{}, errors.New("vault reference: want vault:<mount>/<path>#<key>")
		}
		return Ref{Kind: KindVault, Path: path, Mount: mount, Key: key}, nil
	default:
		return Ref{}, errNotRef
	}
}

// IsRef reports whether s parses as a reference.
func IsRef(s string) bool { _, err := Parse(s); return err == nil }

// LocalOnly reports whether ref reads the server's own files or environment
// (env: and file:), which only admins may configure.
func (r Ref) LocalOnly() bool { return r.Kind == KindEnv || r.Kind == KindFile }

var errNotRef = errors.New("must be a secret reference (env:NAME, file:/path or vault:<mount>/<path>#<key>), not a plain value")

func validEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		switch {
		case c == '_', c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
