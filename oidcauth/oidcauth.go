// Package oidcauth signs people in with the organization's OpenID Connect
// identity provider (Google Workspace, Azure AD / Entra ID, Okta, Auth0 or
// any OIDC issuer). It verifies JWTs with github.com/coreos/go-oidc/v3 and
// maps their claims to a server.Principal, and it runs the console's
// authorization-code flow with PKCE (golang.org/x/oauth2).
//
// A Verifier holds one fixed configuration; Dynamic follows the org root's
// `oidc` config object as it changes at runtime and is what cmd/ wires as
// the server's JWTVerifier and OIDCLogin.
//
// Verification checks, in order: the signing algorithm (Settings.AllowedAlgs;
// "none" and HMAC are never accepted), the signature against the provider's
// published keys (KeySet, which bounds refetches), the issuer, the audience
// (the client id), the expiry with Settings.ClockSkew of leeway, then the
// claims rootcause needs (subject, email). An expired token that passes
// every other check is db.ETOKENEXPIRED; everything else is
// db.EUNAUTHORIZED; a provider that cannot be reached while no keys are
// cached is db.EUNAVAILABLE with a message naming it.
package oidcauth

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/rootcause/rootcause/db"
	"github.com/rootcause/rootcause/server"
)

// Defaults of Settings.
const (
	DefaultEmailClaim  = "email"
	DefaultGroupsClaim = "groups"
	// DefaultClockSkew is the leeway on exp (and go-oidc's own 5 minutes on
	// nbf) for clocks that disagree with the provider's.
	DefaultClockSkew = 60 * time.Second
	// DefaultMinJWKSRefresh is the floor between two fetches of the
	// provider's key set triggered by unknown key ids.
	DefaultMinJWKSRefresh = 30 * time.Second
	// DefaultMaxKeyAge is how long fetched keys are used before the next
	// use refreshes them (so withdrawn keys stop verifying).
	DefaultMaxKeyAge = time.Hour
	// DefaultDiscoveryRetry is the floor between discovery attempts after
	// a failed one.
	DefaultDiscoveryRetry = 10 * time.Second
	// DefaultHTTPTimeout bounds each request to the provider.
	DefaultHTTPTimeout = 10 * time.Second
)

// DefaultAllowedAlgs are the signing algorithms accepted when the config
// names none.
var DefaultAllowedAlgs = []string{"RS256", "ES256"}

// supportedAlgs are the asymmetric JWS algorithms that may be configured.
var supportedAlgs = []string{"RS256", "RS384", "RS512", "ES256", "ES384", "ES512", "PS256", "PS384", "PS512", "EdDSA"}

// Settings configure a Verifier. Zero values take the documented defaults.
type Settings struct {
	Issuer   string // exact issuer URL, as in the provider's discovery document
	ClientID string // the expected audience

	EmailClaim  string // claim carrying the email (default "email")
	GroupsClaim string // claim carrying the groups (default "groups"); a dotted path reaches nested claims

	AdminGroups []string          // groups granted admin:read and admin:write
	TeamGroups  map[string]string // group -> team node, granting team:read
	WriteGroups []string          // groups that also grant team:write

	AllowedAlgs    []string      // default RS256, ES256
	ClockSkew      time.Duration // default DefaultClockSkew; negative means none
	MinJWKSRefresh time.Duration // default DefaultMinJWKSRefresh
	MaxKeyAge      time.Duration // default DefaultMaxKeyAge
	DiscoveryRetry time.Duration // default DefaultDiscoveryRetry

	// ClientSecret returns the client secret for the code exchange; nil
	// means a public client (PKCE only).
	ClientSecret func(ctx context.Context) (string, error)

	HTTPClient *http.Client     // nil: NewHTTPClient()
	Now        func() time.Time // nil: time.Now
	Logger     *slog.Logger     // nil: slog.Default()
}

// NewHTTPClient returns the client used for the provider: 10 s per request,
// 5 s to connect and for the TLS handshake, no more than 3 redirects.
func NewHTTPClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	tr.TLSHandshakeTimeout = 5 * time.Second
	tr.ResponseHeaderTimeout = DefaultHTTPTimeout
	return &http.Client{
		Timeout:   DefaultHTTPTimeout,
		Transport: tr,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 3 {
				return errors.New("stopped after 3 redirects")
			}
			return nil
		},
	}
}

func (s Settings) withDefaults() Settings {
	if s.EmailClaim == "" {
		s.EmailClaim = DefaultEmailClaim
	}
	if s.GroupsClaim == "" {
		s.GroupsClaim = DefaultGroupsClaim
	}
	if len(s.AllowedAlgs) == 0 {
		s.AllowedAlgs = DefaultAllowedAlgs
	}
	if s.ClockSkew == 0 {
		s.ClockSkew = DefaultClockSkew
	} else if s.ClockSkew < 0 {
		s.ClockSkew = 0
	}
	if s.MinJWKSRefresh <= 0 {
		s.MinJWKSRefresh = DefaultMinJWKSRefresh
	}
	if s.MaxKeyAge <= 0 {
		s.MaxKeyAge = DefaultMaxKeyAge
	}
	if s.DiscoveryRetry <= 0 {
		s.DiscoveryRetry = DefaultDiscoveryRetry
	}
	if s.HTTPClient == nil {
		s.HTTPClient = NewHTTPClient()
	}
	if s.Now == nil {
		s.Now = time.Now
	}
	if s.Logger == nil {
		s.Logger = slog.Default()
	}
	return s
}

func (s Settings) validate() error {
	u, err := url.Parse(s.Issuer)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return fmt.Errorf("oidc.issuer %q: want an http(s) URL", s.Issuer)
	}
	if u.Scheme == "http" && !isLoopback(u.Hostname()) {
		return fmt.Errorf("oidc.issuer %q: must be https (plain http only on loopback)", s.Issuer)
	}
	if s.ClientID == "" {
		return errors.New("oidc.client_id is required")
	}
	for _, a := range s.AllowedAlgs {
		if !slices.Contains(supportedAlgs, a) {
			return fmt.Errorf("oidc.allowed_algs: %q is not accepted (use %s)", a, strings.Join(supportedAlgs, ", "))
		}
	}
	return nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Verifier verifies JWTs of one provider and runs its login flow. Create it
// with NewVerifier; it is safe for concurrent use.
type Verifier struct {
	s Settings

	mu          sync.Mutex // serializes discovery
	disc        *discovered
	lastAttempt time.Time
	lastErr     error
}

// discovered is what discovery found.
type discovered struct {
	endpoint oauth2.Endpoint
	scopes   []string // scopes to request in the code flow
	keys     *KeySet
}

// NewVerifier returns a Verifier for s. It does not contact the provider:
// discovery runs on first use (or Discover) and is cached; a failure is
// retried at most once per DiscoveryRetry, so an outage of the provider
// never stops the server, only OIDC sign-in. It returns an error for
// settings that can never work.
func NewVerifier(_ context.Context, s Settings) (*Verifier, error) {
	s = s.withDefaults()
	if err := s.validate(); err != nil {
		return nil, err
	}
	s.AdminGroups = slices.Clone(s.AdminGroups)
	s.WriteGroups = slices.Clone(s.WriteGroups)
	tg := make(map[string]string, len(s.TeamGroups))
	for g, t := range s.TeamGroups {
		tg[g] = t
	}
	s.TeamGroups = tg
	return &Verifier{s: s}, nil
}

// Issuer returns the configured issuer URL.
func (v *Verifier) Issuer() string { return v.s.Issuer }

// KeySet returns the verifier's key set once discovery has succeeded, or
// nil.
func (v *Verifier) KeySet() *KeySet {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.disc == nil {
		return nil
	}
	return v.disc.keys
}

// Discover fetches the provider's discovery document unless it is cached.
// Its error is a *db.Error with code EUNAVAILABLE whose message reads
// "OIDC provider <issuer> unreachable: <cause>".
func (v *Verifier) Discover(ctx context.Context) error {
	_, err := v.discover(ctx)
	return err
}

func (v *Verifier) discover(ctx context.Context) (*discovered, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.disc != nil {
		return v.disc, nil
	}
	now := v.s.Now()
	if v.lastErr != nil && now.Sub(v.lastAttempt) < v.s.DiscoveryRetry {
		return nil, v.lastErr
	}
	v.lastAttempt = now
	// Discovery serves every caller: one impatient client must not
	// cancel it.
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*DefaultHTTPTimeout)
	defer cancel()
	d, err := v.fetchDiscovery(dctx)
	if err != nil {
		v.lastErr = &db.Error{Code: db.EUNAVAILABLE,
			Message: fmt.Sprintf("OIDC provider %s unreachable: %v", v.s.Issuer, err), Err: err}
		v.s.Logger.Warn("OIDC provider unreachable; sign-in with OIDC fails until it answers",
			"issuer", v.s.Issuer, "error", err.Error(), "retry_after", v.s.DiscoveryRetry)
		return nil, v.lastErr
	}
	if v.lastErr != nil {
		v.s.Logger.Info("OIDC provider reachable again", "issuer", v.s.Issuer)
	}
	v.disc, v.lastErr = d, nil
	return d, nil
}

func (v *Verifier) fetchDiscovery(ctx context.Context) (*discovered, error) {
	p, err := oidc.NewProvider(oidc.ClientContext(ctx, v.s.HTTPClient), v.s.Issuer)
	if err != nil {
		return nil, err
	}
	var meta struct {
		JWKSURL string   `json:"jwks_uri"`
		Scopes  []string `json:"scopes_supported"`
	}
	if err := p.Claims(&meta); err != nil {
		return nil, fmt.Errorf("reading the discovery document: %w", err)
	}
	if meta.JWKSURL == "" {
		return nil, errors.New("the discovery document has no jwks_uri")
	}
	scopes := []string{oidc.ScopeOpenID, "email", "profile"}
	// Okta (and others) put groups in the ID token only for this scope;
	// Google rejects unknown scopes, so ask only where it is advertised.
	if slices.Contains(meta.Scopes, "groups") {
		scopes = append(scopes, "groups")
	}
	return &discovered{
		endpoint: p.Endpoint(),
		scopes:   scopes,
		keys:     NewKeySet(meta.JWKSURL, v.s.HTTPClient, v.s.AllowedAlgs, v.s.MinJWKSRefresh, v.s.MaxKeyAge, v.s.Now),
	}, nil
}

// recordingKeySet remembers the key set's error, which go-oidc flattens
// into a string.
type recordingKeySet struct {
	ks  *KeySet
	err error
}

func (r *recordingKeySet) VerifySignature(ctx context.Context, jwt string) ([]byte, error) {
	p, err := r.ks.VerifySignature(ctx, jwt)
	r.err = err
	return p, err
}

// Verify implements server.JWTVerifier.
func (v *Verifier) Verify(ctx context.Context, raw string) (*server.Principal, error) {
	p, _, err := v.verify(ctx, raw)
	return p, err
}

func (v *Verifier) verify(ctx context.Context, raw string) (*server.Principal, *oidc.IDToken, error) {
	d, err := v.discover(ctx)
	if err != nil {
		return nil, nil, err
	}
	rks := &recordingKeySet{ks: d.keys}
	skew := v.s.ClockSkew
	now := v.s.Now
	iv := oidc.NewVerifier(v.s.Issuer, rks, &oidc.Config{
		ClientID:             v.s.ClientID,
		SupportedSigningAlgs: v.s.AllowedAlgs,
		Now:                  func() time.Time { return now().Add(-skew) },
	})
	tok, err := iv.Verify(ctx, raw)
	if err != nil {
		var expired *oidc.TokenExpiredError
		var unavail *unavailableError
		switch {
		case errors.As(err, &expired):
			return nil, nil, &db.Error{Code: db.ETOKENEXPIRED, Message: "token expired", Err: err}
		case errors.As(rks.err, &unavail):
			return nil, nil, &db.Error{Code: db.EUNAVAILABLE,
				Message: fmt.Sprintf("OIDC provider %s unreachable: %v", v.s.Issuer, unavail.err), Err: err}
		case ctx.Err() != nil:
			return nil, nil, ctx.Err()
		}
		return nil, nil, &db.Error{Code: db.EUNAUTHORIZED, Message: "invalid or expired token", Err: err}
	}
	var claims map[string]any
	if err := tok.Claims(&claims); err != nil {
		return nil, nil, &db.Error{Code: db.EUNAUTHORIZED, Message: "invalid or expired token", Err: err}
	}
	p, err := v.principal(tok.Subject, claims)
	if err != nil {
		return nil, nil, err
	}
	return p, tok, nil
}

// principal maps verified claims to a principal; see Map.
func (v *Verifier) principal(sub string, claims map[string]any) (*server.Principal, error) {
	return Map(v.s, sub, claims)
}

// Map turns the verified claims of a token into a principal:
//
//   - ID "oidc:<sub>", Subject the sub claim, Kind server.KindOIDC;
//   - Email from EmailClaim, required; a token whose email_verified claim is
//     false is refused, since approvers are matched by email;
//   - Name from "name", else "preferred_username";
//   - groups from GroupsClaim (an array of strings or one string; a dotted
//     name such as "realm_access.roles" reaches a nested claim when no
//     top-level claim has that exact name);
//   - a member of an AdminGroups group gets admin:read, admin:write,
//     team:read and team:write and no team (it acts for the organization,
//     naming the team where a route needs one);
//   - otherwise the user's groups found in TeamGroups are sorted by group
//     name and the first one's team becomes Team, with team:read; team:write
//     is added when a WriteGroups group maps to that same team, or when a
//     WriteGroups group maps to no team at all (a generic writers group);
//   - a user in no mapped group is authenticated with no permissions: every
//     route but /api/v1/auth/me answers 403.
//
// Claims that make the token unusable are reported as *server.ClaimsError
// (401 unauthorized with a message saying what is missing).
func Map(s Settings, sub string, claims map[string]any) (*server.Principal, error) {
	if s.EmailClaim == "" {
		s.EmailClaim = DefaultEmailClaim
	}
	if s.GroupsClaim == "" {
		s.GroupsClaim = DefaultGroupsClaim
	}
	if sub == "" {
		return nil, &server.ClaimsError{Reason: "the identity provider's token has no subject (sub) claim"}
	}
	email, _ := lookup(claims, s.EmailClaim).(string)
	email = strings.TrimSpace(email)
	if email == "" || !strings.Contains(email, "@") {
		return nil, &server.ClaimsError{Reason: fmt.Sprintf(
			"the identity provider's token has no email in its %q claim; ask the provider for the email scope or set oidc.email_claim", s.EmailClaim)}
	}
	if verified, ok := claims["email_verified"]; ok && (verified == false || verified == "false") {
		return nil, &server.ClaimsError{Reason: "the identity provider says this email address is not verified"}
	}
	p := &server.Principal{
		ID:      "oidc:" + sub,
		Subject: sub,
		Kind:    server.KindOIDC,
		Email:   email,
	}
	if n, _ := claims["name"].(string); n != "" {
		p.Name = n
	} else if n, _ := claims["preferred_username"].(string); n != "" {
		p.Name = n
	}
	groups := stringList(lookup(claims, s.GroupsClaim))
	in := func(list []string) bool {
		for _, g := range groups {
			if slices.Contains(list, g) {
				return true
			}
		}
		return false
	}
	if in(s.AdminGroups) {
		p.Permissions = []string{db.PermAdminRead, db.PermAdminWrite, db.PermTeamRead, db.PermTeamWrite}
		return p, nil
	}
	var mapped []string
	for _, g := range groups {
		if _, ok := s.TeamGroups[g]; ok {
			mapped = append(mapped, g)
		}
	}
	if len(mapped) == 0 {
		p.Permissions = []string{}
		return p, nil
	}
	sort.Strings(mapped)
	p.Team = s.TeamGroups[mapped[0]]
	p.Permissions = []string{db.PermTeamRead}
	for _, g := range groups {
		if !slices.Contains(s.WriteGroups, g) {
			continue
		}
		if t, ok := s.TeamGroups[g]; !ok || t == p.Team {
			p.Permissions = append(p.Permissions, db.PermTeamWrite)
			break
		}
	}
	return p, nil
}

// lookup returns claims[name], or the value at the dotted path name when no
// top-level claim has that exact name (Auth0's namespaced claims are URLs
// with dots, so the exact name wins).
func lookup(claims map[string]any, name string) any {
	if v, ok := claims[name]; ok {
		return v
	}
	if !strings.Contains(name, ".") {
		return nil
	}
	var cur any = claims
	for _, part := range strings.Split(name, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		if cur, ok = m[part]; !ok {
			return nil
		}
	}
	return cur
}

func stringList(v any) []string {
	switch x := v.(type) {
	case string:
		if x == "" {
			return nil
		}
		return []string{x}
	case []any:
		out := make([]string, 0, len(x))
		for _, e := range x {
			if s, ok := e.(string); ok && s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// AuthCodeURL implements server.OIDCLogin: the provider's authorization URL
// for the code flow with PKCE (S256) and the nonce.
func (v *Verifier) AuthCodeURL(ctx context.Context, redirectURL, state, nonce, pkceVerifier string) (string, error) {
	d, err := v.discover(ctx)
	if err != nil {
		return "", err
	}
	c := v.oauth2Config(d, redirectURL, "")
	return c.AuthCodeURL(state, oidc.Nonce(nonce), oauth2.S256ChallengeOption(pkceVerifier)), nil
}

// Exchange implements server.OIDCLogin: it redeems code (with the PKCE
// verifier and the client secret), verifies the ID token exactly as a
// bearer JWT, and checks its nonce.
func (v *Verifier) Exchange(ctx context.Context, redirectURL, code, pkceVerifier, nonce string) (*server.LoginResult, error) {
	d, err := v.discover(ctx)
	if err != nil {
		return nil, err
	}
	secret := ""
	if v.s.ClientSecret != nil {
		if secret, err = v.s.ClientSecret(ctx); err != nil {
			v.s.Logger.Error("resolving oidc.client_secret", "error", err.Error())
			return nil, db.Errorf(db.EUNAVAILABLE, "the OIDC client secret cannot be resolved; see the server log")
		}
	}
	c := v.oauth2Config(d, redirectURL, secret)
	ctx = context.WithValue(ctx, oauth2.HTTPClient, v.s.HTTPClient)
	tok, err := c.Exchange(ctx, code, oauth2.VerifierOption(pkceVerifier))
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) {
			// The provider refused the code (reused, expired, PKCE or
			// client mismatch): the user must sign in again.
			return nil, &db.Error{Code: db.EUNAUTHORIZED, Message: "the identity provider refused the sign-in code: " + re.ErrorCode, Err: err}
		}
		return nil, &db.Error{Code: db.EUNAVAILABLE, Message: fmt.Sprintf("OIDC provider %s unreachable: %v", v.s.Issuer, err), Err: err}
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return nil, db.Errorf(db.EUNAUTHORIZED, "the identity provider's token answer has no id_token")
	}
	p, idt, err := v.verify(ctx, raw)
	if err != nil {
		return nil, err
	}
	if nonce == "" || subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(nonce)) != 1 {
		return nil, db.Errorf(db.EUNAUTHORIZED, "the ID token's nonce does not match this sign-in")
	}
	return &server.LoginResult{IDToken: raw, Principal: p, Expiry: idt.Expiry}, nil
}

func (v *Verifier) oauth2Config(d *discovered, redirectURL, secret string) *oauth2.Config {
	return &oauth2.Config{
		ClientID:     v.s.ClientID,
		ClientSecret: secret,
		Endpoint:     d.endpoint,
		RedirectURL:  redirectURL,
		Scopes:       d.scopes,
	}
}

func defaultLogger() *slog.Logger { return slog.Default() }
