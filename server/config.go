package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/rootcause/rootcause/agent/tools"
	"github.com/rootcause/rootcause/db"
	"github.com/rootcause/rootcause/mergeconf"
	"github.com/rootcause/rootcause/notify"
)

// The team configuration API (spec 4.4, contract section 2): the caller's
// team's effective, raw and audited config, patches with the approval
// workflow, and the config JSON Schema. Admin routes over any node live in
// admin_config.go.

// configState is the config API's state, built by registerConfigRoutes.
type configState struct {
	store        db.ConfigService
	catalog      *tools.Catalog
	integrations func(string) bool
	cache        *effectiveCache
	bodies       *bodyCache // ETag and gzip of effective configs (conditional.go)
}

// errNeedsApproval is returned by the validation check of a non-admin
// write when the team's effective feature_flags.require_approval is true:
// the transaction aborts and the change becomes a change request instead.
var errNeedsApproval = &db.Error{Code: db.EINVALIDSTATE, Message: "approval required"}

// toolServerLookupTimeout bounds one ToolServerTools call.
const toolServerLookupTimeout = 5 * time.Second

func (s *Server) registerConfigRoutes() {
	store := s.cfg.Configs
	if store == nil {
		store, _ = s.cfg.Nodes.(db.ConfigService)
	}
	s.conf = &configState{
		store:   store,
		catalog: tools.Builtin(),
		integrations: mergeconf.KnownSet(
			tools.IntegrationKubernetes, tools.IntegrationPrometheus, tools.IntegrationLogs,
			tools.IntegrationChanges, tools.IntegrationCloudWatch, tools.IntegrationGitHub,
			tools.IntegrationKnowledge, tools.IntegrationShell, tools.IntegrationDocker,
			tools.IntegrationDatabase, tools.IntegrationHistory,
			tools.SettingsJaeger, tools.SettingsTempo,
		),
		cache:  newEffectiveCache(maxEffectiveCacheEntries),
		bodies: newBodyCache(maxEffectiveCacheEntries),
	}
	s.handle(http.MethodGet, "/api/v1/config/me/effective", db.PermTeamRead, rateRead, s.getEffectiveConfig)
	s.handle(http.MethodGet, "/api/v1/config/me/raw", db.PermTeamRead, rateRead, s.getRawConfig)
	s.handle(http.MethodGet, "/api/v1/config/me/audit", db.PermTeamRead, rateRead, s.getConfigAudit)
	s.handle(http.MethodGet, "/api/v1/config/me/pending", db.PermTeamRead, rateRead, s.getPendingChanges)
	s.handle(http.MethodPut, "/api/v1/config/me", db.PermTeamWrite, rateWrite, s.putConfig)
	s.handle(http.MethodGet, "/api/v1/config/schema", "", rateRead, s.getConfigSchema)
}

// configs returns the config service, or 503 when none is wired.
func (s *Server) configs() (db.ConfigService, error) {
	if s.conf == nil || s.conf.store == nil {
		return nil, db.Errorf(db.EUNAVAILABLE, "configuration is not available on this server")
	}
	return s.conf.store, nil
}

// actorOf is who a principal is in audit entries and change requests.
func actorOf(p *Principal) db.Actor {
	return db.Actor{ID: p.ID, Name: p.Name, Email: p.Email, Local: p.Kind == KindLocal}
}

// levelOf maps a node kind to a validation level.
func levelOf(kind string) string {
	switch kind {
	case db.KindOrg:
		return mergeconf.LevelOrg
	case db.KindGroup:
		return mergeconf.LevelGroup
	}
	return mergeconf.LevelTeam
}

// scopedTeam returns the team node a /config/me request acts on: a team
// principal's own team (naming another is 403), or the ?team= of an admin.
func (s *Server) scopedTeam(r *http.Request) (*db.Node, error) {
	team, err := teamScope(PrincipalFrom(r.Context()), r.URL.Query().Get("team"))
	if err != nil {
		return nil, err
	}
	n, err := s.cfg.Nodes.FindNode(r.Context(), team)
	if err != nil {
		if db.ErrorCode(err) == db.ENOTFOUND {
			return nil, &db.Error{Code: db.ENOTFOUND, Field: "team", Message: "team " + strconv.Quote(team) + " not found"}
		}
		return nil, err
	}
	if n.Kind != db.KindTeam {
		return nil, &db.Error{Code: db.EINVALID, Field: "team", Message: fmt.Sprintf("%q is a %s, not a team; use /api/v1/admin/nodes/%s/config", team, n.Kind, team)}
	}
	return n, nil
}

// effective returns the JSON of node's effective config, with team_name,
// team_node_id (teams only) and org_id filled in, and the node's kind.
//
// The answer is cached per node under the key of its lineage versions (every
// lineage node's name and version), so a change at any level misses the
// cache and a stale merge is never served. To skip even the versions read
// on the hot path, an entry also records the store's ConfigGeneration read
// before it was checked: while the generation is unchanged no version can
// have moved.
func (s *Server) effective(ctx context.Context, node string) (json.RawMessage, string, error) {
	store, err := s.configs()
	if err != nil {
		return nil, "", err
	}
	gen := store.ConfigGeneration()
	e, ok := s.conf.cache.get(node)
	if ok && e.gen == gen {
		return e.body, e.kind, nil
	}
	lin, err := store.ConfigLineage(ctx, node, false)
	if err != nil {
		return nil, "", err
	}
	if key := lineageKey(lin); ok && e.key == key {
		s.conf.cache.put(node, effectiveEntry{key: key, gen: gen, kind: e.kind, body: e.body})
		return e.body, e.kind, nil
	}
	lin, err = store.ConfigLineage(ctx, node, true)
	if err != nil {
		return nil, "", err
	}
	docs := make([]map[string]any, len(lin))
	for i, n := range lin {
		docs[i] = n.Own
	}
	eff := mergeconf.Effective(docs...)
	self := lin[len(lin)-1]
	eff["org_id"] = lin[0].Name
	if self.Kind == db.KindTeam {
		eff["team_name"] = self.Name
		eff["team_node_id"] = self.Name
	}
	b, err := json.Marshal(eff)
	if err != nil {
		return nil, "", fmt.Errorf("encoding effective config: %w", err)
	}
	s.conf.cache.put(node, effectiveEntry{key: lineageKey(lin), gen: gen, kind: self.Kind, body: b})
	return b, self.Kind, nil
}

func lineageKey(lin []db.NodeConfig) string {
	var sb strings.Builder
	for _, n := range lin {
		sb.WriteString(n.Name)
		sb.WriteByte(0)
		sb.WriteString(strconv.FormatInt(n.Version, 10))
		sb.WriteByte(0)
	}
	return sb.String()
}

func (s *Server) getEffectiveConfig(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	// The hot path: no node lookup beyond the cache's own check.
	var requested string
	if r.URL.RawQuery != "" {
		requested = r.URL.Query().Get("team")
	}
	team, err := teamScope(PrincipalFrom(r.Context()), requested)
	if err != nil {
		return err
	}
	b, kind, err := s.effective(r.Context(), team)
	if err != nil {
		if db.ErrorCode(err) == db.ENOTFOUND {
			return &db.Error{Code: db.ENOTFOUND, Field: "team", Message: "team " + strconv.Quote(team) + " not found"}
		}
		return err
	}
	if kind != db.KindTeam {
		return &db.Error{Code: db.EINVALID, Field: "team", Message: fmt.Sprintf("%q is a %s, not a team; use /api/v1/admin/nodes/%s/config", team, kind, team)}
	}
	return writeCachedJSON(w, r, s.conf.bodies, team, b)
}

// writeRawJSON writes already-encoded JSON as writeJSON would.
func writeRawJSON(w http.ResponseWriter, status int, b []byte) error {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)+1))
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(b)
	_, _ = w.Write([]byte{'\n'})
	return nil
}

type rawConfig struct {
	Lineage []string                  `json:"lineage"`
	Configs map[string]map[string]any `json:"configs"`
}

func (s *Server) getRawConfig(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	n, err := s.scopedTeam(r)
	if err != nil {
		return err
	}
	store, err := s.configs()
	if err != nil {
		return err
	}
	lin, err := store.ConfigLineage(r.Context(), n.Name, true)
	if err != nil {
		return err
	}
	out := rawConfig{Lineage: make([]string, len(lin)), Configs: make(map[string]map[string]any, len(lin))}
	for i, l := range lin {
		out.Lineage[i] = l.Name
		out.Configs[l.Name] = l.Own
	}
	return writeJSON(w, http.StatusOK, out)
}

// historyOptions parses ?limit= (1..500, default 50) and ?include_full=
// (default true).
func historyOptions(r *http.Request) (db.HistoryOptions, error) {
	q := r.URL.Query()
	opts := db.HistoryOptions{Limit: db.DefaultHistoryLimit, IncludeFull: true}
	if v := q.Get("limit"); v != "" || q.Has("limit") {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > db.MaxHistoryLimit {
			return opts, &db.Error{Code: db.EINVALID, Field: "limit",
				Message: fmt.Sprintf("query parameter limit: must be an integer from 1 to %d", db.MaxHistoryLimit)}
		}
		opts.Limit = n
	}
	if v := q.Get("include_full"); v != "" || q.Has("include_full") {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return opts, &db.Error{Code: db.EINVALID, Field: "include_full",
				Message: "query parameter include_full: must be true or false"}
		}
		opts.IncludeFull = b
	}
	return opts, nil
}

func (s *Server) writeHistory(w http.ResponseWriter, r *http.Request, node string) error {
	opts, err := historyOptions(r)
	if err != nil {
		return err
	}
	store, err := s.configs()
	if err != nil {
		return err
	}
	h, err := store.ConfigHistory(r.Context(), node, opts)
	if err != nil {
		return err
	}
	out := make([]*db.AuditEntry, 0, len(h))
	for _, e := range h {
		if e != nil && e.Diff == nil {
			c := *e
			c.Diff = map[string]mergeconf.Change{}
			e = &c
		}
		out = append(out, e)
	}
	return writeJSON(w, http.StatusOK, struct {
		History []*db.AuditEntry `json:"history"`
	}{out})
}

func (s *Server) getConfigAudit(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	n, err := s.scopedTeam(r)
	if err != nil {
		return err
	}
	return s.writeHistory(w, r, n.Name)
}

func (s *Server) getPendingChanges(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	n, err := s.scopedTeam(r)
	if err != nil {
		return err
	}
	store, err := s.configs()
	if err != nil {
		return err
	}
	crs, err := store.ListChangeRequests(r.Context(), db.ChangeRequestFilter{Node: n.Name, Status: db.StatusPendingApproval})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, changeRequestList(crs))
}

// changeRequests is the body of the change-request lists.
type changeRequests struct {
	ChangeRequests []*db.ChangeRequest `json:"change_requests"`
}

// changeRequestList returns crs as an answer whose lists are [] when empty,
// never null (the store may return nil).
func changeRequestList(crs []*db.ChangeRequest) changeRequests {
	out := changeRequests{ChangeRequests: make([]*db.ChangeRequest, 0, len(crs))}
	for _, cr := range crs {
		out.ChangeRequests = append(out.ChangeRequests, viewChangeRequest(cr))
	}
	return out
}

// viewChangeRequest returns a copy of cr with approvers [] and changes {}
// when empty, never null.
func viewChangeRequest(cr *db.ChangeRequest) *db.ChangeRequest {
	if cr == nil {
		return nil
	}
	v := *cr
	if v.Approvers == nil {
		v.Approvers = []string{}
	}
	if v.Changes == nil {
		v.Changes = map[string]mergeconf.Change{}
	}
	if v.Patch == nil {
		v.Patch = map[string]any{}
	}
	return &v
}

func (s *Server) getConfigSchema(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) error {
	w.Header().Set("Cache-Control", "public, max-age=300")
	return writeRawJSON(w, http.StatusOK, mergeconf.Schema())
}

// readPatch reads the body as one JSON object (numbers kept exact).
func readPatch(r *http.Request) (map[string]any, error) {
	if r.Body == nil || r.ContentLength == 0 {
		return nil, db.Errorf(db.EINVALID, "request body is empty; expected a JSON object (a merge patch)")
	}
	if err := checkJSONContentType(r); err != nil {
		return nil, err
	}
	buf, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, db.Errorf(db.ETOOLARGE, "request body exceeds %d bytes", mbe.Limit)
		}
		return nil, err
	}
	if err := checkJSONBody(buf); err != nil {
		return nil, err
	}
	patch, err := mergeconf.Decode(buf)
	if err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			return nil, db.Errorf(db.EINVALID, "malformed JSON at byte offset %d", syn.Offset)
		}
		return nil, db.Errorf(db.EINVALID, "request body must be one JSON object (a merge patch): %s",
			strings.TrimPrefix(err.Error(), "decoding config: "))
	}
	return patch, nil
}

// serverToolRE matches a "server:tool" name; its first group is the server.
var serverToolRE = regexp.MustCompile(`^([a-z0-9][a-z0-9_-]{0,62}):([^:/\s]+)$`)

// maxToolServerLookups bounds the tool servers asked about for one write.
const maxToolServerLookups = 16

// serverTools asks the ToolServerTools hook, before any transaction, for
// the tools of each tool server named in a "server:tool" string of patch
// (a key or a value anywhere in it). A server that cannot be asked reports
// no tools, so its names fail validation as unknown tools.
//
// With ToolServerToolsFor set, each server is asked with the definition
// the written node's effective config gives it (after the patch, so one
// admin write may define a server and use it), which covers servers
// defined at a group.
func (s *Server) serverTools(ctx context.Context, node string, patch map[string]any) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	if s.cfg.ToolServerTools == nil && s.cfg.ToolServerToolsFor == nil {
		return out
	}
	var eff map[string]any
	if s.cfg.ToolServerToolsFor != nil && s.conf != nil && s.conf.store != nil {
		if lin, err := s.conf.store.ConfigLineage(ctx, node, true); err == nil && len(lin) > 0 {
			docs := make([]map[string]any, 0, len(lin))
			for _, n := range lin {
				docs = append(docs, n.Own)
			}
			own, _ := mergeconf.Clone(docs[len(docs)-1]).(map[string]any)
			if own == nil {
				own = map[string]any{}
			}
			p, _ := mergeconf.Clone(patch).(map[string]any)
			docs[len(docs)-1] = mergeconf.MergePatch(own, p)
			eff = mergeconf.Effective(docs...)
		}
	}
	var walk func(v any)
	seen := map[string]bool{}
	consider := func(str string) {
		m := serverToolRE.FindStringSubmatch(str)
		if m == nil || len(seen) >= maxToolServerLookups {
			return
		}
		switch m[1] {
		case "a2a", "env", "file", "vault", "http", "https":
			return
		}
		seen[m[1]] = true
	}
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				consider(k)
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		case string:
			consider(x)
		}
	}
	walk(patch)
	for srv := range seen {
		cctx, cancel := context.WithTimeout(ctx, toolServerLookupTimeout)
		var names []string
		var err error
		if eff != nil {
			names, err = s.cfg.ToolServerToolsFor(cctx, eff, srv)
		} else if s.cfg.ToolServerTools != nil {
			names, err = s.cfg.ToolServerTools(cctx, srv)
		}
		cancel()
		if err != nil {
			s.log.Warn("listing a tool server's tools for validation", "server", srv, "error", err)
			continue
		}
		set := make(map[string]bool, len(names))
		for _, n := range names {
			set[n] = true
		}
		out[srv] = set
	}
	return out
}

// checkParams describe a write to validate.
type checkParams struct {
	node        string // the node written
	level       string
	admin       bool
	patch       map[string]any
	serverTools map[string]map[string]bool
	// gate makes the check return errNeedsApproval when the current
	// effective feature_flags.require_approval is true and the patch
	// changes something (after validation, so invalid input is still 400).
	gate bool
}

// configCheck returns the validation run inside the write transaction,
// against the lineage as stored at that moment.
func (s *Server) configCheck(cp checkParams) db.ConfigCheck {
	return func(lineage []map[string]any, newOwn map[string]any) error {
		n := len(lineage)
		own := lineage[n-1]
		// Tool servers and peers are those of the effective config after
		// this change, so one admin patch may define a server and use it.
		after := mergeconf.Effective(append(append([]map[string]any{}, lineage[:n-1]...), newOwn)...)
		toolServer := mergeconf.ToolServersOf(after)
		peer := mergeconf.PeersOf(after)
		opts := mergeconf.Options{
			Level:            cp.level,
			Admin:            cp.admin,
			KnownIntegration: s.conf.integrations,
			ToolServer:       toolServer,
			PeerAgent:        peer,
			KnownTool: func(name string) bool {
				if s.conf.catalog.Has(name) {
					return true
				}
				srv, tool, ok := strings.Cut(name, ":")
				if !ok {
					return false
				}
				if srv == "a2a" {
					return peer(tool)
				}
				if exists, _ := toolServer(srv); !exists {
					return false
				}
				return cp.serverTools[srv][tool]
			},
		}
		if _, err := mergeconf.ValidatePatch(own, cp.patch, opts); err != nil {
			return fieldError(err)
		}
		if err := s.checkWebhookURL(own, newOwn); err != nil {
			return err
		}
		if err := s.guardChecks(cp, lineage, own, newOwn); err != nil {
			return err
		}
		if cp.gate && requiresApproval(mergeconf.Effective(lineage...)) && len(mergeconf.Diff(own, newOwn)) > 0 {
			return errNeedsApproval
		}
		return nil
	}
}

// webhookField is the config key of the completion webhook's URL.
const webhookField = "webhooks.investigation_complete"

// checkWebhookURL holds a webhooks.investigation_complete that a write sets
// or changes to the delivery rules (notify.ValidateURL with the server's
// webhook.allow): https unless the host is allowlisted, no user info, no
// loopback, private or link-local address unless allowlisted. A URL saved
// earlier and left alone is not re-checked here (the allowlist may have
// changed since); it is checked again before every delivery.
func (s *Server) checkWebhookURL(own, newOwn map[string]any) error {
	next, ok := webhookURLOf(newOwn)
	if !ok {
		return nil
	}
	if prev, had := webhookURLOf(own); had && prev == next {
		return nil
	}
	if err := notify.ValidateURL(next, s.cfg.WebhookAllow); err != nil {
		msg := err.Error()
		return &db.Error{Code: db.EVALIDATION, Field: webhookField, Message: webhookField + ": " + msg,
			Details: map[string]any{"field": webhookField, "error": msg}}
	}
	return nil
}

// webhookURLOf returns a document's webhooks.investigation_complete.
func webhookURLOf(doc map[string]any) (string, bool) {
	wh, _ := doc["webhooks"].(map[string]any)
	u, ok := wh["investigation_complete"].(string)
	return u, ok
}

// fieldError turns a mergeconf validation error into the API's error:
// invalid_field with field, or validation_error with details.
func fieldError(err error) error {
	var fe *mergeconf.FieldError
	if !errors.As(err, &fe) {
		return err
	}
	if fe.Code == mergeconf.CodeInvalidField {
		return &db.Error{Code: db.EINVALIDFIELD, Field: fe.Field, Message: fmt.Sprintf("field %s %s", fe.Field, fe.Message)}
	}
	field := fe.Field
	msg := fe.Message
	if field == "" {
		return &db.Error{Code: db.EVALIDATION, Message: msg, Details: map[string]any{"field": "", "error": msg}}
	}
	return &db.Error{Code: db.EVALIDATION, Field: field, Message: field + ": " + msg,
		Details: map[string]any{"field": field, "error": msg}}
}

// requiresApproval reports whether an effective config turns the approval
// workflow on.
func requiresApproval(eff map[string]any) bool {
	ff, _ := eff["feature_flags"].(map[string]any)
	return ff["require_approval"] == true
}

// configUpdated is the 200 answer of a config write.
type configUpdated struct {
	Message         string          `json:"message"`
	Version         int64           `json:"version"`
	ChangedFields   []string        `json:"changed_fields"`
	EffectiveConfig json.RawMessage `json:"effective_config"`
}

// applyConfig validates and applies patch to node, or (gate) submits it for
// approval, and writes the answer.
func (s *Server) applyConfig(w http.ResponseWriter, r *http.Request, node *db.Node, cp checkParams) error {
	store, err := s.configs()
	if err != nil {
		return err
	}
	ctx := r.Context()
	p := PrincipalFrom(ctx)
	patch, err := readPatch(r)
	if err != nil {
		return err
	}
	cp.patch = patch
	cp.level = levelOf(node.Kind)
	cp.node = node.Name
	cp.serverTools = s.serverTools(ctx, node.Name, patch)
	ch, err := store.PatchNodeConfig(ctx, node.Name, patch, actorOf(p), s.configCheck(cp))
	if errors.Is(err, errNeedsApproval) {
		cp.gate = false
		cr, err := store.CreateChangeRequest(ctx, db.ChangeRequestInput{
			Node: node.Name, Patch: patch, By: actorOf(p),
			Message: "change submitted for approval by " + actorOf(p).ChangedBy(),
		}, s.configCheck(cp))
		if err != nil {
			return err
		}
		s.audit(r, "config change submitted for approval", slog.String("node", node.Name), slog.String("change_request_id", cr.ID))
		return writeJSON(w, http.StatusAccepted, viewChangeRequest(cr))
	}
	if err != nil {
		return err
	}
	eff, _, err := s.effective(ctx, node.Name)
	if err != nil {
		return err
	}
	msg := fmt.Sprintf("config updated to version %d", ch.Version)
	if len(ch.ChangedFields) == 0 {
		msg = fmt.Sprintf("no changes; config is at version %d", ch.Version)
	} else {
		s.audit(r, "config changed", slog.String("node", node.Name), slog.String("version", strconv.FormatInt(ch.Version, 10)))
	}
	changed := ch.ChangedFields
	if changed == nil {
		changed = []string{}
	}
	return writeJSON(w, http.StatusOK, configUpdated{Message: msg, Version: ch.Version, ChangedFields: changed, EffectiveConfig: eff})
}

func (s *Server) putConfig(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	n, err := s.scopedTeam(r)
	if err != nil {
		return err
	}
	p := PrincipalFrom(r.Context())
	return s.applyConfig(w, r, n, checkParams{admin: p.IsAdmin(), gate: !p.IsAdmin()})
}

// maxEffectiveCacheEntries bounds the effective-config cache (one entry per
// node at most).
const maxEffectiveCacheEntries = 1024

// effectiveCache holds, per node, the encoded effective config of one set
// of lineage versions. A newer entry replaces the node's; when full, an
// arbitrary entry is evicted.
type effectiveCache struct {
	mu      sync.RWMutex
	max     int
	entries map[string]effectiveEntry
}

type effectiveEntry struct {
	key  string // lineageKey of the versions body was merged from
	gen  uint64 // ConfigGeneration read before key was last confirmed
	kind string // the node's kind
	body json.RawMessage
}

func newEffectiveCache(max int) *effectiveCache {
	return &effectiveCache{max: max, entries: map[string]effectiveEntry{}}
}

func (c *effectiveCache) get(node string) (effectiveEntry, bool) {
	c.mu.RLock()
	e, ok := c.entries[node]
	c.mu.RUnlock()
	return e, ok
}

func (c *effectiveCache) put(node string, e effectiveEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[node]; !ok && len(c.entries) >= c.max {
		for k := range c.entries {
			delete(c.entries, k)
			break
		}
	}
	c.entries[node] = e
}

func (c *effectiveCache) len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.entries)
}
