package server

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/julienschmidt/httprouter"
	"golang.org/x/oauth2"

	"github.com/rootcause/rootcause/db"
)

// Console sign-in with OIDC (beyond the spec): the authorization-code flow
// with PKCE behind GET /login and GET /callback, a server-side session held
// by an HttpOnly cookie, and POST /logout.
//
//   - GET /login[?return_to=/path] sets a short-lived login cookie (HttpOnly,
//     Secure, SameSite=Lax, 10 minutes) holding the state, the nonce, the
//     PKCE verifier and the return path, signed with HMAC-SHA256 under a key
//     drawn at random when the process starts (a restart only invalidates
//     sign-ins in progress), and redirects to the provider's authorization
//     endpoint with code_challenge_method=S256.
//   - GET /callback checks the state against the login cookie, exchanges the
//     code (with the PKCE verifier and the client secret), verifies the ID
//     token exactly as a bearer JWT plus its nonce, and opens a session: the
//     session cookie (HttpOnly, Secure, SameSite=Strict) carries a random
//     256-bit session id; the server keeps the raw ID token in memory and
//     re-verifies it on every request, so the session ends with the ID
//     token's expiry and role changes in the org's oidc config apply at
//     once. Sessions live in memory: a restart signs everyone out.
//   - Requests authenticated by the session cookie (no Authorization
//     header) need, on every method but GET and HEAD, the X-CSRF-Token
//     header equal to the rootcause_csrf cookie (double submit, checked
//     against the server-side session), and a cross-origin Origin header is
//     refused.
//   - POST /logout ends the session (CSRF-checked) and clears the cookies.
//
// Cookies are Secure unless the server's public URL is plain http on a
// loopback address (a developer's machine); with Secure they use the
// __Host- prefix. The public URL is Config.PublicURL, or else the request's
// Host with https (http only for loopback hosts); the redirect URI
// registered at the provider is <public URL>/callback.
//
// These three routes are public by nature (they start authentication) and
// are the documented exception to "only health probes are public": they are
// registered through handleLogin, only when Config.OIDCLogin is set, and
// charged to the per-address failed-authentication limit when they fail.

// ClaimsError is returned by a JWTVerifier for a validly signed, unexpired
// token of the configured issuer whose claims rootcause cannot use (no
// email, an unverified email, no subject). Unlike other authentication
// failures its reason reaches the caller (401 unauthorized): it tells the
// user or the administrator what to fix and reveals nothing to someone who
// cannot present a valid token.
type ClaimsError struct {
	Reason string
}

func (e *ClaimsError) Error() string { return "unauthorized: " + e.Reason }

// Unwrap makes the error carry the unauthorized code.
func (e *ClaimsError) Unwrap() error {
	return &db.Error{Code: db.EUNAUTHORIZED, Message: e.Reason}
}

// OIDCLogin runs the authorization-code flow for the console (implemented by
// oidcauth.Dynamic).
type OIDCLogin interface {
	// AuthCodeURL returns the provider's authorization URL for the code
	// flow with PKCE (S256 challenge of pkceVerifier) and nonce.
	AuthCodeURL(ctx context.Context, redirectURL, state, nonce, pkceVerifier string) (string, error)
	// Exchange redeems code and returns the verified ID token and the
	// principal it maps to; it checks the ID token's nonce.
	Exchange(ctx context.Context, redirectURL, code, pkceVerifier, nonce string) (*LoginResult, error)
}

// LoginResult is a completed sign-in.
type LoginResult struct {
	IDToken   string // raw, verified
	Principal *Principal
	Expiry    time.Time // the ID token's exp
}

// Cookie names (without the __Host- prefix used when Secure).
const (
	cookieLogin   = "rootcause_login"
	cookieSession = "rootcause_session"
	cookieCSRF    = "rootcause_csrf"
	// HeaderCSRF must echo the CSRF cookie on state-changing requests
	// authenticated by the session cookie.
	HeaderCSRF = "X-CSRF-Token"
)

const (
	loginTTL    = 10 * time.Minute
	maxSessions = 10000
)

// oidcState is the console sign-in state of a Server.
type oidcState struct {
	login     OIDCLogin
	verifier  JWTVerifier
	publicURL *url.URL // nil: derived from each request
	key       []byte   // HMAC key of the login cookie

	mu       sync.Mutex
	sessions map[string]*session
}

type session struct {
	idToken   string
	csrf      string
	principal string
	expiry    time.Time
}

// handleLogin registers a public sign-in route: no authentication, no
// rate-limit class, failures charged to the per-address failure limit.
func (s *Server) handleLogin(method, path string, h handlerFunc) {
	s.routeList = append(s.routeList, Route{Method: method, Path: path, Class: rateNone.String(), Public: true})
	s.router.Handle(method, path, func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		if info := infoFrom(r.Context()); info != nil {
			info.route = path
		}
		w.Header().Set("Cache-Control", "no-store")
		r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
		if err := h(w, r, ps); err != nil {
			// Only failures are charged (and, over the limit, answered
			// 429): a valid sign-in is never refused for its address.
			if c := db.ErrorCode(err); c == db.EUNAUTHORIZED || c == db.ETOKENEXPIRED || c == db.EFORBIDDEN || c == db.EINVALID {
				err = s.failures.fail(s.clientIP(r), rateAuthFailure, err)
			}
			Error(w, r, err)
		}
	})
}

// registerOIDCRoutes registers /login, /callback and /logout when the
// server has an OIDCLogin.
func (s *Server) registerOIDCRoutes() {
	if s.cfg.OIDCLogin == nil {
		return
	}
	st := &oidcState{login: s.cfg.OIDCLogin, verifier: s.cfg.JWTVerifier, sessions: map[string]*session{}}
	if st.verifier == nil {
		if v, ok := s.cfg.OIDCLogin.(JWTVerifier); ok {
			st.verifier = v
		}
	}
	if st.verifier == nil {
		panic("server: Config.OIDCLogin needs a JWTVerifier")
	}
	if s.cfg.PublicURL != "" {
		u, err := url.Parse(strings.TrimRight(s.cfg.PublicURL, "/"))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			panic("server: Config.PublicURL must be an absolute http(s) URL")
		}
		st.publicURL = u
	}
	st.key = make([]byte, 32)
	if _, err := rand.Read(st.key); err != nil {
		panic(err)
	}
	s.oidc = st
	s.handleLogin(http.MethodGet, "/login", s.getLogin)
	s.handleLogin(http.MethodGet, "/callback", s.getCallback)
	s.handleLogin(http.MethodPost, "/logout", s.postLogout)
}

// base returns the public origin (and path prefix) of the server for r, and
// whether cookies must be Secure.
func (st *oidcState) base(r *http.Request) (*url.URL, bool) {
	u := st.publicURL
	if u == nil {
		scheme := "https"
		if r.TLS == nil && isLoopbackHost(hostOnly(r.Host)) {
			scheme = "http"
		}
		u = &url.URL{Scheme: scheme, Host: r.Host}
	}
	secure := !(u.Scheme == "http" && isLoopbackHost(u.Hostname()))
	return u, secure
}

func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.Trim(hostport, "[]")
}

func isLoopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

func cookieName(name string, secure bool) string {
	if secure {
		return "__Host-" + name
	}
	return name
}

func randomToken() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// loginState is the signed content of the login cookie.
type loginState struct {
	State    string `json:"s"`
	Nonce    string `json:"n"`
	Verifier string `json:"v"`
	Return   string `json:"r"`
	Expires  int64  `json:"e"`
}

func (st *oidcState) sign(payload []byte) string {
	m := hmac.New(sha256.New, st.key)
	m.Write([]byte("rootcause login v1\x00"))
	m.Write(payload)
	return base64.RawURLEncoding.EncodeToString(payload) + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func (st *oidcState) open(v string) ([]byte, bool) {
	p, sig, ok := strings.Cut(v, ".")
	if !ok {
		return nil, false
	}
	payload, err1 := base64.RawURLEncoding.DecodeString(p)
	mac, err2 := base64.RawURLEncoding.DecodeString(sig)
	if err1 != nil || err2 != nil {
		return nil, false
	}
	m := hmac.New(sha256.New, st.key)
	m.Write([]byte("rootcause login v1\x00"))
	m.Write(payload)
	return payload, hmac.Equal(mac, m.Sum(nil))
}

// safeReturn accepts only a local absolute path, so /login cannot be used
// as an open redirect.
func safeReturn(p string) string {
	if p == "" || !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") || strings.HasPrefix(p, "/\\") ||
		strings.ContainsAny(p, "\r\n\\") {
		return "/"
	}
	if u, err := url.Parse(p); err != nil || u.Scheme != "" || u.Host != "" {
		return "/"
	}
	return p
}

func (s *Server) getLogin(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	st := s.oidc
	base, secure := st.base(r)
	ls := loginState{
		State:    randomToken(),
		Nonce:    randomToken(),
		Verifier: oauth2.GenerateVerifier(),
		Return:   safeReturn(r.URL.Query().Get("return_to")),
		Expires:  s.now().Add(loginTTL).Unix(),
	}
	authURL, err := st.login.AuthCodeURL(r.Context(), base.String()+"/callback", ls.State, ls.Nonce, ls.Verifier)
	if err != nil {
		return err
	}
	payload, err := json.Marshal(ls)
	if err != nil {
		return err
	}
	http.SetCookie(w, &http.Cookie{
		Name: cookieName(cookieLogin, secure), Value: st.sign(payload), Path: "/",
		MaxAge: int(loginTTL / time.Second), HttpOnly: true, Secure: secure, SameSite: http.SameSiteLaxMode,
	})
	http.Redirect(w, r, authURL, http.StatusFound)
	return nil
}

var errLoginState = db.Errorf(db.EUNAUTHORIZED, "sign-in state missing, expired or not matching; start again at /login")

func (s *Server) getCallback(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	st := s.oidc
	base, secure := st.base(r)
	name := cookieName(cookieLogin, secure)
	// The login cookie is single-use whatever happens next.
	http.SetCookie(w, &http.Cookie{Name: name, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, Secure: secure, SameSite: http.SameSiteLaxMode})

	q := r.URL.Query()
	if e := q.Get("error"); e != "" {
		return db.Errorf(db.EUNAUTHORIZED, "the identity provider refused the sign-in: %s", sanitize(e, 64))
	}
	c, err := r.Cookie(name)
	if err != nil {
		return errLoginState
	}
	payload, ok := st.open(c.Value)
	if !ok {
		return errLoginState
	}
	var ls loginState
	if err := json.Unmarshal(payload, &ls); err != nil || s.now().Unix() > ls.Expires {
		return errLoginState
	}
	if subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(ls.State)) != 1 {
		return errLoginState
	}
	code := q.Get("code")
	if code == "" || len(code) > 4096 {
		return db.Errorf(db.EINVALID, "the callback has no code")
	}
	res, err := st.login.Exchange(r.Context(), base.String()+"/callback", code, ls.Verifier, ls.Nonce)
	if err != nil {
		return err
	}
	now := s.now()
	if !res.Expiry.After(now) {
		return db.Errorf(db.ETOKENEXPIRED, "token expired")
	}
	id, csrf := randomToken(), randomToken()
	st.put(id, &session{idToken: res.IDToken, csrf: csrf, principal: res.Principal.ID, expiry: res.Expiry}, now)
	maxAge := int(res.Expiry.Sub(now) / time.Second)
	http.SetCookie(w, &http.Cookie{
		Name: cookieName(cookieSession, secure), Value: id, Path: "/", MaxAge: maxAge, Expires: res.Expiry,
		HttpOnly: true, Secure: secure, SameSite: http.SameSiteStrictMode,
	})
	// Readable by the console's script, which echoes it in X-CSRF-Token.
	http.SetCookie(w, &http.Cookie{
		Name: cookieName(cookieCSRF, secure), Value: csrf, Path: "/", MaxAge: maxAge, Expires: res.Expiry,
		Secure: secure, SameSite: http.SameSiteStrictMode,
	})
	s.log.LogAttrs(r.Context(), slog.LevelInfo, "audit", slog.String("event", "oidc sign-in"),
		slog.String("principal", res.Principal.ID), slog.String("email", res.Principal.Email),
		slog.String("request_id", RequestID(r.Context())))
	// A same-origin page instead of a redirect: a navigation that started
	// at the provider would not carry the SameSite=Strict cookie on a
	// redirect, while one started by this page does.
	target := html.EscapeString(ls.Return)
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", "default-src 'none'")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, "<!doctype html><meta charset=\"utf-8\"><meta http-equiv=\"refresh\" content=\"0;url=%s\"><title>Signed in</title><p>Signed in. <a href=\"%s\">Continue</a>.</p>\n", target, target)
	return nil
}

func sanitize(s string, n int) string {
	var b strings.Builder
	for _, c := range s {
		if b.Len() >= n {
			break
		}
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' {
			b.WriteRune(c)
		}
	}
	return b.String()
}

func (s *Server) postLogout(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	st := s.oidc
	_, secure := st.base(r)
	if c, err := r.Cookie(cookieName(cookieSession, secure)); err == nil {
		if sess := st.get(c.Value, s.now()); sess != nil {
			if err := st.checkCSRF(r, sess); err != nil {
				return err
			}
			st.delete(c.Value)
		}
	}
	for _, n := range []string{cookieSession, cookieCSRF} {
		http.SetCookie(w, &http.Cookie{Name: cookieName(n, secure), Value: "", Path: "/", MaxAge: -1,
			HttpOnly: n == cookieSession, Secure: secure, SameSite: http.SameSiteStrictMode})
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// put stores a session, first dropping expired ones and, when full, the one
// closest to expiry.
func (st *oidcState) put(id string, sess *session, now time.Time) {
	id = sessionKey(id)
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(st.sessions) >= maxSessions {
		var oldest string
		for k, v := range st.sessions {
			if !v.expiry.After(now) {
				delete(st.sessions, k)
				continue
			}
			if oldest == "" || v.expiry.Before(st.sessions[oldest].expiry) {
				oldest = k
			}
		}
		if len(st.sessions) >= maxSessions && oldest != "" {
			delete(st.sessions, oldest)
		}
	}
	st.sessions[id] = sess
}

func (st *oidcState) get(id string, now time.Time) *session {
	id = sessionKey(id)
	st.mu.Lock()
	defer st.mu.Unlock()
	sess := st.sessions[id]
	if sess == nil {
		return nil
	}
	if !sess.expiry.After(now) {
		delete(st.sessions, id)
		return nil
	}
	return sess
}

func (st *oidcState) delete(id string) {
	id = sessionKey(id)
	st.mu.Lock()
	delete(st.sessions, id)
	st.mu.Unlock()
}

// sessionKey is the map key of a session id: its SHA-256, so that the
// timing of a map lookup reveals nothing about stored session ids.
func sessionKey(id string) string {
	sum := sha256.Sum256([]byte(id))
	return string(sum[:])
}

var errCSRF = db.Errorf(db.EFORBIDDEN, "a request authenticated by the session cookie must send the "+HeaderCSRF+" header equal to the rootcause_csrf cookie")

// checkCSRF refuses a state-changing request without the session's CSRF
// token, and any request whose Origin is not the server's.
func (st *oidcState) checkCSRF(r *http.Request, sess *session) error {
	if o := r.Header.Get("Origin"); o != "" {
		base, _ := st.base(r)
		if !strings.EqualFold(o, base.Scheme+"://"+base.Host) {
			return db.Errorf(db.EFORBIDDEN, "cross-origin request refused")
		}
	}
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return nil
	}
	got := r.Header.Get(HeaderCSRF)
	if got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(sess.csrf)) != 1 {
		return errCSRF
	}
	return nil
}

// cookiePrincipal authenticates a request without an Authorization header
// by its session cookie. handled is false when the request carries no
// session cookie (or the console sign-in is off).
func (s *Server) cookiePrincipal(r *http.Request) (p *Principal, handled bool, err error) {
	st := s.oidc
	if st == nil {
		return nil, false, nil
	}
	_, secure := st.base(r)
	c, cerr := r.Cookie(cookieName(cookieSession, secure))
	if cerr != nil || c.Value == "" {
		return nil, false, nil
	}
	sess := st.get(c.Value, s.now())
	if sess == nil {
		return nil, true, errBadToken
	}
	if err := st.checkCSRF(r, sess); err != nil {
		return nil, true, err
	}
	p, err = st.verifier.Verify(r.Context(), sess.idToken)
	if err != nil {
		if code := db.ErrorCode(err); code == db.EUNAUTHORIZED || code == db.ETOKENEXPIRED {
			st.delete(c.Value) // the session can never work again
		}
		return nil, true, authError(err)
	}
	if p == nil || p.ID == "" || p.Kind == KindLocal {
		return nil, true, errBadToken
	}
	if p.Kind == "" {
		p.Kind = KindOIDC
	}
	return p, true, nil
}
