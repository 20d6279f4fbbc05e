package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"github.com/rootcause/rootcause/finding"
)

// clientFlags are the flags of commands that call a rootcause server.
type clientFlags struct {
	url   string
	token string
}

func (c *clientFlags) bind(cmd *cobra.Command, v *viper.Viper) {
	cmd.Flags().StringVar(&c.url, "url", "", "server URL (env ROOTCAUSE_URL); default: the local server's socket")
	cmd.Flags().StringVar(&c.token, "token", "", "bearer token (env ROOTCAUSE_TOKEN; prefer the environment: flags show in ps)")
}

func (c *clientFlags) client(cmd *cobra.Command, v *viper.Viper) (*socketClient, error) {
	base, token := c.url, c.token
	if base == "" {
		base = v.GetString("url")
	}
	if token == "" {
		token = v.GetString("token")
	}
	return apiClient(base, token, v.GetString("data_dir"), buildFrom(cmd.Context()).Version)
}

// statusBody is the status answer of an investigation.
type statusBody struct {
	InvestigationID string          `json:"investigation_id"`
	Status          string          `json:"status"`
	Agent           string          `json:"agent"`
	Message         string          `json:"message"`
	PollURL         string          `json:"poll_url"`
	Progress        *progressBody   `json:"progress"`
	Result          *finding.Result `json:"result"`
	ToolsUsed       []string        `json:"tools_used"`
	Error           *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	DurationSeconds float64 `json:"duration_seconds"`
	ElapsedSeconds  float64 `json:"elapsed_seconds"`
}

type progressBody struct {
	CurrentStep    string `json:"current_step"`
	StepsCompleted int    `json:"steps_completed"`
	StepsTotal     int    `json:"steps_total"`
}

func isFinal(status string) bool {
	return status == "completed" || status == "failed" || status == "cancelled"
}

func newRunCommand(v *viper.Viper) *cobra.Command {
	var (
		cf        clientFlags
		agentName string
		ctxv      = contextFlag{}
		async     bool
		asJSON    bool
		team      string
	)
	cmd := &cobra.Command{
		Use:   "run [--agent NAME] [--context key=value]... [--async] [--json] MESSAGE",
		Short: "Start an investigation on a server and wait for its report",
		Long: `Run asks a rootcause server to investigate MESSAGE and waits for the answer,
polling from 1 s and doubling the wait up to 10 s while it shows progress on
stderr; then it prints the report (or the status JSON with --json).

With --async it prints the investigation id and poll URL and returns at once.

The server is ROOTCAUSE_URL with ROOTCAUSE_TOKEN (or --url/--token); without
them, the local server answering on <data-dir>/rootcause.sock.`,
		Example: `  ROOTCAUSE_URL=http://127.0.0.1:8080 ROOTCAUSE_TOKEN=rct_... \
    rootcause run --agent planner --context service=checkout --context namespace=shop "Why is checkout failing?"`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cf.client(cmd, v)
			if err != nil {
				return err
			}
			path := "/api/v1/agents/run"
			if team != "" {
				path += "?team=" + url.QueryEscape(team)
			}
			body := map[string]any{"agent_name": agentName, "message": args[0], "async": true}
			if len(ctxv) > 0 {
				body["context"] = map[string]string(ctxv)
			}
			var started statusBody
			if err := c.do(cmd.Context(), http.MethodPost, path, body, &started); err != nil {
				return err
			}
			if async {
				if asJSON {
					return writeJSONOut(cmd.OutOrStdout(), started)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s\n", started.InvestigationID)
				fmt.Fprintf(cmd.ErrOrStderr(), "investigation %s is %s; poll %s\n", started.InvestigationID, started.Status, started.PollURL)
				return nil
			}
			final, err := pollInvestigation(cmd.Context(), c, started.InvestigationID, team, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			return printStatus(cmd.OutOrStdout(), final, asJSON)
		},
	}
	cf.bind(cmd, v)
	f := cmd.Flags()
	f.StringVar(&agentName, "agent", "planner", "agent to run")
	f.Var(ctxv, "context", "context key=value (service, environment, namespace, severity, related_alert, time_window, hint); repeatable")
	f.BoolVar(&async, "async", false, "print the investigation id and return without waiting")
	f.BoolVar(&asJSON, "json", false, "print JSON instead of a report")
	f.StringVar(&team, "team", "", "team to investigate for (admin tokens and the local socket)")
	return cmd
}

// pollInvestigation polls id until it is final: from 1 s, doubling up to
// 10 s (spec section 8), printing progress changes to progress.
func pollInvestigation(ctx context.Context, c *socketClient, id, team string, progress io.Writer) (*statusBody, error) {
	wait := time.Second
	last := ""
	for {
		var st statusBody
		if err := c.do(ctx, http.MethodGet, statusPath(id, team, ""), nil, &st); err != nil {
			return nil, err
		}
		if isFinal(st.Status) {
			return &st, nil
		}
		line := st.Status
		if st.Progress != nil && st.Progress.CurrentStep != "" {
			line = fmt.Sprintf("%s: %s (%d/%d)", st.Status, st.Progress.CurrentStep, st.Progress.StepsCompleted, st.Progress.StepsTotal)
		}
		if line != last {
			fmt.Fprintf(progress, "… %s\n", line)
			last = line
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("stopped waiting for %s (it keeps running on the server): %w", id, ctx.Err())
		case <-time.After(wait):
		}
		wait = min(wait*2, 10*time.Second)
	}
}

func statusPath(id, team, suffix string) string {
	p := "/api/v1/agents/status/" + url.PathEscape(id) + suffix
	if team != "" {
		p += "?team=" + url.QueryEscape(team)
	}
	return p
}

func printStatus(w io.Writer, st *statusBody, asJSON bool) error {
	if asJSON {
		return writeJSONOut(w, st)
	}
	switch st.Status {
	case "completed":
		return printReport(w, st.Result, st.Agent, st.Message, st.ToolsUsed, st.DurationSeconds)
	case "failed":
		msg := "unknown error"
		if st.Error != nil {
			msg = st.Error.Code + ": " + st.Error.Message
		}
		return fmt.Errorf("investigation %s failed: %s", st.InvestigationID, msg)
	default:
		_, err := fmt.Fprintf(w, "investigation %s is %s\n", st.InvestigationID, st.Status)
		return err
	}
}

func newInvestigationsCommand(v *viper.Viper) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "investigations",
		Short: "List, show and cancel investigations on a server",
		Long: `Investigations reads a team's investigations on a rootcause server and
cancels them: ROOTCAUSE_URL with ROOTCAUSE_TOKEN (or --url/--token), or, when
ROOTCAUSE_URL is unset, the local server's socket under --data-dir (which acts
as an admin, so pass --team). A team token acts on its own team.

Statuses are pending, running, completed, failed and cancelled; a run cut
short by a restart is failed with error code interrupted.`,
	}
	cmd.AddCommand(newInvestigationsListCommand(v), newInvestigationsShowCommand(v), newInvestigationsCancelCommand(v))
	return cmd
}

func newInvestigationsListCommand(v *viper.Viper) *cobra.Command {
	var (
		cf            clientFlags
		status, team  string
		limit, offset int
		asJSON        bool
	)
	cmd := &cobra.Command{
		Use:   "list [--status S] [--limit N] [--offset N] [--json]",
		Short: "List recent investigations, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := cf.client(cmd, v)
			if err != nil {
				return err
			}
			q := url.Values{}
			q.Set("limit", strconv.Itoa(limit))
			q.Set("offset", strconv.Itoa(offset))
			if status != "" {
				q.Set("status", status)
			}
			if team != "" {
				q.Set("team", team)
			}
			var out struct {
				Investigations []struct {
					InvestigationID string    `json:"investigation_id"`
					Status          string    `json:"status"`
					Agent           string    `json:"agent"`
					Message         string    `json:"message"`
					CreatedAt       time.Time `json:"created_at"`
				} `json:"investigations"`
				Pagination struct {
					Total  int `json:"total"`
					Limit  int `json:"limit"`
					Offset int `json:"offset"`
				} `json:"pagination"`
			}
			if err := c.do(cmd.Context(), http.MethodGet, "/api/v1/agents/investigations?"+q.Encode(), nil, &out); err != nil {
				return err
			}
			if asJSON {
				return writeJSONOut(cmd.OutOrStdout(), out)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tSTATUS\tAGENT\tCREATED\tMESSAGE")
			for _, i := range out.Investigations {
				msg := i.Message
				if len(msg) > 60 {
					msg = msg[:57] + "..."
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", i.InvestigationID, i.Status, i.Agent, i.CreatedAt.Format(time.RFC3339), msg)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "%d of %d shown\n", len(out.Investigations), out.Pagination.Total)
			return nil
		},
	}
	cf.bind(cmd, v)
	f := cmd.Flags()
	f.StringVar(&status, "status", "", "only this status: pending, running, completed, failed, cancelled")
	f.IntVar(&limit, "limit", 20, "how many (at most 100)")
	f.IntVar(&offset, "offset", 0, "how many to skip")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	f.StringVar(&team, "team", "", "team (admin tokens and the local socket)")
	return cmd
}

func newInvestigationsShowCommand(v *viper.Viper) *cobra.Command {
	var cf clientFlags
	var asJSON bool
	var team string
	cmd := &cobra.Command{
		Use:   "show ID [--json]",
		Short: "Show an investigation's status or report",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cf.client(cmd, v)
			if err != nil {
				return err
			}
			var raw json.RawMessage
			if err := c.do(cmd.Context(), http.MethodGet, statusPath(args[0], team, ""), nil, &raw); err != nil {
				return err
			}
			if asJSON {
				return writeJSONOut(cmd.OutOrStdout(), raw)
			}
			var st statusBody
			if err := json.Unmarshal(raw, &st); err != nil {
				return fmt.Errorf("decoding the server's answer: %w", err)
			}
			if !isFinal(st.Status) && st.Progress != nil {
				_, err := fmt.Fprintf(cmd.OutOrStdout(), "investigation %s is %s: %s (%d/%d), %.0fs elapsed\n",
					st.InvestigationID, st.Status, st.Progress.CurrentStep, st.Progress.StepsCompleted, st.Progress.StepsTotal, st.ElapsedSeconds)
				return err
			}
			return printStatus(cmd.OutOrStdout(), &st, false)
		},
	}
	cf.bind(cmd, v)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the status JSON")
	cmd.Flags().StringVar(&team, "team", "", "team (admin tokens and the local socket)")
	return cmd
}

func newInvestigationsCancelCommand(v *viper.Viper) *cobra.Command {
	var cf clientFlags
	var team string
	cmd := &cobra.Command{
		Use:   "cancel ID",
		Short: "Cancel a pending or running investigation",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cf.client(cmd, v)
			if err != nil {
				return err
			}
			var st statusBody
			if err := c.do(cmd.Context(), http.MethodPost, statusPath(args[0], team, "/cancel"), nil, &st); err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "investigation %s is %s\n", st.InvestigationID, st.Status)
			return err
		},
	}
	cf.bind(cmd, v)
	cmd.Flags().StringVar(&team, "team", "", "team (admin tokens and the local socket)")
	return cmd
}
