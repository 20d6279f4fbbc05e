package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/julienschmidt/httprouter"

	"github.com/rootcause/rootcause/db"
)

// Principal kinds.
const (
	KindTeamToken  = "team_token"
	KindAdminToken = "admin_token"
	KindOIDC       = "oidc_jwt"
	KindLocal      = "local" // the unix socket's local trust
)

// LocalPrincipalID is the principal id of requests on the local socket.
const LocalPrincipalID = "local"

// LocalHost is the only Host accepted on the local socket; the CLI's socket
// client sends it.
const LocalHost = "rootcause.local"

// Principal is the authenticated caller of a request.
type Principal struct {
	// ID identifies the caller for rate limits and logs: the token id, the
	// OIDC subject, or "local".
	ID          string
	Kind        string // KindTeamToken, KindAdminToken, KindOIDC or KindLocal
	Team        string // the team node of a team principal; empty for admins
	Permissions []string
	Email       string // OIDC only
	Subject     string // OIDC only: the token's sub claim (ID is "oidc:" + Subject)
	Name        string // token label or OIDC display name
}

// Has reports whether p holds perm. A write permission implies the read
// permission of the same scope, and admin permissions imply the team
// permissions of the same kind: admins may manage every team.
func (p *Principal) Has(perm string) bool {
	if p == nil {
		return false
	}
	var implied []string
	switch perm {
	case db.PermTeamRead:
		implied = []string{db.PermTeamRead, db.PermTeamWrite, db.PermAdminRead, db.PermAdminWrite}
	case db.PermTeamWrite:
		implied = []string{db.PermTeamWrite, db.PermAdminWrite}
	case db.PermAdminRead:
		implied = []string{db.PermAdminRead, db.PermAdminWrite}
	default:
		implied = []string{perm}
	}
	for _, have := range p.Permissions {
		if slices.Contains(implied, have) {
			return true
		}
	}
	return false
}

// IsAdmin reports whether p acts for the whole organization.
func (p *Principal) IsAdmin() bool {
	return p != nil && p.Team == "" && p.Has(db.PermAdminRead)
}

type principalKey struct{}

// PrincipalFrom returns the authenticated principal of the request ctx
// belongs to, or nil outside an authenticated route.
func PrincipalFrom(ctx context.Context) *Principal {
	// The request's own context (serve's), once handle has authenticated
	// it: no principal value can sit under it (handle adds one only to a
	// context without request state), so the walk up the chain is skipped.
	if c, ok := ctx.(*infoContext); ok && c.info.authed != nil {
		return c.info.authed
	}
	if p, ok := ctx.Value(principalKey{}).(*Principal); ok {
		return p
	}
	if info := infoFrom(ctx); info != nil {
		return info.authed
	}
	return nil
}

// WithPrincipal returns ctx carrying p, for handler unit tests.
func WithPrincipal(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// requireTeam returns the team of a team principal, and 403 forbidden for
// any other (admins must name the team through an admin route).
func requireTeam(p *Principal) (string, error) {
	if p == nil {
		return "", db.Errorf(db.EUNAUTHORIZED, "invalid or expired token")
	}
	if p.Team == "" {
		return "", db.Errorf(db.EFORBIDDEN, "this route needs a team token")
	}
	return p.Team, nil
}

// teamScope returns the team a request acts on: a team principal always
// acts on its own team (naming another one is 403), an admin must name one.
func teamScope(p *Principal, requested string) (string, error) {
	if p == nil {
		return "", db.Errorf(db.EUNAUTHORIZED, "invalid or expired token")
	}
	if p.Team != "" {
		if requested != "" && requested != p.Team {
			return "", db.Errorf(db.EFORBIDDEN, "a team token can only act on its own team")
		}
		return p.Team, nil
	}
	if !p.IsAdmin() {
		return "", db.Errorf(db.EFORBIDDEN, "no team in scope")
	}
	if requested == "" {
		return "", &db.Error{Code: db.EINVALID, Message: "team is required for an admin caller", Field: "team"}
	}
	return requested, nil
}

var errBadToken = db.Errorf(db.EUNAUTHORIZED, "invalid or expired token")

// authenticate returns the principal of r: local trust on the socket, else
// the bearer token or JWT. The credential is always verified: a valid one
// is never refused by the failure limiter, however many failures its
// address has (behind a reverse proxy every client may share one). A
// failed attempt is charged to the client address (clientIP), and once
// the address is over its limit its failures are answered 429.
func (s *Server) authenticate(r *http.Request) (*Principal, error) {
	if info := infoFrom(r.Context()); info != nil && info.local {
		return localPrincipal(), nil
	}
	if len(r.Header["Authorization"]) > 1 {
		return nil, db.Errorf(db.EINVALID, "the request has more than one Authorization header; send exactly one")
	}
	p, err := s.verifyBearer(r)
	if err != nil {
		if c := db.ErrorCode(err); c == db.EUNAUTHORIZED || c == db.ETOKENEXPIRED {
			return nil, s.failures.fail(s.clientIP(r), rateAuthFailure, err)
		}
		return nil, err
	}
	return p, nil
}

// clientIP is the rate-limit key of the client of r: its peer address,
// or, when the peer is one of the trusted_proxies, the right-most address
// of X-Forwarded-For that is not itself a trusted proxy. Without trusted
// proxies the forwarded header (which any client can write) is ignored.
func (s *Server) clientIP(r *http.Request) string {
	peer := peerAddr(r.RemoteAddr)
	if !peer.IsValid() || !s.trustedProxy(peer) {
		return clientKey(r.RemoteAddr)
	}
	hops := r.Header.Values("X-Forwarded-For")
	var list []string
	for _, h := range hops {
		for _, part := range strings.Split(h, ",") {
			list = append(list, strings.TrimSpace(part))
		}
	}
	for i := len(list) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.Trim(list[i], "[]"))
		if err != nil {
			break // a malformed hop: stop at the last address we can trust
		}
		a = a.Unmap()
		if s.trustedProxy(a) {
			continue
		}
		return clientKey(net.JoinHostPort(a.String(), "0"))
	}
	return clientKey(r.RemoteAddr)
}

func (s *Server) trustedProxy(a netip.Addr) bool {
	for _, p := range s.cfg.TrustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

func peerAddr(remote string) netip.Addr {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	return a.Unmap()
}

func (s *Server) verifyBearer(r *http.Request) (*Principal, error) {
	var authz string
	if v := r.Header["Authorization"]; len(v) > 0 {
		authz = v[0]
	}
	raw, ok := bearerToken(authz)
	if !ok {
		// Without an Authorization header, the console's session cookie
		// (oidc.go) may authenticate the request.
		if authz == "" {
			if p, handled, err := s.cookiePrincipal(r); handled {
				return p, err
			}
		}
		return nil, errBadToken
	}
	ctx := r.Context()
	if looksLikeJWT(raw) {
		if s.cfg.JWTVerifier == nil {
			return nil, errBadToken
		}
		p, err := s.cfg.JWTVerifier.Verify(ctx, raw)
		if err != nil {
			return nil, authError(err)
		}
		if p == nil || p.ID == "" {
			return nil, errBadToken
		}
		if p.Kind == "" {
			p.Kind = KindOIDC
		}
		if p.Kind == KindLocal {
			return nil, errors.New("jwt verifier returned a local principal")
		}
		return p, nil
	}
	// The principal, the token's identity and its permissions live in the
	// request's state when there is one (one allocation per request).
	var p *Principal
	var tok *db.TokenIdentity
	if info := infoFrom(ctx); info != nil && info.authed == nil {
		p, tok = &info.self, &info.token
		tok.Permissions = info.perms[:0]
	} else {
		p, tok = new(Principal), new(db.TokenIdentity)
	}
	if ia, ok := s.cfg.Tokens.(db.IdentityAuthenticator); ok {
		if err := ia.AuthenticateIdentity(ctx, raw, tok); err != nil {
			return nil, authError(err)
		}
	} else {
		t, err := s.cfg.Tokens.Authenticate(ctx, raw)
		if err != nil {
			return nil, authError(err)
		}
		*tok = db.TokenIdentity{ID: t.ID, Kind: t.Kind, Team: t.Team, Name: t.Name, Permissions: t.Permissions}
	}
	// Either way the permissions are the caller's own copy
	// (db.TokenService, db.IdentityAuthenticator): taken as they are.
	*p = Principal{
		ID:          tok.ID,
		Team:        tok.Team,
		Permissions: tok.Permissions,
		Name:        tok.Name,
	}
	switch tok.Kind {
	case db.TokenAdmin:
		p.Kind, p.Team = KindAdminToken, ""
	case db.TokenTeam:
		p.Kind = KindTeamToken
		if p.Team == "" {
			return nil, errors.New("team token without a team")
		}
		// A team token never carries organization-wide permissions.
		p.Permissions = slices.DeleteFunc(p.Permissions, func(perm string) bool {
			return perm == db.PermAdminRead || perm == db.PermAdminWrite
		})
	default:
		return nil, errors.New("token of unknown kind " + tok.Kind)
	}
	return p, nil
}

// authError keeps unauthorized and token_expired with one fixed message
// each, so a caller learns nothing about which part of a token was wrong;
// other errors (a store failure) pass through.
func authError(err error) error {
	var ce *ClaimsError
	if errors.As(err, &ce) {
		return ce // a valid token's unusable claims: the reason helps (oidc.go)
	}
	switch db.ErrorCode(err) {
	case db.EUNAUTHORIZED:
		return errBadToken
	case db.ETOKENEXPIRED:
		return db.Errorf(db.ETOKENEXPIRED, "token expired")
	}
	return err
}

// bearerToken extracts the token of an "Authorization: Bearer <token>"
// header. The scheme is case-insensitive; the token must be non-empty
// printable ASCII without spaces.
func bearerToken(h string) (string, bool) {
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimLeft(tok, " ")
	if tok == "" || len(tok) > 8192 {
		return "", false
	}
	for i := 0; i < len(tok); i++ {
		if c := tok[i]; c <= ' ' || c >= 0x7f {
			return "", false
		}
	}
	return tok, true
}

// looksLikeJWT reports whether tok has the shape of a JWS compact
// serialization with a JSON header: three base64url parts, the first
// starting with "eyJ" ({"). Team tokens (<id>.<secret>) have two parts.
func looksLikeJWT(tok string) bool {
	if !strings.HasPrefix(tok, "eyJ") || strings.Count(tok, ".") != 2 {
		return false
	}
	for _, part := range strings.Split(tok, ".") {
		if part == "" {
			return false
		}
		for i := 0; i < len(part); i++ {
			c := part[i]
			if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

func localPrincipal() *Principal {
	return &Principal{
		ID:          LocalPrincipalID,
		Kind:        KindLocal,
		Permissions: []string{db.PermAdminRead, db.PermAdminWrite, db.PermTeamRead, db.PermTeamWrite},
		Name:        "local socket",
	}
}

// LocalHandler returns the handler for the unix socket: the same router as
// Handler, but every request is made by the local-trust principal (full
// admin). Requests carrying Origin or Referer (a browser) or a Host other
// than LocalHost are refused with 403, so a web page cannot reach the
// socket through a proxy or a DNS-rebinding trick.
func (s *Server) LocalHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.serve(w, r, true) })
}

func checkLocalRequest(r *http.Request) error {
	if r.Header.Get("Origin") != "" || r.Header.Get("Referer") != "" {
		return db.Errorf(db.EFORBIDDEN, "browser requests are not accepted on the local socket")
	}
	if r.Host != LocalHost {
		return db.Errorf(db.EFORBIDDEN, "unexpected Host on the local socket; use %q", LocalHost)
	}
	return nil
}

// clientKey is the rate-limit key of a client address: the IP of
// RemoteAddr (never a forwarded header, which the client controls), IPv6
// addresses by their /64.
func clientKey(remoteAddr string) string {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return "addr:" + host
	}
	if ip4 := ip.To4(); ip4 != nil {
		return ip4.String()
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}

func (s *Server) registerAuthRoutes() {
	s.handle(http.MethodGet, "/api/v1/auth/me", "", rateRead, s.getAuthMe)
}

// authMe is the answer of GET /api/v1/auth/me (spec 2.10).
type authMe struct {
	Role        string   `json:"role"`
	AuthKind    string   `json:"auth_kind"`
	OrgID       string   `json:"org_id"`
	TeamNodeID  *string  `json:"team_node_id"`
	Subject     *string  `json:"subject"`
	Email       *string  `json:"email"`
	Name        string   `json:"name,omitempty"`
	Teams       []string `json:"teams,omitempty"` // OIDC: the team the groups map to
	CanWrite    bool     `json:"can_write"`
	Permissions []string `json:"permissions"`
}

func (s *Server) getAuthMe(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	p := PrincipalFrom(r.Context())
	org, err := s.orgName(r.Context())
	if err != nil {
		return err
	}
	if e := s.authMe.get(p, org); e != nil {
		writeJSONBytes(w, http.StatusOK, e.body, e.length)
		return nil
	}
	b, err := json.Marshal(authMeOf(p, org))
	if err != nil {
		return fmt.Errorf("encoding response: %w", err)
	}
	b = append(b, '\n')
	e := s.authMe.put(p, org, b)
	writeJSONBytes(w, http.StatusOK, e.body, e.length)
	return nil
}

// authMeOf is the /auth/me answer for p in org.
func authMeOf(p *Principal, org string) authMe {
	me := authMe{
		AuthKind:    p.Kind,
		OrgID:       org,
		Name:        p.Name,
		Permissions: p.Permissions,
	}
	if me.Permissions == nil {
		me.Permissions = []string{}
	}
	switch {
	case p.Team != "":
		me.Role = "team"
		me.TeamNodeID = &p.Team
		me.CanWrite = p.Has(db.PermTeamWrite)
	case p.IsAdmin():
		me.Role = "admin"
		me.CanWrite = p.Has(db.PermAdminWrite)
	default:
		me.Role = "user"
		me.CanWrite = p.Has(db.PermTeamWrite)
	}
	if p.Kind == KindOIDC {
		// Spec 2.10: a signed-in person is role "user" with team_node_id
		// null, whatever its groups grant; the mapped team is in teams.
		me.Role, me.TeamNodeID = "user", nil
		if p.Team != "" {
			me.Teams = []string{p.Team}
		}
		sub := p.Subject
		if sub == "" {
			sub = p.ID
		}
		me.Subject = &sub
		if p.Email != "" {
			me.Email = &p.Email
		}
	}
	return me
}

// authMeCache keeps the encoded /auth/me answer per principal id. The
// answer is a function of the principal's fields and the org name alone,
// and an entry is used only when all of them equal the request's (a
// token's permissions or name changed, or another principal with the same
// id, gets a fresh answer), so a cached answer is always the one
// authMeOf would encode. Authentication itself is never cached here.
type authMeCache struct {
	mu      sync.RWMutex
	entries map[string]*authMeEntry
}

// maxAuthMeEntries bounds the cache; it is emptied when full.
const maxAuthMeEntries = 4096

type authMeEntry struct {
	p      Principal // a copy, never modified
	org    string
	body   []byte   // the answer with its newline
	length []string // Content-Length's value (fixedValue of len(body))
}

func (c *authMeCache) get(p *Principal, org string) *authMeEntry {
	c.mu.RLock()
	e := c.entries[p.ID]
	c.mu.RUnlock()
	if e == nil || e.org != org || !samePrincipal(&e.p, p) {
		return nil
	}
	return e
}

func (c *authMeCache) put(p *Principal, org string, body []byte) *authMeEntry {
	cp := *p
	cp.Permissions = slices.Clone(p.Permissions)
	e := &authMeEntry{p: cp, org: org, body: body, length: fixedValue(strconv.Itoa(len(body)))}
	c.mu.Lock()
	if c.entries == nil || len(c.entries) >= maxAuthMeEntries {
		c.entries = make(map[string]*authMeEntry)
	}
	c.entries[p.ID] = e
	c.mu.Unlock()
	return e
}

// samePrincipal reports whether a and b have equal fields.
func samePrincipal(a, b *Principal) bool {
	return a.ID == b.ID && a.Kind == b.Kind && a.Team == b.Team && a.Email == b.Email &&
		a.Subject == b.Subject && a.Name == b.Name && slices.Equal(a.Permissions, b.Permissions) &&
		(a.Permissions == nil) == (b.Permissions == nil)
}

// orgName returns the organization root's name. It is fixed once the org
// exists (there is no rename), so the first answer is cached.
func (s *Server) orgName(ctx context.Context) (string, error) {
	if org := s.org.Load(); org != nil {
		return *org, nil
	}
	org, err := s.cfg.Nodes.OrgName(ctx)
	if err != nil {
		return "", err
	}
	s.org.Store(&org)
	return org, nil
}
