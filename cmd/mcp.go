package cmd

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"github.com/rootcause/rootcause/db"
	"github.com/rootcause/rootcause/server"
)

func newMCPCommand(v *viper.Viper) *cobra.Command {
	var (
		cf   clientFlags
		team string
	)
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve rootcause's investigations to an assistant over MCP (stdio)",
		Long: `mcp runs rootcause as a Model Context Protocol server on stdin/stdout, for
assistants and IDEs that start MCP servers as child processes. Its tools are
run_investigation, get_investigation, list_investigations and
get_effective_config; each calls a rootcause server's API:

ROOTCAUSE_URL with ROOTCAUSE_TOKEN (or --url/--token) for a remote server, or,
without them, the local server answering on <data-dir>/rootcause.sock (which
acts as an admin, so give --team). A team token acts on its own team.

Nothing but MCP messages is written to stdout; errors go to stderr. It exits
when stdin closes. Clients that speak MCP over streamable HTTP can call the
server's POST /api/v1/mcp instead, with no local process (see
docs/tool-servers.md).`,
		Example: `  # Claude Desktop / an IDE: command "rootcause", args ["mcp"], env
  ROOTCAUSE_URL=https://rootcause.internal ROOTCAUSE_TOKEN=rct_... rootcause mcp`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := cf.client(cmd, v)
			if err != nil {
				return err
			}
			srv := server.NewMCPServer(&mcpClient{c: c, team: team}, buildFrom(cmd.Context()).Version)
			err = srv.Run(cmd.Context(), &mcp.StdioTransport{})
			if err != nil && (errors.Is(err, context.Canceled) || errors.Is(err, mcp.ErrConnectionClosed)) {
				return nil // the client went away or we were interrupted
			}
			return err
		},
	}
	cf.bind(cmd, v)
	cmd.Flags().StringVar(&team, "team", "", "team the tools act on when a call names none (admin tokens and the local socket)")
	return cmd
}

// mcpClient is the MCP backend of `rootcause mcp`: the server's HTTP API
// through the CLI's client.
type mcpClient struct {
	c    *socketClient
	team string
	// poll is the first interval between status polls (default 500ms,
	// doubling up to 5s).
	poll time.Duration
}

var _ server.MCPBackend = (*mcpClient)(nil)

func (m *mcpClient) path(p, team string, q url.Values) string {
	if team == "" {
		team = m.team
	}
	return withTeam(p, team, q)
}

func (m *mcpClient) Run(ctx context.Context, req server.MCPRunRequest, wait time.Duration) (map[string]any, error) {
	body := map[string]any{"agent_name": req.AgentName, "message": req.Message, "async": true}
	if len(req.Context) > 0 {
		body["context"] = req.Context
	}
	var started map[string]any
	if err := m.c.do(ctx, http.MethodPost, m.path("/api/v1/agents/run", req.Team, nil), body, &started); err != nil {
		return nil, apiErr(err)
	}
	id, _ := started["investigation_id"].(string)
	if id == "" {
		return nil, errors.New("the server's answer carries no investigation_id")
	}
	deadline := time.Now().Add(wait)
	interval := m.poll
	if interval <= 0 {
		interval = 500 * time.Millisecond
	}
	st := started
	for {
		if s, _ := st["status"].(string); db.IsFinal(s) {
			return st, nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			return st, nil
		}
		t := time.NewTimer(min(interval, left))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		interval = min(interval*2, 5*time.Second)
		next, err := m.Status(ctx, req.Team, id)
		if err != nil {
			return nil, err
		}
		st = next
	}
}

func (m *mcpClient) Status(ctx context.Context, team, id string) (map[string]any, error) {
	var out map[string]any
	if err := m.c.do(ctx, http.MethodGet, m.path("/api/v1/agents/status/"+url.PathEscape(id), team, nil), nil, &out); err != nil {
		return nil, apiErr(err)
	}
	return out, nil
}

func (m *mcpClient) List(ctx context.Context, team, status string, limit int) (map[string]any, error) {
	q := url.Values{"limit": {strconv.Itoa(limit)}}
	if status != "" {
		q.Set("status", status)
	}
	var out map[string]any
	if err := m.c.do(ctx, http.MethodGet, m.path("/api/v1/agents/investigations", team, q), nil, &out); err != nil {
		return nil, apiErr(err)
	}
	return out, nil
}

func (m *mcpClient) Effective(ctx context.Context, team string) (map[string]any, error) {
	var out map[string]any
	if err := m.c.do(ctx, http.MethodGet, m.path("/api/v1/config/me/effective", team, nil), nil, &out); err != nil {
		return nil, apiErr(err)
	}
	return out, nil
}

// apiErr gives an API error answer its code, as the in-process endpoint's
// tool errors have.
func apiErr(err error) error {
	var ae *APIError
	if errors.As(err, &ae) && ae.Code != "" {
		return fmt.Errorf("%s: %s", ae.Code, ae.Message)
	}
	return err
}
