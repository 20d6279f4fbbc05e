// Package server is rootcause's HTTP API: an httprouter router, bearer-token
// (and later OIDC) authentication, per-principal rate limits, JSON helpers
// and the one error writer that turns every error into the spec's error body.
//
// The same router is served twice: Handler on TCP for remote callers, and
// LocalHandler on the unix socket <data-dir>/rootcause.sock for the CLI. Only
// LocalHandler grants local trust (a full-admin principal); no request
// header can, so a TCP caller can never obtain it.
//
// # Adding routes
//
// Each API area lives in its own file with one registration method, called
// from (*Server).routes in server.go:
//
//	// server/config.go
//	func (s *Server) registerConfigRoutes() {
//		s.handle(http.MethodGet, "/api/v1/config/me/effective", db.PermTeamRead, rateRead, s.getEffectiveConfig)
//		s.handle(http.MethodPut, "/api/v1/config/me", db.PermTeamWrite, rateWrite, s.putConfig)
//	}
//
//	func (s *Server) getEffectiveConfig(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
//		p := PrincipalFrom(r.Context())
//		team, err := requireTeam(p)
//		if err != nil {
//			return err
//		}
//		...
//		return writeJSON(w, http.StatusOK, cfg)
//	}
//
// A handler returns an error instead of writing one; handle passes it to
// Error, which picks the status from the db error code (db.Errorf(db.ENOTFOUND,
// ...) becomes 404). Before the handler runs, handle has authenticated the
// caller (every route registered through handle requires a valid principal,
// even with an empty permission: it fails closed), charged the rate-limit
// class and checked the permission. Only /healthz and /readyz are public,
// through handlePublic. Bodies are read with decodeJSON (1 MiB by default,
// raise or lower it per route with withMaxBody) and written with writeJSON.
// Team-scoped handlers call requireTeam or teamScope so that a team principal
// can never act on another team.
//
// New dependencies (a config service, the investigation engine, an OIDC
// verifier, metrics) are added as fields of Config and wired by cmd/.
//
// httprouter v1 does not allow a static segment and a wildcard at the same
// position: /api/v1/admin/tokens/revoke rules out /api/v1/admin/tokens/:id,
// while /api/v1/admin/nodes/:name/config coexists with /api/v1/admin/nodes.
package server

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/julienschmidt/httprouter"

	"github.com/rootcause/rootcause/db"
	"github.com/rootcause/rootcause/metrics"
	"github.com/rootcause/rootcause/notify"
	"github.com/rootcause/rootcause/outbound"
)

// Headers set on every response.
const (
	HeaderRequestID = "X-Request-Id"
	HeaderVersion   = "X-Rootcause-Version"
)

// BackupFunc writes a consistent copy of the database to w and returns the
// number of bytes written, as (*db.DB).WriteBackup does. If w implements
// SizeSetter, the function should call SetSize with the exact size of the
// copy before its first write (bbolt: tx.Size() inside the read
// transaction), so the response carries Content-Length; otherwise the copy is
// streamed chunked.
type BackupFunc func(w io.Writer) (int64, error)

// SizeSetter is implemented by the writer passed to a BackupFunc; see
// BackupFunc.
type SizeSetter interface {
	SetSize(n int64)
}

// JWTVerifier verifies a bearer JWT (OIDC ID or access token) and returns the
// principal it identifies. It returns a *db.Error with code EUNAUTHORIZED for
// a bad token and ETOKENEXPIRED only for a validly signed expired one.
type JWTVerifier interface {
	Verify(ctx context.Context, raw string) (*Principal, error)
}

// RateLimits are per-minute request limits. Zero means the default, a
// negative value turns the limit off.
type RateLimits struct {
	Read  int // per principal, reads (default 100)
	Write int // per principal, writes (default 20)
	Run   int // per principal, investigation runs (default 10)
	// AuthFailuresPerIP limits failed authentications per client address
	// (RemoteAddr, IPv6 by /64), default 30.
	AuthFailuresPerIP int
}

// Default rate limits, per minute (spec section 8).
const (
	DefaultReadLimit        = 100
	DefaultWriteLimit       = 20
	DefaultRunLimit         = 10
	DefaultAuthFailureLimit = 30
)

// Config holds the dependencies and settings of a Server.
type Config struct {
	Nodes  db.NodeService  // required
	Tokens db.TokenService // required
	// Backup streams the database for GET /api/v1/admin/backup; nil answers
	// 503 unavailable.
	Backup BackupFunc
	// Ready reports whether the server can serve requests (GET /readyz). Nil
	// checks that Nodes answers OrgName.
	Ready func(ctx context.Context) error
	// Investigations runs investigations for the agent API
	// (investigations.go); nil answers 503 unavailable.
	Investigations InvestigationRuntime
	// SyncWait bounds a synchronous run before it answers 202; 0 means
	// DefaultSyncWait.
	SyncWait time.Duration
	// JWTVerifier authenticates bearer JWTs; nil rejects them with 401.
	JWTVerifier JWTVerifier
	// OIDCLogin enables the console's sign-in routes /login, /callback and
	// /logout and session cookies (oidc.go); nil leaves them unregistered.
	OIDCLogin OIDCLogin
	// PublicURL is the server's external base URL (https://rootcause.example.com),
	// used for the OIDC redirect URI <PublicURL>/callback and in the A2A
	// agent card; empty derives it from each request's Host (see oidc.go,
	// toolservers.go).
	PublicURL string

	// Metrics receives request, rate-limit and latency observations and is
	// served at GET /metrics (admin:read); nil turns both off (503).
	Metrics *metrics.Metrics

	Logger     *slog.Logger // nil: slog.Default()
	RateLimits RateLimits
	Version    string           // sent in X-Rootcause-Version; empty: "dev"
	Now        func() time.Time // nil: time.Now

	// Configs stores node configuration, its audit history and change
	// requests (the /api/v1/config and admin config routes); nil uses Nodes
	// when it implements db.ConfigService, as *db.DB does.
	Configs db.ConfigService
	// ToolServerTools lists the tools a configured tool server reports, to
	// validate "server:tool" names in config; nil knows none.
	ToolServerTools func(ctx context.Context, server string) ([]string, error)
	// ToolServerToolsFor, when set, is asked instead of ToolServerTools
	// with the effective config of the node being written (after the
	// write), so that tool servers defined at any level are known.
	ToolServerToolsFor func(ctx context.Context, effective map[string]any, server string) ([]string, error)
	// ToolServers serves the admin tool-server routes (toolservers.go); nil
	// answers 503 unavailable.
	ToolServers ToolServerAdmin
	// Webhooks serves the delivery log, redelivery, the test ping and the
	// signing-secret route (webhooks.go); nil answers 503 unavailable.
	Webhooks WebhookService
	// WebhookAllow is the server setting webhook.allow: the hosts and CIDRs
	// exempt from the SSRF guard. A config write that sets
	// webhooks.investigation_complete must pass notify.ValidateURL with it
	// (the zero value exempts nothing).
	WebhookAllow notify.Allowlist
	// Outbound is the guard of every address a team can set in its config
	// (tools.<integration>.url, .domain, ...), checked when a write sets or
	// changes one; nil builds one from WebhookAllow.
	Outbound *outbound.Guard
	// A2ATasks keeps A2A tasks per team across restarts; nil uses Nodes
	// when it implements A2ATaskStore, as *db.DB does, else memory.
	A2ATasks A2ATaskStore
	// TrustedProxies are the reverse proxies whose X-Forwarded-For names
	// the client address (server setting trusted_proxies); a request from
	// any other peer is judged by its peer address.
	TrustedProxies []netip.Prefix
}

// Server is the HTTP API. Create it with New; it is safe for concurrent use
// once serving.
type Server struct {
	cfg       Config
	log       *slog.Logger
	version   string
	now       func() time.Time
	router    *httprouter.Router
	routeList []Route
	limits    *rateLimiter
	failures  *rateLimiter
	org       atomic.Pointer[string] // cached org root name
	conf      *configState           // config API state (config.go)
	// A2A JSON-RPC handler (toolservers.go), built at first use.
	a2aOnce    sync.Once
	a2aHandler http.Handler
	oidc       *oidcState // console sign-in state (oidc.go); nil when off
	authMe     authMeCache
	// versionValue is X-Rootcause-Version's value (fixedValue).
	versionValue []string
}

// New returns a Server for cfg with every route registered. It panics if a
// required service is missing, since that is a wiring bug.
func New(cfg Config) *Server {
	if cfg.Nodes == nil || cfg.Tokens == nil {
		panic("server: Config.Nodes and Config.Tokens are required")
	}
	s := &Server{cfg: cfg, log: cfg.Logger, version: cfg.Version, now: cfg.Now}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.version == "" {
		s.version = "dev"
	}
	s.versionValue = fixedValue(s.version)
	if s.now == nil {
		s.now = time.Now
	}
	rl := cfg.RateLimits
	s.limits = newRateLimiter(s.now, maxLimiterEntries, map[rateClass]int{
		rateRead:  orDefault(rl.Read, DefaultReadLimit),
		rateWrite: orDefault(rl.Write, DefaultWriteLimit),
		rateRun:   orDefault(rl.Run, DefaultRunLimit),
	})
	s.failures = newRateLimiter(s.now, maxLimiterEntries, map[rateClass]int{
		rateAuthFailure: orDefault(rl.AuthFailuresPerIP, DefaultAuthFailureLimit),
	})

	s.router = httprouter.New()
	s.router.HandleOPTIONS = false // no CORS: OPTIONS is 405 like any other unknown method
	// No cleaned-path redirects: an id holding "../" (/agents/status/..%2F..%2Fadmin%2Fbackup)
	// is a 404, never a redirect to another route that a client follows with its token.
	s.router.RedirectFixedPath = false
	s.router.NotFound = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		Error(w, r, db.Errorf(db.ENOTFOUND, "no route for %s %s", r.Method, r.URL.Path))
	})
	s.router.MethodNotAllowed = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// httprouter lists OPTIONS, which this API does not answer.
		var allow []string
		for _, m := range strings.Split(w.Header().Get("Allow"), ", ") {
			if m != http.MethodOptions && m != "" {
				allow = append(allow, m)
			}
		}
		w.Header().Set("Allow", strings.Join(allow, ", "))
		Error(w, r, &db.Error{Code: EMETHODNOTALLOWED, Message: "method " + r.Method + " not allowed; allowed: " + strings.Join(allow, ", ")})
	})
	s.router.PanicHandler = s.recoverPanic
	s.routes()
	return s
}

func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// routes registers every API area. Each area owns one register method in
// its own file.
func (s *Server) routes() {
	s.registerHealthRoutes()
	s.registerOpenAPIRoutes()
	s.registerMetricsRoutes()
	s.registerAuthRoutes()
	s.registerAdminRoutes()
	s.registerConfigRoutes()
	s.registerAdminConfigRoutes()
	s.registerOIDCRoutes()
	s.registerInvestigationRoutes()
	s.registerWebhookRoutes()
	s.registerToolServerRoutes()
	s.registerMCPRoutes()
}

// Handler returns the handler of the TCP API. Requests through it never get
// local trust.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.serve(w, r, false) })
}

// Routes returns the registered routes in registration order.
func (s *Server) Routes() []Route {
	return append([]Route(nil), s.routeList...)
}

// Route describes a registered route.
type Route struct {
	Method string
	Path   string // httprouter pattern, e.g. /api/v1/admin/nodes/:name/config
	// Permission is the permission the route requires; empty with Public
	// false means any authenticated principal.
	Permission string
	Class      string // rate-limit class: read, write, run, or none (public)
	Public     bool   // no authentication (health probes only)
}

// handlerFunc is the signature of route handlers: an error is written by
// Error, so a handler writes only its successful answer.
type handlerFunc func(w http.ResponseWriter, r *http.Request, p httprouter.Params) error

// routeOption adjusts one route.
type routeOption func(*routeSpec)

type routeSpec struct {
	maxBody int64
}

// withMaxBody sets the route's request body limit in bytes (default 1 MiB).
func withMaxBody(n int64) routeOption { return func(rs *routeSpec) { rs.maxBody = n } }

// DefaultMaxBody is the request body limit of a route without withMaxBody.
const DefaultMaxBody = 1 << 20

// handle registers an authenticated route. perm is the permission required
// (db.PermTeamRead, ...); an empty perm still requires a valid principal.
// Requests are authenticated, rate-limited in class, permission-checked,
// body-limited, and only then passed to h.
func (s *Server) handle(method, path, perm string, class rateClass, h handlerFunc, opts ...routeOption) {
	if class == rateNone {
		panic("server: authenticated route " + method + " " + path + " needs a rate class")
	}
	spec := routeSpec{maxBody: DefaultMaxBody}
	for _, o := range opts {
		o(&spec)
	}
	s.routeList = append(s.routeList, Route{Method: method, Path: path, Permission: perm, Class: class.String()})
	s.router.Handle(method, path, func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		info := infoFrom(r.Context())
		if info != nil {
			info.route = path
		}
		p, err := s.authenticate(r)
		if err != nil {
			if db.ErrorCode(err) == db.ERATELIMITED {
				s.cfg.Metrics.RateLimited(rateAuthFailure.String())
			}
			Error(w, r, err)
			return
		}
		if info != nil {
			info.principal = p.ID
			info.authed = p
		}
		if p.Kind != KindLocal {
			if err := s.limits.charge(w, p.ID, class); err != nil {
				s.cfg.Metrics.RateLimited(class.String())
				Error(w, r, err)
				return
			}
		}
		if perm != "" && !p.Has(perm) {
			Error(w, r, db.Errorf(db.EFORBIDDEN, "this token lacks the %s permission", perm))
			return
		}
		if info == nil {
			r = r.WithContext(context.WithValue(r.Context(), principalKey{}, p))
		}
		if r.ContentLength > spec.maxBody {
			// Refused up front, also on routes whose handler never reads the body.
			Error(w, r, db.Errorf(db.ETOOLARGE, "request body exceeds %d bytes", spec.maxBody))
			return
		}
		if r.Body != http.NoBody { // the server's body of a request without one: nothing to limit
			r.Body = http.MaxBytesReader(w, r.Body, spec.maxBody)
		}
		if err := h(w, r, ps); err != nil {
			Error(w, r, err)
		}
	})
}

// handlePublic registers a route without authentication or rate limits.
// Only health probes may use it.
func (s *Server) handlePublic(method, path string, h handlerFunc) {
	s.routeList = append(s.routeList, Route{Method: method, Path: path, Class: rateNone.String(), Public: true})
	s.router.Handle(method, path, func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		if info := infoFrom(r.Context()); info != nil {
			info.route = path
		}
		r.Body = http.MaxBytesReader(w, r.Body, 0)
		if err := h(w, r, ps); err != nil {
			Error(w, r, err)
		}
	})
}

// serve is the outer middleware of both handlers: request id, version
// header, local-trust checks and the request log line.
//
// Everything serve keeps per request (the shared requestInfo, the
// response writer, the context value and the backing array of the common
// headers' values) is one allocation: an authenticated request is a few
// microseconds of work, and each allocation and its share of garbage
// collection is a visible part of it.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, local bool) {
	start := time.Now()
	st := &requestState{}
	info := &st.info
	fillRequestID(&st.id)
	// The id's text lives in the request's state: the string is made over
	// bytes written once, above, and never again (requestState is not
	// reused), and it keeps the state alive for as long as it is held.
	info.id, info.local, info.log = unsafe.String(&st.id[0], len(st.id)), local, s.log
	rw := &st.rw
	rw.ResponseWriter = w
	h := w.Header()
	h["X-Request-Id"] = rw.headerValue(info.id) // HeaderRequestID, in canonical form
	h["X-Rootcause-Version"] = s.versionValue
	st.ctx = infoContext{Context: r.Context(), info: info}
	// The request copy that carries the context is part of the state too.
	st.req = *r.WithContext(&st.ctx)
	r = &st.req
	rw.ctx = &st.ctx
	defer func() {
		status := rw.status
		if status == 0 {
			status = http.StatusOK
		}
		route := info.route
		if route == "" {
			route = "unmatched"
		}
		end := time.Now()
		latency := end.Sub(start)
		s.cfg.Metrics.ObserveHTTP(route, r.Method, status, latency)
		s.logRequest(r.Context(), end, &requestLine{method: r.Method, route: route, status: status,
			latency: latency, id: info.id, principal: info.principal, bytes: rw.written, local: local})
	}()
	if local {
		if err := checkLocalRequest(r); err != nil {
			Error(rw, r, err)
			return
		}
	}
	s.router.ServeHTTP(rw, r)
}

// requestState is what serve allocates per request; see serve.
type requestState struct {
	info requestInfo
	rw   responseWriter
	ctx  infoContext
	req  http.Request       // the request with ctx as its context
	id   [requestIDLen]byte // the text of info.id
}

// infoContext is the request's context carrying its requestInfo: what
// context.WithValue(parent, infoKey{}, info) would be, allocated with the
// rest of requestState.
type infoContext struct {
	context.Context
	info *requestInfo
}

func (c *infoContext) Value(key any) any {
	if _, ok := key.(infoKey); ok {
		return c.info
	}
	return c.Context.Value(key)
}

// responseWriter records the status and size for the log line and tells
// Error whether headers are already out.
type responseWriter struct {
	http.ResponseWriter
	status  int
	written int64
	// values backs the per-request header values set through headerValue
	// (the request id, the remaining rate limit, a length), so that they
	// cost no allocation each; fixed values are shared (fixedValue).
	values  [4]string
	nvalues int
	// num backs the text of one per-request number (intValue), written
	// once; numUsed says it is taken.
	num     [20]byte
	numUsed bool
	// ctx is the request's context, where writeJSONBody finds the
	// connection's cork (corkOf).
	ctx context.Context
}

// headerValue returns v as a header value slice ([]string{v}), taken from
// rw's backing array while it lasts. The slice's capacity is 1, so an
// Add to the same header copies it rather than writing over the next one.
func (rw *responseWriter) headerValue(v string) []string {
	if rw.nvalues == len(rw.values) {
		return []string{v}
	}
	i := rw.nvalues
	rw.nvalues++
	rw.values[i] = v
	return rw.values[i : i+1 : i+1]
}

// intValue returns the decimal text of n as a header value slice, its
// text in rw's buffer the first time and allocated after that, so that a
// string made over the buffer is never written over.
func (rw *responseWriter) intValue(n int) []string {
	if rw.numUsed {
		return rw.headerValue(strconv.Itoa(n))
	}
	rw.numUsed = true
	b := strconv.AppendInt(rw.num[:0], int64(n), 10)
	if &b[0] != &rw.num[0] { // grown: cannot happen for an int's at most 20 bytes
		return rw.headerValue(string(b))
	}
	return rw.headerValue(unsafe.String(&rw.num[0], len(b)))
}

// setIntHeader sets the header key (canonical form) to the decimal text
// of n, without an allocation when w is the server's responseWriter.
func setIntHeader(w http.ResponseWriter, key string, n int) {
	if rw, ok := w.(*responseWriter); ok {
		w.Header()[key] = rw.intValue(n)
		return
	}
	w.Header()[key] = []string{strconv.Itoa(n)}
}

// setHeader sets the header key, which must be in canonical form
// (textproto.CanonicalMIMEHeaderKey), to v on w: Header().Set without
// canonicalising the key again, and without an allocation when w is the
// server's responseWriter.
func setHeader(w http.ResponseWriter, key, v string) {
	if rw, ok := w.(*responseWriter); ok {
		w.Header()[key] = rw.headerValue(v)
		return
	}
	w.Header()[key] = []string{v}
}

// fixedValue returns v as a header value slice to be made once and shared
// by every answer that carries it (setFixedHeader): its length and
// capacity are 1, so Header.Add copies it rather than appending to it,
// net/http copies the values before writing them, and nothing in this
// package modifies a value slice in place.
func fixedValue(v string) []string { return []string{v}[:1:1] }

// Fixed header values of the common answers.
var (
	valueJSON         = fixedValue("application/json")
	valueNosniff      = fixedValue("nosniff")
	valueVaryEncoding = fixedValue("Accept-Encoding")
	valueNoCache      = fixedValue("private, no-cache")
	valueGzip         = fixedValue("gzip")
)

// setFixedHeader sets the header key (canonical form) to vs, a value made
// by fixedValue: one map assignment, no allocation, no canonicalisation.
func setFixedHeader(w http.ResponseWriter, key string, vs []string) {
	w.Header()[key] = vs
}

func (rw *responseWriter) WriteHeader(code int) {
	if rw.status == 0 {
		rw.status = code
	}
	rw.ResponseWriter.WriteHeader(code)
}

func (rw *responseWriter) Write(b []byte) (int, error) {
	if rw.status == 0 {
		rw.status = http.StatusOK
	}
	n, err := rw.ResponseWriter.Write(b)
	rw.written += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (rw *responseWriter) Unwrap() http.ResponseWriter { return rw.ResponseWriter }

// Flush implements http.Flusher for streaming handlers.
func (rw *responseWriter) Flush() {
	if f, ok := rw.ResponseWriter.(http.Flusher); ok {
		if rw.status == 0 {
			rw.status = http.StatusOK
		}
		f.Flush()
	}
}

// headerWritten reports whether the response status has been sent.
func headerWritten(w http.ResponseWriter) bool {
	for {
		switch x := w.(type) {
		case *responseWriter:
			return x.status != 0
		case interface{ Unwrap() http.ResponseWriter }:
			w = x.Unwrap()
		default:
			return false
		}
	}
}

// requestInfo is the per-request state shared between the middleware, the
// route wrapper and Error.
type requestInfo struct {
	id        string
	local     bool
	route     string
	principal string
	// authed is the authenticated principal, set by handle: keeping it here
	// saves cloning the request for a second context value.
	authed *Principal
	log    *slog.Logger
	// self holds the principal a bearer token authenticates (verifyBearer),
	// allocated with the rest of the request's state, as are the token's
	// identity and the storage of its permissions (db.TokenIdentity).
	self  Principal
	token db.TokenIdentity
	perms [4]string
}

type infoKey struct{}

func infoFrom(ctx context.Context) *requestInfo {
	info, _ := ctx.Value(infoKey{}).(*requestInfo)
	return info
}

// RequestID returns the id of the request ctx belongs to, or "".
func RequestID(ctx context.Context) string {
	if info := infoFrom(ctx); info != nil {
		return info.id
	}
	return ""
}
