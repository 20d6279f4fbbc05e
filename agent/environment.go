package agent

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/bundle"
	"github.com/rootcause/rootcause/agent/evidence/live"
	"github.com/rootcause/rootcause/agent/knowledge"
	"github.com/rootcause/rootcause/agent/tools"
	"github.com/rootcause/rootcause/mergeconf"
	"github.com/rootcause/rootcause/outbound"
	"github.com/rootcause/rootcause/secretref"
)

// EnvironmentOptions are the server-wide parts of a team's environment.
type EnvironmentOptions struct {
	// Resolver resolves secret references (tokens_vault_path, api keys).
	Resolver secretref.Resolver
	// Catalog returns the catalog for a team's effective config: built-ins
	// plus the tools of the tool servers and peers it lists. Nil means
	// tools.Builtin().
	Catalog func(ctx context.Context, cfg map[string]any) (*tools.Catalog, error)
	// History answers similar_incidents for a team; nil disables it.
	History func(team string) tools.History
	// Engine picks an engine for a team's config (for example the LLM loop
	// with the team's model); nil, or a nil result, uses the runtime default.
	Engine func(cfg map[string]any) Engine
	Logger *slog.Logger
	// Outbound is the guard of every integration whose address a team can
	// set; nil exempts nothing.
	Outbound *outbound.Guard
	// Scope says for which node secrets resolve (set per team by the
	// caller); nil resolves every reference (offline commands).
	Scope *secretref.Scope
	// OwnTools is the tools object of the team node's own config (see
	// live.Config.OwnTools).
	OwnTools map[string]any
}

// BuildEnvironment builds what a team's investigations reach, from its
// effective config: the incident bundle named by the admin-only
// evidence_bundle key when set (its captured_at is the clock), else the
// live integrations under tools. An integration that is configured but
// cannot be set up is left out and named in Env.SetupErrors, so the run
// reports it as a data gap instead of failing outright.
func BuildEnvironment(ctx context.Context, team string, cfg map[string]any, opts EnvironmentOptions) (*Environment, error) {
	env := &Environment{Config: cfg}
	var err error
	if opts.Catalog != nil {
		env.Catalog, err = opts.Catalog(ctx, cfg)
		if err != nil {
			return nil, fmt.Errorf("building the tool catalog: %w", err)
		}
	} else {
		env.Catalog = tools.Builtin()
	}
	te := &tools.Env{Settings: toolSettings(cfg)}
	if ff, ok := cfg["feature_flags"].(map[string]any); ok {
		te.WriteActions, _ = ff["enable_write_actions"].(bool)
	}
	if opts.History != nil {
		te.History = opts.History(team)
	}
	// Every secret resolved for this environment is recorded so tool
	// errors can be scrubbed of it.
	var rec *secretref.Recorder
	if opts.Resolver != nil {
		rec = &secretref.Recorder{Resolver: opts.Resolver}
		opts.Resolver = rec
	}
	if path, _ := cfg["evidence_bundle"].(string); path != "" {
		b, err := bundle.OpenDir(path)
		if err != nil {
			// The bundle was valid when an admin saved it; it has gone
			// away since. The run fails as data_source_unavailable; the
			// team is not told the server path.
			if opts.Logger != nil {
				opts.Logger.Warn("the evidence bundle of a team cannot be opened", "team", team, "path", path, "err", err)
			}
			env.Unavailable = &evidence.Error{Source: "evidence_bundle", Code: evidence.CodeUnavailable,
				Err: fmt.Errorf("the evidence bundle configured for team %s can no longer be opened; an admin must fix or remove its evidence_bundle setting", team)}
			te.Sources = &evidence.Sources{}
		} else {
			te.Sources = b.Sources(time.Time{})
		}
	} else {
		te.Sources, te.SetupErrors = liveSources(ctx, cfg, opts)
	}
	if rec != nil {
		te.Secrets = rec.Values()
	}
	env.Env = te
	if opts.Engine != nil {
		env.Engine = opts.Engine(cfg)
	}
	return env, nil
}

// BuildTeamEnvironment is BuildEnvironment for a team of the server, from
// the own config documents of its lineage (org root first, the team
// last). Secrets resolve for this node: the Vault prefixes granted along
// the lineage (secret_scopes), the team's own references, and the
// integrations whose address the team wrote itself (contract section 3).
func BuildTeamEnvironment(ctx context.Context, team string, lineage []map[string]any, opts EnvironmentOptions) (*Environment, error) {
	if len(lineage) == 0 {
		return nil, fmt.Errorf("team %s has no config lineage", team)
	}
	sc, err := secretref.ScopeFor(team, lineage)
	if err != nil {
		// A grant that cannot be read grants nothing (validation refuses
		// such entries; an older database may hold one).
		if opts.Logger != nil {
			opts.Logger.Warn("ignoring unreadable secret_scopes", "team", team, "err", err)
		}
		sc = &secretref.Scope{Node: team, Own: map[string]bool{}}
		secretref.VaultRefs(lineage[len(lineage)-1], sc.Own)
	}
	opts.Scope = sc
	opts.OwnTools, _ = lineage[len(lineage)-1]["tools"].(map[string]any)
	return BuildEnvironment(ctx, team, mergeconf.Effective(lineage...), opts)
}

func liveSources(ctx context.Context, cfg map[string]any, opts EnvironmentOptions) (*evidence.Sources, []string) {
	var gaps []string
	// tokens_vault_path holds references; each integration resolves the
	// one it uses through its own scoped resolver (live.Config.Tokens).
	tokens := map[string]string{}
	if refs, ok := cfg["tokens_vault_path"].(map[string]any); ok {
		for name, v := range refs {
			if ref, ok := v.(string); ok {
				tokens[name] = ref
			}
		}
	}
	toolsCfg, _ := cfg["tools"].(map[string]any)
	s, err := live.New(ctx, live.Config{Tools: toolsCfg, Resolver: opts.Resolver, Tokens: tokens,
		Outbound: opts.Outbound, Scope: opts.Scope, OwnTools: opts.OwnTools})
	if err != nil {
		for _, line := range strings.Split(err.Error(), "\n") {
			if line != "" {
				gaps = append(gaps, "setup: "+line)
			}
		}
		if opts.Logger != nil {
			opts.Logger.Warn("setting up integrations", "err", err)
		}
	}
	if s == nil {
		s = &evidence.Sources{}
	}
	if ks, ok := cfg["knowledge_source"].(map[string]any); ok && len(ks) > 0 {
		src := map[string][]string{}
		for kind, v := range ks {
			arr, _ := v.([]any)
			for _, x := range arr {
				if str, ok := x.(string); ok {
					src[kind] = append(src[kind], str)
				}
			}
		}
		k, err := knowledge.New(src, nil)
		if err != nil {
			gaps = append(gaps, "setup: knowledge_source: "+err.Error())
		} else if k != nil {
			s.Knowledge = k
		}
	}
	return s, gaps
}

// toolSettings returns the effective tools.<integration> objects.
func toolSettings(cfg map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	if t, ok := cfg["tools"].(map[string]any); ok {
		for k, v := range t {
			if m, ok := v.(map[string]any); ok {
				out[k] = m
			}
		}
	}
	return out
}
