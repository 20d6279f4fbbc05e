// Package toolserver connects rootcause to external tool servers (spec
// 4.7): servers speaking the plain HTTP contract (GET /tools, POST
// /tools/{name}, GET /health) and Model Context Protocol servers over
// streamable HTTP or stdio (a supervised child process). Their tools join
// the catalog as "server:tool".
//
// A Registry holds one client per configured server definition (the org's
// tool_servers.<name> objects), caches discovery for RefreshInterval, keeps
// per-server health, and supervises stdio children: started on demand,
// restarted (with backoff) at the next call after a crash, stopped on Close
// (close the session, SIGTERM the process group, SIGKILL after a grace).
package toolserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/tools"
	"github.com/rootcause/rootcause/mergeconf"
	"github.com/rootcause/rootcause/secretref"
)

// Transports of a tool server definition.
const (
	TransportHTTP     = "http"
	TransportMCPHTTP  = "mcp-http"
	TransportMCPStdio = "mcp-stdio"
)

// Defaults of Options and definitions.
const (
	DefaultRefreshInterval = 5 * time.Minute
	DefaultCallTimeout     = 30 * time.Second
	DefaultDiscoverTimeout = 15 * time.Second
	DefaultMaxOutputBytes  = 256 << 10
	DefaultStopGrace       = 3 * time.Second
	// maxTools bounds the tools one server may report.
	maxTools = 512
)

// IntegrationPrefix prefixes the Integration of a tool-server tool:
// "toolserver:<server>".
const IntegrationPrefix = "toolserver:"

// toolNameRE is what a discovered tool name must look like to be usable as
// "server:tool" (config validation, LLM aliases): no colon, slash or space.
var toolNameRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)

// Definition is one tool_servers.<name> object of the effective config.
// Env and Headers map names to secret references, resolved at connect time.
type Definition struct {
	Name      string            `json:"name"`
	Transport string            `json:"transport"`
	URL       string            `json:"url,omitempty"`
	Command   string            `json:"command,omitempty"`
	Args      []string          `json:"args,omitempty"`
	Env       map[string]string `json:"env,omitempty"`
	Headers   map[string]string `json:"headers,omitempty"`
	Timeout   time.Duration     `json:"timeout,omitempty"`
	Enabled   bool              `json:"enabled"`
}

func (d Definition) fingerprint() string {
	b, _ := json.Marshal(d)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

func (d Definition) callTimeout() time.Duration {
	if d.Timeout > 0 {
		return d.Timeout
	}
	return DefaultCallTimeout
}

// Definitions reads tool_servers from an effective config. Entries without a
// known transport are left out. A server is enabled unless enabled is false.
func Definitions(cfg map[string]any) map[string]Definition {
	out := map[string]Definition{}
	servers, _ := cfg["tool_servers"].(map[string]any)
	for name, v := range servers {
		m, ok := v.(map[string]any)
		if !ok {
			continue
		}
		d := Definition{Name: name, Enabled: m["enabled"] != false}
		d.Transport, _ = m["transport"].(string)
		switch d.Transport {
		case TransportHTTP, TransportMCPHTTP, TransportMCPStdio:
		default:
			continue
		}
		d.URL, _ = m["url"].(string)
		d.Command, _ = m["command"].(string)
		d.Args = stringList(m["args"])
		d.Env = stringMap(m["env"])
		d.Headers = stringMap(m["headers"])
		if t, ok := number(m["timeout"]); ok && t > 0 && t < math.MaxInt32 {
			d.Timeout = time.Duration(t * float64(time.Second))
		}
		out[name] = d
	}
	return out
}

// Options configure a Registry.
type Options struct {
	// Config returns the organization's effective config, whose
	// tool_servers are the servers Tools, ServerTools, KnownTool and Status
	// know. Required.
	Config func(ctx context.Context) (map[string]any, error)
	// Levels, if set, returns the effective config of every node that may
	// define tool servers (the org root and each group), so that servers
	// defined at a group are listed by Status, refreshed by Refresh and
	// known by name. Without it only Config's servers are.
	Levels func(ctx context.Context) ([]LevelConfig, error)
	// Resolver resolves header and env secret references; nil allows
	// definitions without references only.
	Resolver secretref.Resolver
	// RefreshInterval is how long discovery is cached; 0 means
	// DefaultRefreshInterval.
	RefreshInterval time.Duration
	// MaxOutputBytes bounds one tool result; 0 means DefaultMaxOutputBytes.
	MaxOutputBytes int
	// StopGrace is how long a stdio child gets after its stdin closes and
	// again after SIGTERM; 0 means DefaultStopGrace.
	StopGrace time.Duration
	// HTTPClient is used for the HTTP contract and MCP streamable HTTP; nil
	// uses a client with no overall timeout (calls carry their own).
	HTTPClient *http.Client
	// Peers, if set, returns extra tools for a team (the a2a:<peer> tools of
	// the peers it lists in a2a_agents); CatalogFor adds them.
	Peers func(ctx context.Context, teamConfig map[string]any) ([]tools.Tool, error)
	// Version is sent as the MCP client version.
	Version string
	Logger  *slog.Logger
	Now     func() time.Time
}

// ToolInfo is a tool a server reports.
type ToolInfo struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	// ReadOnly is false only when the server marks the tool destructive
	// (MCP annotations destructiveHint true, or the HTTP contract's
	// "destructive": true / "read_only": false).
	ReadOnly bool `json:"read_only"`
}

// Health is the last known state of a server.
type Health struct {
	OK        bool      `json:"ok"`
	CheckedAt time.Time `json:"checked_at"`
	Error     string    `json:"error,omitempty"`
	Tools     int       `json:"tool_count"`
}

// LevelConfig is the effective config of one node that defines tool
// servers.
type LevelConfig struct {
	Node   string
	Config map[string]any
}

// Status describes a configured server for the admin API.
type Status struct {
	Name string `json:"name"`
	// DefinedAt is the node (org root or group) whose effective config
	// first has this definition; a group that redefines a server is listed
	// separately.
	DefinedAt string     `json:"defined_at,omitempty"`
	Transport string     `json:"transport"`
	Enabled   bool       `json:"enabled"`
	Health    *Health    `json:"health"`
	Tools     []ToolInfo `json:"tools"`
}

// Result is what a tool-server tool returns to the agent.
type Result struct {
	Server string `json:"server"`
	Tool   string `json:"tool"`
	// Content is the server's answer: the JSON body for the HTTP contract;
	// for MCP the text parts joined by newlines, or the structured content
	// when there is no text.
	Content   any  `json:"content"`
	Truncated bool `json:"truncated,omitempty"`
}

// conn is a transport client of one server.
type conn interface {
	list(ctx context.Context) ([]ToolInfo, error)
	call(ctx context.Context, tool string, args json.RawMessage) (*Result, error)
	ping(ctx context.Context) error
	close() error
}

// Registry is the set of configured tool servers. It is safe for
// concurrent use.
type Registry struct {
	opts Options
	log  *slog.Logger

	mu      sync.Mutex
	servers map[string]*entry // by name + "\x00" + fingerprint
	closed  bool
}

type entry struct {
	def Definition
	key string

	connOnce sync.Once
	conn     conn
	connErr  error

	discover sync.Mutex // one discovery at a time

	mu       sync.Mutex
	tools    []ToolInfo
	fetched  time.Time // last successful discovery
	stale    bool      // a call showed the cached list is wrong
	health   *Health
	lastUsed time.Time
}

// NewRegistry returns a registry; Close stops its children.
func NewRegistry(opts Options) *Registry {
	if opts.RefreshInterval <= 0 {
		opts.RefreshInterval = DefaultRefreshInterval
	}
	if opts.MaxOutputBytes <= 0 {
		opts.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if opts.StopGrace <= 0 {
		opts.StopGrace = DefaultStopGrace
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	return &Registry{opts: opts, log: opts.Logger, servers: map[string]*entry{}}
}

// Close stops every server client: MCP sessions are closed and stdio
// children stopped (their process groups terminated). Later calls fail.
func (r *Registry) Close() error {
	r.mu.Lock()
	r.closed = true
	entries := make([]*entry, 0, len(r.servers))
	for _, e := range r.servers {
		entries = append(entries, e)
	}
	r.servers = map[string]*entry{}
	r.mu.Unlock()
	var wg sync.WaitGroup
	errs := make([]error, len(entries))
	for i, e := range entries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = e.closeConn()
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (e *entry) closeConn() error {
	var c conn
	e.connOnce.Do(func() { e.connErr = errors.New("closed") })
	c = e.conn
	if c == nil {
		return nil
	}
	return c.close()
}

// levelDefinition is a definition and the node it was first found at.
type levelDefinition struct {
	node string
	def  Definition
}

// allDefinitions returns every distinct definition of every level (org
// root first, then groups by name): the same name with a different
// definition at a group is a separate entry.
func (r *Registry) allDefinitions(ctx context.Context) ([]levelDefinition, error) {
	if r.opts.Levels == nil {
		defs, err := r.orgDefinitions(ctx)
		if err != nil {
			return nil, err
		}
		out := make([]levelDefinition, 0, len(defs))
		for _, n := range sortedNames(defs) {
			out = append(out, levelDefinition{def: defs[n]})
		}
		return out, nil
	}
	levels, err := r.opts.Levels(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the tool_servers of the organization's levels: %w", err)
	}
	seen := map[string]bool{}
	var out []levelDefinition
	for _, l := range levels {
		defs := Definitions(l.Config)
		for _, n := range sortedNames(defs) {
			d := defs[n]
			key := d.Name + "\x00" + d.fingerprint()
			if seen[key] {
				continue
			}
			seen[key] = true
			out = append(out, levelDefinition{node: l.Node, def: d})
		}
	}
	return out, nil
}

func sortedNames(defs map[string]Definition) []string {
	names := make([]string, 0, len(defs))
	for n := range defs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ServerToolsIn returns the names of the tools server reports, with the
// definition cfg (a node's effective config) gives it: a server defined at
// a group is asked with the group's definition.
func (r *Registry) ServerToolsIn(ctx context.Context, cfg map[string]any, server string) ([]string, error) {
	def, ok := Definitions(cfg)[server]
	if !ok {
		return nil, &evidence.Error{Source: source(server), Code: evidence.CodeNotFound, Err: fmt.Errorf("tool server %q is not configured under tool_servers", server)}
	}
	ts, err := r.toolsOf(ctx, def)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(ts))
	for _, t := range ts {
		_, tool, _ := strings.Cut(t.Name, ":")
		names = append(names, tool)
	}
	return names, nil
}

// orgDefinitions returns the organization's tool servers.
func (r *Registry) orgDefinitions(ctx context.Context) (map[string]Definition, error) {
	if r.opts.Config == nil {
		return map[string]Definition{}, nil
	}
	cfg, err := r.opts.Config(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the organization's tool_servers: %w", err)
	}
	return Definitions(cfg), nil
}

// entryFor returns the entry of def, creating it. Entries of an older
// definition of the same name that were idle for a minute are closed.
func (r *Registry) entryFor(def Definition) (*entry, error) {
	key := def.Name + "\x00" + def.fingerprint()
	now := r.opts.Now()
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, &evidence.Error{Source: source(def.Name), Code: evidence.CodeUnavailable, Err: errors.New("the tool-server registry is shut down")}
	}
	e, ok := r.servers[key]
	if !ok {
		e = &entry{def: def, key: key}
		r.servers[key] = e
	}
	var retire []*entry
	for k, o := range r.servers {
		if o != e && o.def.Name == def.Name && o.idleSince(now) > time.Minute {
			retire = append(retire, o)
			delete(r.servers, k)
		}
	}
	r.mu.Unlock()
	e.touch(now)
	for _, o := range retire {
		go func() {
			if err := o.closeConn(); err != nil {
				r.log.Warn("stopping a replaced tool server definition", "server", o.def.Name, "error", err)
			}
		}()
	}
	return e, nil
}

func (e *entry) touch(now time.Time) {
	e.mu.Lock()
	e.lastUsed = now
	e.mu.Unlock()
}

func (e *entry) idleSince(now time.Time) time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	return now.Sub(e.lastUsed)
}

// connect returns the entry's transport client, building it once.
func (r *Registry) connect(e *entry) (conn, error) {
	e.connOnce.Do(func() {
		switch e.def.Transport {
		case TransportHTTP:
			e.conn, e.connErr = newHTTPConn(e.def, r.opts.HTTPClient, r.opts.Resolver, r.opts.MaxOutputBytes)
		case TransportMCPHTTP:
			e.conn, e.connErr = newMCPHTTPConn(e.def, r.opts.HTTPClient, r.opts.Resolver, r.opts.MaxOutputBytes, r.opts.Version)
		case TransportMCPStdio:
			e.conn, e.connErr = newStdioConn(e.def, r.opts.Resolver, r.opts.MaxOutputBytes, r.opts.StopGrace, r.opts.Version, r.log)
		default:
			e.connErr = fmt.Errorf("unknown transport %q", e.def.Transport)
		}
	})
	if e.connErr != nil {
		return nil, &evidence.Error{Source: source(e.def.Name), Code: evidence.CodeUnavailable, Err: e.connErr}
	}
	return e.conn, nil
}

// discover returns the entry's tools, from the cache when fresh (and force
// is false).
func (r *Registry) discover(ctx context.Context, e *entry, force bool) ([]ToolInfo, error) {
	e.discover.Lock()
	defer e.discover.Unlock()
	now := r.opts.Now()
	e.mu.Lock()
	fresh := !e.fetched.IsZero() && !e.stale && now.Sub(e.fetched) < r.opts.RefreshInterval
	cached := e.tools
	e.mu.Unlock()
	if fresh && !force {
		return cached, nil
	}
	c, err := r.connect(e)
	var list []ToolInfo
	if err == nil {
		dctx, cancel := context.WithTimeout(ctx, max(e.def.callTimeout(), DefaultDiscoverTimeout))
		list, err = c.list(dctx)
		cancel()
		if err != nil {
			err = typed(e.def.Name, "discovering tools", err)
		}
	}
	var pingErr error
	if err == nil {
		pctx, cancel := context.WithTimeout(ctx, DefaultDiscoverTimeout)
		pingErr = c.ping(pctx)
		cancel()
	}
	h := &Health{CheckedAt: r.opts.Now().UTC()}
	e.mu.Lock()
	defer e.mu.Unlock()
	if err != nil {
		h.Error = err.Error()
		h.Tools = len(e.tools)
		e.health = h
		r.log.Warn("tool server discovery failed", "server", e.def.Name, "error", err)
		return nil, err
	}
	h.OK = pingErr == nil
	if pingErr != nil {
		h.Error = "health check: " + pingErr.Error()
	}
	h.Tools = len(list)
	e.health = h
	e.tools = list
	e.fetched = now
	e.stale = false
	return list, nil
}

// Tools returns the catalog tools of the organization's server named
// server ("server:tool" names). A disabled or unknown server is an error.
func (r *Registry) Tools(ctx context.Context, server string) ([]tools.Tool, error) {
	def, err := r.orgDefinition(ctx, server)
	if err != nil {
		return nil, err
	}
	return r.toolsOf(ctx, def)
}

func (r *Registry) toolsOf(ctx context.Context, def Definition) ([]tools.Tool, error) {
	if !def.Enabled {
		return nil, &evidence.Error{Source: source(def.Name), Code: evidence.CodeNotConfigured, Err: fmt.Errorf("tool server %q is disabled", def.Name)}
	}
	e, err := r.entryFor(def)
	if err != nil {
		return nil, err
	}
	infos, err := r.discover(ctx, e, false)
	if err != nil {
		return nil, err
	}
	out := make([]tools.Tool, 0, len(infos))
	for _, ti := range infos {
		out = append(out, r.tool(e, ti))
	}
	return out, nil
}

// orgDefinition returns the definition of server: the org root's, else
// the first group's that defines it.
func (r *Registry) orgDefinition(ctx context.Context, server string) (Definition, error) {
	defs, err := r.allDefinitions(ctx)
	if err != nil {
		return Definition{}, &evidence.Error{Source: source(server), Code: evidence.CodeUnavailable, Err: err}
	}
	for _, d := range defs {
		if d.def.Name == server {
			return d.def, nil
		}
	}
	return Definition{}, &evidence.Error{Source: source(server), Code: evidence.CodeNotFound, Err: fmt.Errorf("tool server %q is not configured under tool_servers", server)}
}

// Refresh re-discovers the tools of the server now, for every level that
// defines it (their tool lists are concatenated).
func (r *Registry) Refresh(ctx context.Context, server string) ([]ToolInfo, error) {
	defs, err := r.allDefinitions(ctx)
	if err != nil {
		return nil, &evidence.Error{Source: source(server), Code: evidence.CodeUnavailable, Err: err}
	}
	var out []ToolInfo
	found := false
	for _, d := range defs {
		if d.def.Name != server {
			continue
		}
		found = true
		e, err := r.entryFor(d.def)
		if err != nil {
			return nil, err
		}
		ts, err := r.discover(ctx, e, true)
		if err != nil {
			return nil, err
		}
		out = append(out, ts...)
	}
	if !found {
		return nil, &evidence.Error{Source: source(server), Code: evidence.CodeNotFound, Err: fmt.Errorf("tool server %q is not configured under tool_servers", server)}
	}
	return out, nil
}

// ServerTools returns the names of the tools the organization's server
// reports (for server.Config.ToolServerTools and config validation).
func (r *Registry) ServerTools(ctx context.Context, server string) ([]string, error) {
	ts, err := r.Tools(ctx, server)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(ts))
	for _, t := range ts {
		_, tool, _ := strings.Cut(t.Name, ":")
		names = append(names, tool)
	}
	return names, nil
}

// KnownTool reports whether name is "server:tool" for a tool an enabled
// organization server reports exactly (asking the server, within
// DefaultDiscoverTimeout, when its discovery is not cached). Built-in names
// are the caller's to combine.
func (r *Registry) KnownTool(name string) bool {
	srv, tool, ok := strings.Cut(name, ":")
	if !ok || srv == "" || tool == "" {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), DefaultDiscoverTimeout)
	defer cancel()
	names, err := r.ServerTools(ctx, srv)
	return err == nil && slices.Contains(names, tool)
}

// Status lists the organization's servers with health and the tools last
// discovered. Servers never checked are discovered now (concurrently,
// bounded by ctx).
func (r *Registry) Status(ctx context.Context) ([]Status, error) {
	defs, err := r.allDefinitions(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Status, len(defs))
	entries := make([]*entry, len(defs))
	var wg sync.WaitGroup
	for i, ld := range defs {
		def, n := ld.def, ld.def.Name
		out[i] = Status{Name: n, DefinedAt: ld.node, Transport: def.Transport, Enabled: def.Enabled, Tools: []ToolInfo{}}
		if !def.Enabled {
			continue
		}
		e, err := r.entryFor(def)
		if err != nil {
			return nil, err
		}
		entries[i] = e
		e.mu.Lock()
		checked := e.health != nil
		e.mu.Unlock()
		if !checked {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _ = r.discover(ctx, e, false)
			}()
		}
	}
	wg.Wait()
	for i, e := range entries {
		if e == nil {
			continue
		}
		e.mu.Lock()
		if e.health != nil {
			h := *e.health
			out[i].Health = &h
		}
		if e.tools != nil {
			out[i].Tools = slices.Clone(e.tools)
		}
		e.mu.Unlock()
	}
	return out, nil
}

// CatalogFor returns base plus the tools of the enabled servers the team
// lists in mcp_servers (definitions from the team's effective config) and
// the peers' tools of Options.Peers. A server whose discovery fails
// contributes the "server:tool" names the team's agents enable through
// enable_extra_tools, each failing with a data_source_unavailable error when
// called, so that the failure is visible instead of the tool silently
// vanishing from a toolkit.
func (r *Registry) CatalogFor(ctx context.Context, base *tools.Catalog, teamConfig map[string]any) (*tools.Catalog, error) {
	defs := Definitions(teamConfig)
	var extra []tools.Tool
	listed := stringList(teamConfig["mcp_servers"])
	wanted := extraToolNames(teamConfig)
	for _, name := range listed {
		def, ok := defs[name]
		if !ok || !def.Enabled {
			continue
		}
		ts, err := r.toolsOf(ctx, def)
		if err != nil {
			r.log.Warn("tool server unavailable for a team catalog", "server", name, "error", err)
			for _, w := range wanted {
				if srv, tool, _ := strings.Cut(w, ":"); srv == name {
					extra = append(extra, unavailableTool(name, tool, err))
				}
			}
			continue
		}
		extra = append(extra, ts...)
	}
	if r.opts.Peers != nil {
		ps, err := r.opts.Peers(ctx, teamConfig)
		if err != nil {
			return nil, err
		}
		extra = append(extra, ps...)
	}
	if len(extra) == 0 {
		return base, nil
	}
	return base.With(extra), nil
}

// tool builds the catalog tool of one discovered tool.
func (r *Registry) tool(e *entry, ti ToolInfo) tools.Tool {
	def := e.def
	name := def.Name + ":" + ti.Name
	desc := ti.Description
	if desc == "" {
		desc = "Tool " + ti.Name + " of tool server " + def.Name + "."
	}
	toolName := ti.Name
	return tools.Tool{
		Spec: tools.Spec{
			Name:        name,
			Description: desc,
			Parameters:  ti.Parameters,
			Integration: IntegrationPrefix + def.Name,
			ReadOnly:    ti.ReadOnly,
		},
		Run: func(ctx context.Context, _ *tools.Env, args json.RawMessage) (any, error) {
			e.touch(r.opts.Now())
			c, err := r.connect(e)
			if err != nil {
				return nil, err
			}
			cctx, cancel := context.WithTimeout(ctx, def.callTimeout())
			defer cancel()
			res, err := c.call(cctx, toolName, args)
			if err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				if cctx.Err() == context.DeadlineExceeded {
					err = &evidence.Error{Source: source(def.Name), Code: evidence.CodeUnavailable,
						Err: fmt.Errorf("tool %s timed out after %s", name, def.callTimeout())}
				}
				if errors.Is(err, errToolMissing) {
					e.mu.Lock()
					e.stale = true
					e.mu.Unlock()
				}
				e.markCall(r.opts.Now(), err)
				return nil, typed(def.Name, "calling "+ti.Name, err)
			}
			res.Server, res.Tool = def.Name, ti.Name
			return res, nil
		},
	}
}

// markCall records transport failures in the server's health.
func (e *entry) markCall(now time.Time, err error) {
	if evidence.CodeOf(err) != evidence.CodeUnavailable && !isTransport(err) {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.health = &Health{CheckedAt: now.UTC(), Error: err.Error(), Tools: len(e.tools)}
}

func unavailableTool(server, tool string, cause error) tools.Tool {
	return tools.Tool{
		Spec: tools.Spec{
			Name:        server + ":" + tool,
			Description: "Tool " + tool + " of tool server " + server + " (the server is unavailable).",
			Parameters:  json.RawMessage(`{"type":"object"}`),
			Integration: IntegrationPrefix + server,
			ReadOnly:    true,
		},
		Run: func(context.Context, *tools.Env, json.RawMessage) (any, error) {
			return nil, &evidence.Error{Source: source(server), Code: evidence.CodeUnavailable,
				Err: fmt.Errorf("tool server %q is unavailable: %v", server, cause)}
		},
	}
}

func source(server string) string { return IntegrationPrefix + server }

// errToolMissing marks a call to a tool the server no longer has.
var errToolMissing = errors.New("tool not found on the server")

// errTransport marks failures reaching the server.
type transportError struct{ err error }

func (t *transportError) Error() string { return t.err.Error() }
func (t *transportError) Unwrap() error { return t.err }

func isTransport(err error) bool {
	var t *transportError
	return errors.As(err, &t)
}

// typed wraps err as an *evidence.Error of the server, keeping an existing
// code; transport failures and anything uncoded become unavailable.
func typed(server, what string, err error) error {
	var ee *evidence.Error
	if errors.As(err, &ee) {
		return err
	}
	return &evidence.Error{Source: source(server), Code: evidence.CodeUnavailable, Err: fmt.Errorf("%s: %w", what, err)}
}

// extraToolNames returns every "x:y" name in agents.*.enable_extra_tools.
func extraToolNames(cfg map[string]any) []string {
	agents, _ := cfg["agents"].(map[string]any)
	var out []string
	for _, a := range agents {
		m, _ := a.(map[string]any)
		for _, n := range stringList(m["enable_extra_tools"]) {
			if strings.Contains(n, ":") && !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	sort.Strings(out)
	return out
}

// parseToolList validates discovered tools: names usable as "server:tool",
// a JSON-object schema (default: any object), no duplicates.
func parseToolList(server string, in []ToolInfo) ([]ToolInfo, error) {
	if len(in) > maxTools {
		return nil, fmt.Errorf("tool server %q reports %d tools; the limit is %d", server, len(in), maxTools)
	}
	out := make([]ToolInfo, 0, len(in))
	seen := map[string]bool{}
	for _, t := range in {
		if !toolNameRE.MatchString(t.Name) {
			return nil, fmt.Errorf("tool server %q reports a tool named %q: names must match %s", server, cut(t.Name, 80), toolNameRE)
		}
		if seen[t.Name] {
			return nil, fmt.Errorf("tool server %q reports tool %q twice", server, t.Name)
		}
		seen[t.Name] = true
		p := json.RawMessage(strings.TrimSpace(string(t.Parameters)))
		if len(p) == 0 || string(p) == "null" {
			p = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		var obj map[string]any
		if err := json.Unmarshal(p, &obj); err != nil {
			return nil, fmt.Errorf("tool server %q: the parameters of tool %q are not a JSON Schema object", server, t.Name)
		}
		t.Parameters = p
		t.Description = cut(t.Description, 4096)
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && (s[n]&0xC0) == 0x80 {
		n--
	}
	return s[:n] + "…"
}

func stringList(v any) []string {
	var out []string
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
	case []string:
		out = append(out, x...)
	}
	return out
}

func stringMap(v any) map[string]string {
	m, ok := v.(map[string]any)
	if !ok {
		if sm, ok := v.(map[string]string); ok {
			return sm
		}
		return nil
	}
	out := make(map[string]string, len(m))
	for k, e := range m {
		if s, ok := e.(string); ok {
			out[k] = s
		}
	}
	return out
}

func number(v any) (float64, bool) { return mergeconf.Number(v) }

// resolveAll resolves a name → reference map.
func resolveAll(ctx context.Context, res secretref.Resolver, refs map[string]string, what string) (map[string]string, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	if res == nil {
		return nil, fmt.Errorf("%s use secret references but no resolver is configured", what)
	}
	out := make(map[string]string, len(refs))
	for k, ref := range refs {
		v, err := res.Resolve(ctx, ref)
		if err != nil {
			return nil, fmt.Errorf("resolving %s %s: %w", what, k, err)
		}
		out[k] = v
	}
	return out, nil
}
