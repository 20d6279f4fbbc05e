package tools

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/rootcause/rootcause/agent/evidence"
)

func knowledgeTools() []Tool {
	agents := []string{AgentAWS, AgentMetrics, AgentCoding, AgentInvestigation}
	return []Tool{
		{
			Spec: Spec{
				Name: "search_runbooks",
				Description: "Full-text search (BM25) of the team's runbooks and documents, split into sections by heading. " +
					"Returns the best sections with their location (path#section) to cite in findings and recommendations.",
				Parameters: evSchema(`{
					"query": {"type": "string", "description": "words describing the problem, e.g. oom memory limit"},
					"limit": {"type": "integer", "minimum": 1, "maximum": 50, "description": "max passages (default 5)"}
				}`, "query"),
				Integration: IntegrationKnowledge, ReadOnly: true, Agents: agents,
			},
			Run: runSearchRunbooks,
		},
		{
			Spec: Spec{
				Name:        "similar_incidents",
				Description: "Find the team's past investigations most like a description of the current problem, with their root causes.",
				Parameters: evSchema(`{
					"query": {"type": "string", "description": "description of the current problem"},
					"limit": {"type": "integer", "minimum": 1, "maximum": 20, "description": "max incidents (default 5)"}
				}`, "query"),
				Integration: IntegrationHistory, ReadOnly: true, Agents: agents,
			},
			Run: runSimilarIncidents,
		},
	}
}

func runSearchRunbooks(ctx context.Context, env *Env, raw json.RawMessage) (any, error) {
	var a struct {
		Query string
		Limit int
	}
	if err := decodeArgs("search_runbooks", raw, &a); err != nil {
		return nil, err
	}
	if env == nil || env.Sources == nil || env.Sources.Knowledge == nil {
		return nil, &evidence.Error{Source: "knowledge", Code: evidence.CodeNotConfigured,
			Err: evMsg("knowledge is not configured for this team (set knowledge_source)")}
	}
	if strings.TrimSpace(a.Query) == "" {
		return nil, evidence.Errorf("search_runbooks", evidence.CodeInvalid, "query is required")
	}
	return env.Sources.Knowledge.Search(ctx, a.Query, evLimit(a.Limit, 5, 50))
}

func runSimilarIncidents(ctx context.Context, env *Env, raw json.RawMessage) (any, error) {
	var a struct {
		Query string
		Limit int
	}
	if err := decodeArgs("similar_incidents", raw, &a); err != nil {
		return nil, err
	}
	if env == nil || env.History == nil {
		return nil, &evidence.Error{Source: "history", Code: evidence.CodeNotConfigured,
			Err: evMsg("the team's past investigations are not available here")}
	}
	if strings.TrimSpace(a.Query) == "" {
		return nil, evidence.Errorf("similar_incidents", evidence.CodeInvalid, "query is required")
	}
	out, err := env.History.Similar(ctx, a.Query, evLimit(a.Limit, 5, 20))
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = []PastIncident{}
	}
	return out, nil
}

// evMsg is a constant error message.
type evMsg string

func (e evMsg) Error() string { return string(e) }
