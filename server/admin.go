package server

import (
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/rootcause/rootcause/db"
)

// registerAdminRoutes registers the organization-wide routes of contract
// section 2. The node-config and change-request routes are added by their
// own files.
func (s *Server) registerAdminRoutes() {
	s.handle(http.MethodPost, "/api/v1/admin/nodes", db.PermAdminWrite, rateWrite, s.postNode, withMaxBody(64<<10))
	s.handle(http.MethodGet, "/api/v1/admin/nodes", db.PermAdminRead, rateRead, s.getNodes)
	s.handle(http.MethodGet, "/api/v1/admin/teams", db.PermAdminRead, rateRead, s.getTeams)
	s.handle(http.MethodPost, "/api/v1/admin/tokens", db.PermAdminWrite, rateWrite, s.postToken, withMaxBody(64<<10))
	s.handle(http.MethodGet, "/api/v1/admin/tokens", db.PermAdminRead, rateRead, s.getTokens)
	s.handle(http.MethodPost, "/api/v1/admin/tokens/revoke", db.PermAdminWrite, rateWrite, s.postRevokeToken, withMaxBody(64<<10))
	s.handle(http.MethodGet, "/api/v1/admin/backup", db.PermAdminRead, rateRead, s.getBackup)
}

// nodeView is a node in admin answers; parent is null for the org root.
type nodeView struct {
	Name      string    `json:"name"`
	Parent    *string   `json:"parent"`
	Kind      string    `json:"kind"`
	Version   int64     `json:"version"`
	CreatedAt time.Time `json:"created_at"`
}

func viewNode(n *db.Node) nodeView {
	v := nodeView{Name: n.Name, Kind: n.Kind, Version: n.Version, CreatedAt: n.CreatedAt.UTC()}
	if n.Parent != "" {
		p := n.Parent
		v.Parent = &p
	}
	return v
}

type createNodeRequest struct {
	Name   string `json:"name"`
	Parent string `json:"parent"`
	Kind   string `json:"kind"`
}

// postNode creates a group or team. An omitted parent means the org root.
func (s *Server) postNode(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	var req createNodeRequest
	if err := decodeJSON(w, r, &req, strictFields); err != nil {
		return err
	}
	if req.Name == "" {
		return missingField("name")
	}
	switch req.Kind {
	case "":
		return missingField("kind")
	case db.KindGroup, db.KindTeam:
	default:
		return &db.Error{Code: db.EINVALID, Field: "kind",
			Message: fmt.Sprintf("field kind: must be %q or %q, not %q", db.KindGroup, db.KindTeam, req.Kind)}
	}
	if req.Parent == "" {
		org, err := s.orgName(r.Context())
		if err != nil {
			return fmt.Errorf("finding the org root: %w", err)
		}
		req.Parent = org
	}
	n, err := s.cfg.Nodes.CreateNode(r.Context(), db.Node{Name: req.Name, Parent: req.Parent, Kind: req.Kind})
	if err != nil {
		return err
	}
	s.audit(r, "node created", slog.String("node", n.Name), slog.String("kind", n.Kind), slog.String("parent", n.Parent))
	return writeJSON(w, http.StatusCreated, viewNode(n))
}

func (s *Server) getNodes(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	nodes, err := s.cfg.Nodes.ListNodes(r.Context())
	if err != nil {
		return err
	}
	out := make([]nodeView, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, viewNode(n))
	}
	return writeJSON(w, http.StatusOK, struct {
		Nodes []nodeView `json:"nodes"`
	}{out})
}

// teamView is a team in GET /api/v1/admin/teams.
type teamView struct {
	Name      string    `json:"name"`
	Parent    string    `json:"parent"`
	Version   int64     `json:"version"`
	CreatedAt time.Time `json:"created_at"`
}

func (s *Server) getTeams(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	nodes, err := s.cfg.Nodes.ListNodes(r.Context())
	if err != nil {
		return err
	}
	out := []teamView{}
	for _, n := range nodes {
		if n.Kind == db.KindTeam {
			out = append(out, teamView{Name: n.Name, Parent: n.Parent, Version: n.Version, CreatedAt: n.CreatedAt.UTC()})
		}
	}
	return writeJSON(w, http.StatusOK, struct {
		Teams []teamView `json:"teams"`
	}{out})
}

// tokenView is a token's metadata in admin answers; never the secret.
type tokenView struct {
	ID          string     `json:"token_id"`
	Kind        string     `json:"kind"`
	Team        *string    `json:"team"`
	Name        string     `json:"name,omitempty"`
	Permissions []string   `json:"permissions"`
	CreatedAt   time.Time  `json:"created_at"`
	ExpiresAt   *time.Time `json:"expires_at"`
	LastUsedAt  *time.Time `json:"last_used_at"`
	RevokedAt   *time.Time `json:"revoked_at"`
}

func viewToken(t *db.Token) tokenView {
	v := tokenView{
		ID: t.ID, Kind: t.Kind, Name: t.Name, Permissions: t.Permissions,
		CreatedAt: t.CreatedAt.UTC(), ExpiresAt: utcPtr(t.ExpiresAt),
		LastUsedAt: utcPtr(t.LastUsedAt), RevokedAt: utcPtr(t.RevokedAt),
	}
	if v.Permissions == nil {
		v.Permissions = []string{}
	}
	if t.Team != "" {
		team := t.Team
		v.Team = &team
	}
	return v
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

type issueTokenRequest struct {
	Kind  string `json:"kind"`
	Team  string `json:"team"`
	Write *bool  `json:"write"`
	Name  string `json:"name"`
	TTL   string `json:"ttl"`
}

// issuedToken is the answer of POST /api/v1/admin/tokens: the only answer
// that ever carries the secret.
type issuedToken struct {
	Token string `json:"token"`
	tokenView
}

func (s *Server) postToken(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	var req issueTokenRequest
	if err := decodeJSON(w, r, &req, strictFields); err != nil {
		return err
	}
	ireq := db.IssueTokenRequest{Kind: req.Kind, Name: req.Name}
	switch req.Kind {
	case "":
		return missingField("kind")
	case db.TokenTeam:
		if req.Team == "" {
			return missingField("team")
		}
		ireq.Team = req.Team
		ireq.Write = req.Write != nil && *req.Write
	case db.TokenAdmin:
		if req.Team != "" {
			return &db.Error{Code: db.EINVALID, Field: "team", Message: "field team: not allowed for an admin token"}
		}
		if req.Write != nil && !*req.Write {
			return &db.Error{Code: db.EINVALID, Field: "write", Message: "field write: admin tokens always have admin:write"}
		}
	default:
		return &db.Error{Code: db.EINVALID, Field: "kind", Message: fmt.Sprintf("field kind: must be %q or %q, not %q", db.TokenTeam, db.TokenAdmin, req.Kind)}
	}
	if req.TTL != "" {
		ttl, err := parseTTL(req.TTL)
		if err != nil {
			return &db.Error{Code: db.EINVALID, Field: "ttl", Message: "field ttl: " + err.Error()}
		}
		ireq.TTL = ttl
	}
	secret, tok, err := s.cfg.Tokens.IssueToken(r.Context(), ireq)
	if err != nil {
		return err
	}
	s.audit(r, "token issued", slog.String("token_id", tok.ID), slog.String("kind", tok.Kind), slog.String("team", tok.Team))
	// The secret must not linger in caches or proxies.
	w.Header().Set("Cache-Control", "no-store")
	return writeJSON(w, http.StatusCreated, issuedToken{Token: secret, tokenView: viewToken(tok)})
}

// parseTTL parses a Go duration ("720h", "90m") or whole days ("30d").
func parseTTL(s string) (time.Duration, error) {
	var d time.Duration
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n <= 0 || n > 36500 {
			return 0, fmt.Errorf("%q is not a duration such as \"720h\" or \"30d\"", s)
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, fmt.Errorf("%q is not a duration such as \"720h\" or \"30d\"", s)
		}
	}
	// Short lifetimes are allowed (down to a second) so that expiry can be
	// exercised; the CLI applies the same rule offline.
	if d < time.Second {
		return 0, fmt.Errorf("must be at least one second, not %q", s)
	}
	return d, nil
}

func (s *Server) getTokens(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	toks, err := s.cfg.Tokens.ListTokens(r.Context())
	if err != nil {
		return err
	}
	out := make([]tokenView, 0, len(toks))
	for _, t := range toks {
		out = append(out, viewToken(t))
	}
	return writeJSON(w, http.StatusOK, struct {
		Tokens []tokenView `json:"tokens"`
	}{out})
}

type revokeRequest struct {
	TokenID string `json:"token_id"`
}

type revokeResponse struct {
	TokenID   string    `json:"token_id"`
	RevokedAt time.Time `json:"revoked_at"`
}

func (s *Server) postRevokeToken(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	var req revokeRequest
	if err := decodeJSON(w, r, &req, strictFields); err != nil {
		return err
	}
	if req.TokenID == "" {
		return missingField("token_id")
	}
	if strings.Contains(req.TokenID, ".") {
		// A whole token (id.secret) pasted by mistake: refuse rather than
		// risk echoing or logging the secret.
		return &db.Error{Code: db.EINVALID, Field: "token_id", Message: "field token_id: give the token id only, not the whole token"}
	}
	if err := s.cfg.Tokens.RevokeToken(r.Context(), req.TokenID); err != nil {
		return err
	}
	revokedAt := s.now().UTC()
	if toks, err := s.cfg.Tokens.ListTokens(r.Context()); err == nil {
		for _, t := range toks {
			if t.ID == req.TokenID && t.RevokedAt != nil {
				revokedAt = t.RevokedAt.UTC()
			}
		}
	}
	s.audit(r, "token revoked", slog.String("token_id", req.TokenID))
	return writeJSON(w, http.StatusOK, revokeResponse{TokenID: req.TokenID, RevokedAt: revokedAt})
}

// getBackup streams a consistent copy of the database. Headers go out with
// the first byte, so an error before it is a normal error answer; an error
// after it aborts the connection and the client sees a truncated body.
func (s *Server) getBackup(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	if s.cfg.Backup == nil {
		return db.Errorf(db.EUNAVAILABLE, "backup is not available on this server")
	}
	bw := &backupWriter{w: w, size: -1}
	n, err := s.cfg.Backup(bw)
	if err != nil {
		if !bw.started {
			return fmt.Errorf("writing backup: %w", err)
		}
		s.log.LogAttrs(r.Context(), slog.LevelError, "backup stream failed",
			slog.String("request_id", RequestID(r.Context())), slog.Int64("written", n), slog.String("error", err.Error()))
		panic(http.ErrAbortHandler)
	}
	if bw.size >= 0 && n != bw.size {
		s.log.LogAttrs(r.Context(), slog.LevelError, "backup size mismatch",
			slog.String("request_id", RequestID(r.Context())), slog.Int64("declared", bw.size), slog.Int64("written", n))
		panic(http.ErrAbortHandler)
	}
	if !bw.started {
		bw.start()
	}
	s.audit(r, "backup taken", slog.Int64("bytes", n))
	return nil
}

// backupWriter sends the backup headers on the first write, with
// Content-Length when the BackupFunc announced the size.
type backupWriter struct {
	w       http.ResponseWriter
	size    int64
	started bool
}

// SetSize implements SizeSetter.
func (b *backupWriter) SetSize(n int64) {
	if !b.started && n >= 0 {
		b.size = n
	}
}

func (b *backupWriter) start() {
	b.started = true
	h := b.w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Disposition", `attachment; filename="rootcause.db"`)
	h.Set("Cache-Control", "no-store")
	if b.size >= 0 {
		h.Set("Content-Length", strconv.FormatInt(b.size, 10))
	}
	b.w.WriteHeader(http.StatusOK)
}

func (b *backupWriter) Write(p []byte) (int, error) {
	if !b.started {
		b.start()
	}
	return b.w.Write(p)
}

// missingField is the 400 answer for a required body field that is absent
// or empty.
func missingField(name string) error {
	return &db.Error{Code: db.EINVALID, Field: name, Message: "field " + name + ": required"}
}

// audit logs an administrative action with who did it.
func (s *Server) audit(r *http.Request, msg string, attrs ...slog.Attr) {
	p := PrincipalFrom(r.Context())
	base := []slog.Attr{slog.String("request_id", RequestID(r.Context()))}
	if p != nil {
		base = append(base, slog.String("principal", p.ID), slog.String("auth_kind", p.Kind))
	}
	s.log.LogAttrs(r.Context(), slog.LevelInfo, msg, append(base, attrs...)...)
}
