package cmd

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/rootcause/rootcause/agent"
	"github.com/rootcause/rootcause/agent/tools"
	"github.com/rootcause/rootcause/db"
	"github.com/rootcause/rootcause/mergeconf"
	"github.com/rootcause/rootcause/notify"
)

// newRuntime wires the investigation runtime: the db as its store, the
// engine the settings ask for, each team's environment built from its
// effective config at the moment a run starts, and the delivery outbox
// written with every final record.
func newRuntime(ctx context.Context, s Settings, store *db.DB, hooks *notify.Worker, logger *slog.Logger, opts ...func(*agent.RuntimeConfig)) (*agent.Runtime, error) {
	res := newResolver()
	engine, err := buildEngine(ctx, s.LLM, res, logger)
	if err != nil {
		return nil, err
	}
	envOpts := agent.EnvironmentOptions{Resolver: res, Logger: logger, Outbound: s.Outbound.Guard()}
	// similar_incidents ranks the team's own completed investigations.
	envOpts.History = func(team string) tools.History { return agent.NewHistory(store, team) }
	rc := agent.RuntimeConfig{
		Store:  store,
		Engine: engine,
		Environment: func(ctx context.Context, team string) (*agent.Environment, error) {
			lineage, err := teamLineage(ctx, store, team)
			if err != nil {
				return nil, err
			}
			return agent.BuildTeamEnvironment(ctx, team, lineage, envOpts)
		},
		Workers:        s.Workers,
		QueueSize:      s.QueueSize,
		DefaultTimeout: s.InvestigationTimeout,
		Retention:      s.Retention,
		A2ATasks:       store, // finished A2A tasks go with the investigations they ran
		Logger:         logger,
	}
	if hooks != nil {
		rc.Outbox = func(inv *db.Investigation, cfg map[string]any) []db.OutboxEntry {
			return notify.Outbox(inv, cfg, s.PublicURL)
		}
		rc.OnFinal = hooks.OnFinal
	}
	for _, o := range opts {
		o(&rc)
	}
	return agent.NewRuntime(rc), nil
}

// teamEffectiveConfig merges the config of team's lineage, root first. A
// node that is not a team is EINVALID: investigations belong to teams.
func teamEffectiveConfig(ctx context.Context, store db.ConfigService, team string) (map[string]any, error) {
	docs, err := teamLineage(ctx, store, team)
	if err != nil {
		return nil, err
	}
	return mergeconf.Effective(docs...), nil
}

// teamLineage returns the own config of each node from the org root down
// to team.
func teamLineage(ctx context.Context, store db.ConfigService, team string) ([]map[string]any, error) {
	lineage, err := store.ConfigLineage(ctx, team, true)
	if err != nil {
		return nil, err
	}
	if len(lineage) == 0 || lineage[len(lineage)-1].Kind != db.KindTeam {
		return nil, &db.Error{Code: db.EINVALID, Field: "team", Message: fmt.Sprintf("%q is not a team", team)}
	}
	docs := make([]map[string]any, 0, len(lineage))
	for _, n := range lineage {
		docs = append(docs, n.Own)
	}
	return docs, nil
}
