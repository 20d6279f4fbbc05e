// Package oidctest runs a small OpenID Connect provider on loopback for
// tests: a discovery document, a JWKS endpoint that counts its fetches, an
// authorization endpoint that signs in a configured user at once, and a
// token endpoint that checks the client secret, the redirect URI and the
// PKCE verifier (S256) before issuing an ID token. Tokens are signed with
// go-jose, so tests control every header and claim (key ids, algorithms,
// expiry, tampering).
package oidctest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// Key is a signing key of the issuer.
type Key struct {
	ID     string
	Alg    jose.SignatureAlgorithm
	Signer crypto.Signer
}

// Issuer is a test OIDC provider. Create it with New.
type Issuer struct {
	URL          string // issuer URL, http://127.0.0.1:<port>
	ClientID     string
	ClientSecret string

	srv         *httptest.Server
	jwksFetches atomic.Int64
	discFetches atomic.Int64

	mu        sync.Mutex
	keys      []*Key // published
	user      map[string]any
	codes     map[string]codeGrant
	down      bool
	now       func() time.Time
	lastToken string
}

type codeGrant struct {
	clientID, redirectURI, challenge, nonce string
	claims                                  map[string]any
}

// New starts an issuer with one RS256 key ("rsa-1") and one ES256 key
// ("ec-1"), client "rootcause" with secret "s3cret". It stops when the
// test ends.
func New(t interface{ Cleanup(func()) }) *Issuer {
	is := &Issuer{ClientID: "rootcause", ClientSecret: "s3cret", codes: map[string]codeGrant{}, now: time.Now}
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	ek, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	is.keys = []*Key{{ID: "rsa-1", Alg: jose.RS256, Signer: rk}, {ID: "ec-1", Alg: jose.ES256, Signer: ek}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", is.discovery)
	mux.HandleFunc("GET /keys", is.jwks)
	mux.HandleFunc("GET /authorize", is.authorize)
	mux.HandleFunc("POST /token", is.token)
	is.srv = httptest.NewServer(mux)
	is.URL = is.srv.URL
	t.Cleanup(is.srv.Close)
	return is
}

// Close stops the issuer.
func (is *Issuer) Close() { is.srv.Close() }

// JWKSFetches returns how many times the JWKS was fetched.
func (is *Issuer) JWKSFetches() int64 { return is.jwksFetches.Load() }

// DiscoveryFetches returns how many times discovery was fetched.
func (is *Issuer) DiscoveryFetches() int64 { return is.discFetches.Load() }

// SetDown makes every endpoint answer 503 (a provider outage).
func (is *Issuer) SetDown(down bool) {
	is.mu.Lock()
	is.down = down
	is.mu.Unlock()
}

// SetUser sets the claims of the user the authorization endpoint signs in
// (sub, email, groups, ...).
func (is *Issuer) SetUser(claims map[string]any) {
	is.mu.Lock()
	is.user = claims
	is.mu.Unlock()
}

// Key returns the published key with id, or nil.
func (is *Issuer) Key(id string) *Key {
	is.mu.Lock()
	defer is.mu.Unlock()
	for _, k := range is.keys {
		if k.ID == id {
			return k
		}
	}
	return nil
}

// AddKey publishes a new RS256 key (a rotation) and returns it.
func (is *Issuer) AddKey(id string) *Key {
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	k := &Key{ID: id, Alg: jose.RS256, Signer: rk}
	is.mu.Lock()
	is.keys = append(is.keys, k)
	is.mu.Unlock()
	return k
}

func (is *Issuer) isDown(w http.ResponseWriter) bool {
	is.mu.Lock()
	down := is.down
	is.mu.Unlock()
	if down {
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
	}
	return down
}

func (is *Issuer) discovery(w http.ResponseWriter, r *http.Request) {
	is.discFetches.Add(1)
	if is.isDown(w) {
		return
	}
	writeJSON(w, map[string]any{
		"issuer":                                is.URL,
		"authorization_endpoint":                is.URL + "/authorize",
		"token_endpoint":                        is.URL + "/token",
		"jwks_uri":                              is.URL + "/keys",
		"response_types_supported":              []string{"code"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": []string{"RS256", "ES256"},
		"scopes_supported":                      []string{"openid", "email", "profile", "groups"},
		"code_challenge_methods_supported":      []string{"S256"},
	})
}

func (is *Issuer) jwks(w http.ResponseWriter, r *http.Request) {
	is.jwksFetches.Add(1)
	if is.isDown(w) {
		return
	}
	is.mu.Lock()
	var set jose.JSONWebKeySet
	for _, k := range is.keys {
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: k.Signer.Public(), KeyID: k.ID, Algorithm: string(k.Alg), Use: "sig"})
	}
	is.mu.Unlock()
	writeJSON(w, set)
}

// Claims returns standard claims for a token of this issuer: iss, aud
// (the client id), sub, email, iat and exp one hour from now. extra is
// merged over them (a nil value deletes the claim).
func (is *Issuer) Claims(sub string, extra map[string]any) map[string]any {
	now := is.now()
	c := map[string]any{
		"iss":   is.URL,
		"aud":   is.ClientID,
		"sub":   sub,
		"email": sub + "@example.com",
		"iat":   now.Unix(),
		"exp":   now.Add(time.Hour).Unix(),
	}
	for k, v := range extra {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	return c
}

// Sign signs claims with key (alg and kid from it, kid overridden when
// kid is not empty).
func Sign(key *Key, kid string, claims map[string]any) string {
	if kid == "" {
		kid = key.ID
	}
	opts := (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", kid)
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: key.Alg, Key: key.Signer}, opts)
	if err != nil {
		panic(err)
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		panic(err)
	}
	jws, err := signer.Sign(payload)
	if err != nil {
		panic(err)
	}
	s, err := jws.CompactSerialize()
	if err != nil {
		panic(err)
	}
	return s
}

// SignHS256 signs claims with HMAC-SHA256 under secret (the algorithm
// confusion attack: secret is the provider's public key).
func SignHS256(secret []byte, kid string, claims map[string]any) string {
	opts := (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", kid)
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: secret}, opts)
	if err != nil {
		panic(err)
	}
	payload, _ := json.Marshal(claims)
	jws, err := signer.Sign(payload)
	if err != nil {
		panic(err)
	}
	s, _ := jws.CompactSerialize()
	return s
}

// Unsigned returns an "alg": "none" JWT of claims.
func Unsigned(claims map[string]any) string {
	h, _ := json.Marshal(map[string]any{"alg": "none", "typ": "JWT"})
	p, _ := json.Marshal(claims)
	return base64.RawURLEncoding.EncodeToString(h) + "." + base64.RawURLEncoding.EncodeToString(p) + "."
}

// authorize signs in the configured user at once and redirects back with
// a code, as a provider does after its login page.
func (is *Issuer) authorize(w http.ResponseWriter, r *http.Request) {
	if is.isDown(w) {
		return
	}
	q := r.URL.Query()
	if q.Get("response_type") != "code" || q.Get("client_id") != is.ClientID || q.Get("redirect_uri") == "" {
		http.Error(w, "bad authorization request", http.StatusBadRequest)
		return
	}
	if q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" {
		http.Error(w, "PKCE S256 required", http.StatusBadRequest)
		return
	}
	is.mu.Lock()
	user := is.user
	code := randomString()
	is.codes[code] = codeGrant{
		clientID: q.Get("client_id"), redirectURI: q.Get("redirect_uri"),
		challenge: q.Get("code_challenge"), nonce: q.Get("nonce"), claims: user,
	}
	is.mu.Unlock()
	u, err := url.Parse(q.Get("redirect_uri"))
	if err != nil {
		http.Error(w, "bad redirect_uri", http.StatusBadRequest)
		return
	}
	v := u.Query()
	v.Set("code", code)
	v.Set("state", q.Get("state"))
	u.RawQuery = v.Encode()
	http.Redirect(w, r, u.String(), http.StatusFound)
}

func (is *Issuer) token(w http.ResponseWriter, r *http.Request) {
	if is.isDown(w) {
		return
	}
	if err := r.ParseForm(); err != nil {
		tokenError(w, "invalid_request")
		return
	}
	id, secret, ok := r.BasicAuth()
	if ok {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
	} else {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	if id != is.ClientID || secret != is.ClientSecret {
		tokenError(w, "invalid_client")
		return
	}
	if r.PostForm.Get("grant_type") != "authorization_code" {
		tokenError(w, "unsupported_grant_type")
		return
	}
	is.mu.Lock()
	g, found := is.codes[r.PostForm.Get("code")]
	delete(is.codes, r.PostForm.Get("code")) // single use
	is.mu.Unlock()
	if !found || g.redirectURI != r.PostForm.Get("redirect_uri") {
		tokenError(w, "invalid_grant")
		return
	}
	sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
	if base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge {
		tokenError(w, "invalid_grant")
		return
	}
	sub, _ := g.claims["sub"].(string)
	extra := map[string]any{}
	for k, v := range g.claims {
		extra[k] = v
	}
	if g.nonce != "" {
		extra["nonce"] = g.nonce
	}
	idt := Sign(is.Key("rsa-1"), "", is.Claims(sub, extra))
	is.mu.Lock()
	is.lastToken = idt
	is.mu.Unlock()
	writeJSON(w, map[string]any{"access_token": randomString(), "token_type": "Bearer", "expires_in": 3600, "id_token": idt})
}

// LastIDToken returns the last ID token the token endpoint issued.
func (is *Issuer) LastIDToken() string {
	is.mu.Lock()
	defer is.mu.Unlock()
	return is.lastToken
}

func tokenError(w http.ResponseWriter, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	fmt.Fprintf(w, `{"error":%q}`, code)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func randomString() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
