package secretref

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// MaxFileSize is the largest secret file a file: reference may name. Secrets
// are short; a bound keeps a mistaken reference to a large file (a log, a
// device) from being read into memory.
const MaxFileSize = 64 << 10

// Sentinel errors, wrapped with the reference's kind and location (never its
// value) by Resolve. Test with errors.Is.
var (
	// ErrNotFound is returned when the variable, file or Vault secret does
	// not exist.
	ErrNotFound = errors.New("secret not found")
	// ErrPermissionDenied is returned when the file cannot be read or Vault
	// refuses the token.
	ErrPermissionDenied = errors.New("permission denied")
	// ErrKeyMissing is returned when a Vault secret exists but has no such key.
	ErrKeyMissing = errors.New("key missing in secret")
	// ErrEmpty is returned when the resolved value is empty.
	ErrEmpty = errors.New("secret is empty")
	// ErrTooLarge is returned when a secret file exceeds MaxFileSize.
	ErrTooLarge = errors.New("secret file too large")
	// ErrUnreachable is returned when Vault cannot be reached or answers
	// with an unexpected status.
	ErrUnreachable = errors.New("vault unreachable")
	// ErrNotConfigured is returned for a vault: reference when no Vault
	// address is configured.
	ErrNotConfigured = errors.New("vault is not configured")
)

// ResolverOptions configures NewResolver. Zero values select the process's
// own environment and file system and no Vault.
type ResolverOptions struct {
	// LookupEnv reads an environment variable; nil means os.LookupEnv.
	LookupEnv func(name string) (string, bool)
	// ReadFile reads a secret file; nil means a bounded read from the OS.
	// Whatever it returns is still held to MaxFileSize.
	ReadFile func(path string) ([]byte, error)
	// Vault configures vault: references.
	Vault VaultOptions
	// CacheTTL, when positive, caches Vault secrets (per mount and path) for
	// that long, so one investigation does not fetch the same secret for each
	// tool call. env: and file: are read every time, so rotation on disk is
	// seen at once.
	CacheTTL time.Duration
	// Now is the clock for the cache; nil means time.Now.
	Now func() time.Time
}

// NewResolver returns a Resolver for env:, file: and vault: references. It is
// safe for concurrent use.
func NewResolver(opts ResolverOptions) Resolver {
	r := &resolver{opts: opts, cache: map[string]cacheEntry{}}
	if r.opts.LookupEnv == nil {
		r.opts.LookupEnv = os.LookupEnv
	}
	if r.opts.ReadFile == nil {
		r.opts.ReadFile = readFileBounded
	}
	if r.opts.Now == nil {
		r.opts.Now = time.Now
	}
	r.vault = newVaultClient(opts.Vault)
	return r
}

type resolver struct {
	opts  ResolverOptions
	vault *vaultClient

	mu    sync.Mutex
	cache map[string]cacheEntry // mount/path → secret data
}

type cacheEntry struct {
	data    map[string]any
	expires time.Time
}

var _ Resolver = (*resolver)(nil)

// Resolve returns the secret value that ref points at. Errors name the
// reference's kind and location and wrap one of the sentinel errors; they
// never contain the value.
func (r *resolver) Resolve(ctx context.Context, ref string) (string, error) {
	p, err := Parse(ref)
	if err != nil {
		return "", err
	}
	switch p.Kind {
	case KindEnv, KindFile:
		return r.resolveLocal(p)
	case KindVault:
		return r.resolveVault(ctx, p)
	}
	return "", fmt.Errorf("unsupported reference kind %q", p.Kind)
}

func (r *resolver) resolveLocal(p Ref) (string, error) {
	switch p.Kind {
	case KindEnv:
		v, ok := r.opts.LookupEnv(p.Name)
		if !ok {
			return "", fmt.Errorf("resolving env:%s: %w", p.Name, ErrNotFound)
		}
		if v == "" {
			return "", fmt.Errorf("resolving env:%s: %w", p.Name, ErrEmpty)
		}
		return v, nil
	case KindFile:
		b, err := r.opts.ReadFile(p.Path)
		switch {
		case errors.Is(err, os.ErrNotExist):
			return "", fmt.Errorf("resolving file:%s: %w", p.Path, ErrNotFound)
		case errors.Is(err, os.ErrPermission):
			return "", fmt.Errorf("resolving file:%s: %w", p.Path, ErrPermissionDenied)
		case errors.Is(err, ErrTooLarge):
			return "", fmt.Errorf("resolving file:%s: %w (limit %d bytes)", p.Path, ErrTooLarge, MaxFileSize)
		case err != nil:
			return "", fmt.Errorf("resolving file:%s: %w", p.Path, err)
		}
		if len(b) > MaxFileSize {
			return "", fmt.Errorf("resolving file:%s: %w (limit %d bytes)", p.Path, ErrTooLarge, MaxFileSize)
		}
		v := trimNewline(string(b))
		if v == "" {
			return "", fmt.Errorf("resolving file:%s: %w", p.Path, ErrEmpty)
		}
		return v, nil
	}
	return "", fmt.Errorf("reference kind %q is not local", p.Kind)
}

func (r *resolver) resolveVault(ctx context.Context, p Ref) (string, error) {
	where := "vault:" + p.Path + "#" + p.Key
	if r.vault == nil {
		return "", fmt.Errorf("resolving %s: %w", where, ErrNotConfigured)
	}
	data, err := r.vaultData(ctx, p)
	if err != nil {
		return "", fmt.Errorf("resolving %s: %w", where, err)
	}
	raw, ok := data[p.Key]
	if !ok || raw == nil {
		return "", fmt.Errorf("resolving %s: %w", where, ErrKeyMissing)
	}
	var v string
	switch x := raw.(type) {
	case string:
		v = x
	case bool, float64:
		v = fmt.Sprint(x)
	default:
		return "", fmt.Errorf("resolving %s: value of key is not a string", where)
	}
	if v == "" {
		return "", fmt.Errorf("resolving %s: %w", where, ErrEmpty)
	}
	return v, nil
}

func (r *resolver) vaultData(ctx context.Context, p Ref) (map[string]any, error) {
	if r.opts.CacheTTL > 0 {
		r.mu.Lock()
		e, ok := r.cache[p.Path]
		r.mu.Unlock()
		if ok && r.opts.Now().Before(e.expires) {
			return e.data, nil
		}
	}
	token, err := r.vaultToken()
	if err != nil {
		return nil, err
	}
	data, err := r.vault.read(ctx, token, p.Mount, strings.TrimPrefix(p.Path, p.Mount+"/"))
	if err != nil {
		return nil, err
	}
	if r.opts.CacheTTL > 0 {
		r.mu.Lock()
		r.cache[p.Path] = cacheEntry{data: data, expires: r.opts.Now().Add(r.opts.CacheTTL)}
		r.mu.Unlock()
	}
	return data, nil
}

// vaultToken resolves the Vault token reference each time, so a token
// renewed on disk by an agent (vault agent's sink file) is picked up.
func (r *resolver) vaultToken() (string, error) {
	t := r.opts.Vault.Token
	if t == "" {
		return "", fmt.Errorf("vault token reference: %w", ErrNotConfigured)
	}
	p, err := Parse(t)
	if err != nil {
		return "", fmt.Errorf("vault token reference: %w", err)
	}
	if !p.LocalOnly() {
		return "", errors.New("vault token reference must be env: or file:")
	}
	v, err := r.resolveLocal(p)
	if err != nil {
		return "", fmt.Errorf("vault token: %w", err)
	}
	return v, nil
}

// trimNewline removes one trailing "\n" or "\r\n", as editors and
// `echo secret > file` add one.
func trimNewline(s string) string {
	if strings.HasSuffix(s, "\r\n") {
		return s[:len(s)-2]
	}
	return strings.TrimSuffix(s, "\n")
}

func readFileBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxFileSize {
		return nil, ErrTooLarge
	}
	return b, nil
}
