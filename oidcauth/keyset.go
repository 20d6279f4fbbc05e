package oidcauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// maxJWKSBody bounds the JWKS document read from the provider.
const maxJWKSBody = 1 << 20

// errUnknownKey is returned when no cached key matches the token's key id
// and the refetch floor forbids asking the provider again.
var errUnknownKey = errors.New("no key of the provider's key set matches the token's key id")

// errBadSignature is returned when a key matched but the signature did not.
var errBadSignature = errors.New("signature does not verify")

// unavailableError marks a key-set failure caused by the provider (its JWKS
// endpoint unreachable or broken) while no usable key is cached.
type unavailableError struct{ err error }

func (e *unavailableError) Error() string { return e.err.Error() }
func (e *unavailableError) Unwrap() error { return e.err }

// KeySet is an oidc.KeySet over a provider's jwks_uri that cannot be made to
// hammer the provider. go-oidc's RemoteKeySet refetches the whole key set
// every time it sees a key id it does not know, so a client sending JWTs
// with random "kid" headers turns each request into a request to the
// identity provider. KeySet instead:
//
//   - verifies with the cached keys;
//   - refetches for an unknown key id (or a token without one) at most once
//     per MinRefresh, however many requests ask; concurrent askers share
//     one fetch;
//   - never refetches because a known key id failed to verify (a tampered
//     signature is not a rotation);
//   - refreshes keys older than MaxAge on the next use (also subject to the
//     floor), so a key the provider has withdrawn stops verifying; a failed
//     refresh keeps the cached keys.
//
// It is safe for concurrent use.
type KeySet struct {
	url        string
	hc         *http.Client
	algs       []jose.SignatureAlgorithm
	minRefresh time.Duration
	maxAge     time.Duration
	now        func() time.Time

	mu        sync.Mutex
	keys      []jose.JSONWebKey
	fetchedAt time.Time // last successful fetch
	triedAt   time.Time // last attempt, successful or not
	lastErr   error
	inflight  chan struct{} // closed when the running fetch ends

	fetches atomic.Int64
}

// NewKeySet returns a KeySet for the JWKS at url. algs are the accepted
// signature algorithms (never "none" or HMAC). minRefresh is the floor
// between fetches, maxAge the age after which keys are refreshed.
func NewKeySet(url string, hc *http.Client, algs []string, minRefresh, maxAge time.Duration, now func() time.Time) *KeySet {
	if now == nil {
		now = time.Now
	}
	ks := &KeySet{url: url, hc: hc, minRefresh: minRefresh, maxAge: maxAge, now: now}
	for _, a := range algs {
		ks.algs = append(ks.algs, jose.SignatureAlgorithm(a))
	}
	return ks
}

// Fetches returns how many times the key set was requested from the
// provider.
func (k *KeySet) Fetches() int64 { return k.fetches.Load() }

// VerifySignature implements oidc.KeySet: it returns the payload of jwt
// when a key of the provider's key set verifies its signature.
func (k *KeySet) VerifySignature(ctx context.Context, jwt string) ([]byte, error) {
	jws, err := jose.ParseSigned(jwt, k.algs)
	if err != nil {
		return nil, fmt.Errorf("malformed jwt: %w", err)
	}
	if len(jws.Signatures) != 1 {
		return nil, errors.New("a JWT must carry exactly one signature")
	}
	kid := jws.Signatures[0].Header.KeyID

	keys, stale := k.snapshot()
	payload, known, err := verifyWith(jws, keys, kid)
	if err == nil && !stale {
		return payload, nil
	}
	if err != nil && known {
		// The key id is one of the provider's: the signature is wrong.
		return nil, err
	}
	// Unknown key id, no keys yet, or keys due for a refresh.
	fresh, ferr := k.refresh(ctx)
	if ferr != nil {
		if err == nil {
			return payload, nil // stale keys still verify; refresh later
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if len(keys) == 0 && !errors.Is(ferr, errUnknownKey) {
			return nil, &unavailableError{err: ferr}
		}
		return nil, errUnknownKey
	}
	payload, _, err = verifyWith(jws, fresh, kid)
	if err != nil {
		return nil, err
	}
	return payload, nil
}

// verifyWith tries keys whose id matches kid (every key when kid is
// empty). known reports whether some key had that id.
func verifyWith(jws *jose.JSONWebSignature, keys []jose.JSONWebKey, kid string) (payload []byte, known bool, err error) {
	for i := range keys {
		key := &keys[i]
		if kid != "" && key.KeyID != kid {
			continue
		}
		if kid != "" {
			known = true
		}
		if key.Use != "" && key.Use != "sig" {
			continue
		}
		if p, err := jws.Verify(key); err == nil {
			return p, known, nil
		}
	}
	if known {
		return nil, true, errBadSignature
	}
	if len(keys) > 0 && kid == "" {
		return nil, false, errBadSignature
	}
	return nil, false, errUnknownKey
}

// snapshot returns the cached keys and whether they are older than maxAge.
func (k *KeySet) snapshot() ([]jose.JSONWebKey, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	stale := k.maxAge > 0 && !k.fetchedAt.IsZero() && k.now().Sub(k.fetchedAt) >= k.maxAge
	return k.keys, stale
}

// refresh fetches the key set unless the floor forbids it, in which case it
// returns errUnknownKey (or the last fetch error while there are no keys).
// Concurrent callers share one fetch.
func (k *KeySet) refresh(ctx context.Context) ([]jose.JSONWebKey, error) {
	k.mu.Lock()
	if ch := k.inflight; ch != nil {
		k.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		k.mu.Lock()
		defer k.mu.Unlock()
		if k.lastErr != nil {
			return nil, k.lastErr
		}
		return k.keys, nil
	}
	if !k.triedAt.IsZero() && k.now().Sub(k.triedAt) < k.minRefresh {
		defer k.mu.Unlock()
		if len(k.keys) == 0 && k.lastErr != nil {
			return nil, k.lastErr
		}
		return nil, errUnknownKey
	}
	ch := make(chan struct{})
	k.inflight = ch
	k.triedAt = k.now()
	k.mu.Unlock()

	// The fetch outlives an impatient caller: its result serves everyone.
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	keys, err := k.fetch(fctx)
	cancel()

	k.mu.Lock()
	defer k.mu.Unlock()
	k.inflight = nil
	close(ch)
	k.lastErr = err
	if err != nil {
		return nil, err
	}
	k.keys, k.fetchedAt = keys, k.now()
	return keys, nil
}

// fetch reads the provider's JWKS. Keys of types or algorithms go-jose does
// not support are skipped, as RFC 7517 section 5 asks.
func (k *KeySet) fetch(ctx context.Context) ([]jose.JSONWebKey, error) {
	k.fetches.Add(1)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, k.url, nil)
	if err != nil {
		return nil, fmt.Errorf("JWKS %s: %w", k.url, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := k.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("JWKS %s unreachable: %w", k.url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSBody+1))
	if err != nil {
		return nil, fmt.Errorf("JWKS %s: reading: %w", k.url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("JWKS %s answered %s", k.url, resp.Status)
	}
	if len(body) > maxJWKSBody {
		return nil, fmt.Errorf("JWKS %s: document larger than %d bytes", k.url, maxJWKSBody)
	}
	var raw struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, fmt.Errorf("JWKS %s: not a JWK set: %w", k.url, err)
	}
	var keys []jose.JSONWebKey
	for _, r := range raw.Keys {
		var key jose.JSONWebKey
		if err := key.UnmarshalJSON(r); err != nil {
			continue // unsupported key type or curve
		}
		if !key.IsPublic() {
			continue // never trust a symmetric or private key from a JWKS
		}
		keys = append(keys, key)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("JWKS %s holds no usable public key", k.url)
	}
	return keys, nil
}
