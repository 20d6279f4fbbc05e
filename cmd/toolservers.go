package cmd

import (
	"context"
	"log/slog"

	"github.com/rootcause/rootcause/agent"
	"github.com/rootcause/rootcause/agent/a2a"
	"github.com/rootcause/rootcause/agent/toolserver"
	"github.com/rootcause/rootcause/db"
	"github.com/rootcause/rootcause/mergeconf"
	"github.com/rootcause/rootcause/secretref"
)

// newToolServers returns the registry of the organization's tool servers
// (tool_servers) and peer agents (a2a_peers); Close it on shutdown to stop
// stdio children.
func newToolServers(store *db.DB, res secretref.Resolver, version string, logger *slog.Logger) *toolserver.Registry {
	peers := a2a.NewPeers(a2a.Options{Resolver: res, Logger: logger})
	return toolserver.NewRegistry(toolserver.Options{
		Config: func(ctx context.Context) (map[string]any, error) {
			org, err := store.OrgName(ctx)
			if err != nil {
				return nil, err
			}
			lineage, err := store.ConfigLineage(ctx, org, true)
			if err != nil {
				return nil, err
			}
			docs := make([]map[string]any, 0, len(lineage))
			for _, n := range lineage {
				docs = append(docs, n.Own)
			}
			return mergeconf.Effective(docs...), nil
		},
		// Servers defined at any level (org root, groups) are listed,
		// refreshed and known by name.
		Levels: func(ctx context.Context) ([]toolserver.LevelConfig, error) {
			nodes, err := store.ListNodes(ctx)
			if err != nil {
				return nil, err
			}
			var out []toolserver.LevelConfig
			for _, kind := range []string{db.KindOrg, db.KindGroup} {
				for _, n := range nodes {
					if n.Kind != kind {
						continue
					}
					lineage, err := store.ConfigLineage(ctx, n.Name, true)
					if err != nil {
						return nil, err
					}
					docs := make([]map[string]any, 0, len(lineage))
					for _, l := range lineage {
						docs = append(docs, l.Own)
					}
					out = append(out, toolserver.LevelConfig{Node: n.Name, Config: mergeconf.Effective(docs...)})
				}
			}
			return out, nil
		},
		Resolver: res,
		Peers:    peers.Tools,
		Version:  version,
		Logger:   logger,
	})
}

// withToolServers adds the tools of the team's mcp_servers and a2a_agents
// to every environment the runtime builds.
func withToolServers(reg *toolserver.Registry) func(*agent.RuntimeConfig) {
	return func(rc *agent.RuntimeConfig) {
		build := rc.Environment
		rc.Environment = func(ctx context.Context, team string) (*agent.Environment, error) {
			env, err := build(ctx, team)
			if err != nil {
				return nil, err
			}
			cat, err := reg.CatalogFor(ctx, env.Catalog, env.Config)
			if err != nil {
				if env.Close != nil {
					env.Close()
				}
				return nil, err
			}
			env.Catalog = cat
			return env, nil
		}
	}
}
