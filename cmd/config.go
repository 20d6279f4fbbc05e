package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"github.com/rootcause/rootcause/db"
)

// maxConfigFile bounds the file read by `config set` (the API takes 1 MiB).
const maxConfigFile = 1 << 20

func newConfigCommand(v *viper.Viper) *cobra.Command {
	c := &cobra.Command{
		Use:   "config",
		Short: "Read and change team configuration on a server",
		Long: `Reads and changes the hierarchical team configuration through the API of a
running server: ROOTCAUSE_URL with ROOTCAUSE_TOKEN (or --url/--token), or,
when ROOTCAUSE_URL is unset, the local server's socket under --data-dir
(which acts as an admin, so pass --team).

A team token acts on its own team; an admin token or the socket names the
team with --team. Answers are printed as indented JSON; an error prints its
message alone and exits non-zero.`,
	}
	c.AddCommand(
		newConfigGetCommand(v, "effective", "Print the team's effective (merged) config", "/api/v1/config/me/effective"),
		newConfigGetCommand(v, "raw", "Print the lineage and each level's own config", "/api/v1/config/me/raw"),
		newConfigAuditCommand(v),
		newConfigGetCommand(v, "pending", "Print the team's change requests awaiting approval", "/api/v1/config/me/pending"),
		newConfigSetCommand(v),
		newConfigApproveCommand(v),
		newConfigRejectCommand(v),
	)
	return c
}

// configCall sends one request and prints the JSON answer indented.
func configCall(cmd *cobra.Command, v *viper.Viper, cf *clientFlags, method, path string, body any) error {
	c, err := cf.client(cmd, v)
	if err != nil {
		return err
	}
	resp, err := c.send(cmd.Context(), method, path, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("reading the server's answer: %w", err)
	}
	var out bytes.Buffer
	if err := json.Indent(&out, bytes.TrimSpace(raw), "", "  "); err != nil {
		return fmt.Errorf("the server's answer to %s %s is not JSON: %w", method, path, err)
	}
	out.WriteByte('\n')
	_, err = cmd.OutOrStdout().Write(out.Bytes())
	return err
}

// withTeam adds ?team= (and any extra query) to path.
func withTeam(path, team string, q url.Values) string {
	if q == nil {
		q = url.Values{}
	}
	if team != "" {
		q.Set("team", team)
	}
	if len(q) == 0 {
		return path
	}
	return path + "?" + q.Encode()
}

func newConfigGetCommand(v *viper.Viper, name, short, path string) *cobra.Command {
	var cf clientFlags
	var team string
	c := &cobra.Command{
		Use:   name,
		Short: short,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return configCall(cmd, v, &cf, "GET", withTeam(path, team, nil), nil)
		},
	}
	cf.bind(c, v)
	c.Flags().StringVar(&team, "team", "", "team (admin tokens and the socket only)")
	return c
}

func newConfigAuditCommand(v *viper.Viper) *cobra.Command {
	var cf clientFlags
	var team string
	var limit int
	var noFull bool
	c := &cobra.Command{
		Use:   "audit [--limit N] [--no-full]",
		Short: "Print the team's config history, newest first",
		Long: `Prints {"history": [...]}: each applied version with its dotted-path diff and,
unless --no-full, the full snapshot of the team's own config, plus notes of
change requests (submitted, rejected, expired, conflict).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q := url.Values{}
			if cmd.Flags().Changed("limit") {
				q.Set("limit", strconv.Itoa(limit))
			}
			if noFull {
				q.Set("include_full", "false")
			}
			return configCall(cmd, v, &cf, "GET", withTeam("/api/v1/config/me/audit", team, q), nil)
		},
	}
	cf.bind(c, v)
	f := c.Flags()
	f.StringVar(&team, "team", "", "team (admin tokens and the socket only)")
	f.IntVar(&limit, "limit", db.DefaultHistoryLimit, "number of entries (1 to 500)")
	f.BoolVar(&noFull, "no-full", false, "omit full_config snapshots")
	return c
}

func newConfigSetCommand(v *viper.Viper) *cobra.Command {
	var cf clientFlags
	var team string
	c := &cobra.Command{
		Use:   "set FILE|-",
		Short: "Apply a JSON merge patch to the team's config",
		Long: `Sends FILE (or stdin for -) as a JSON Merge Patch (RFC 7396) onto the team's
own config: objects merge, arrays and scalars replace, null removes the key so
the inherited value shows again. Prints the new version, the changed fields and
the effective config, or the change request when the team's changes need
approval.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var rd io.Reader
			if args[0] == "-" {
				rd = cmd.InOrStdin()
			} else {
				f, err := os.Open(args[0])
				if err != nil {
					return fmt.Errorf("reading patch: %w", err)
				}
				defer f.Close()
				rd = f
			}
			buf, err := io.ReadAll(io.LimitReader(rd, maxConfigFile+1))
			if err != nil {
				return fmt.Errorf("reading patch: %w", err)
			}
			if len(buf) > maxConfigFile {
				return fmt.Errorf("the patch is larger than %d bytes", maxConfigFile)
			}
			if !json.Valid(buf) {
				return fmt.Errorf("%s is not valid JSON", args[0])
			}
			return configCall(cmd, v, &cf, "PUT", withTeam("/api/v1/config/me", team, nil), json.RawMessage(buf))
		},
	}
	cf.bind(c, v)
	c.Flags().StringVar(&team, "team", "", "team (admin tokens and the socket only)")
	return c
}

func newConfigApproveCommand(v *viper.Viper) *cobra.Command {
	var cf clientFlags
	c := &cobra.Command{
		Use:   "approve ID",
		Short: "Approve and apply a change request (approvers, admin tokens or the local socket)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return configCall(cmd, v, &cf, "POST", "/api/v1/admin/change-requests/"+url.PathEscape(args[0])+"/approve", nil)
		},
	}
	cf.bind(c, v)
	return c
}

func newConfigRejectCommand(v *viper.Viper) *cobra.Command {
	var cf clientFlags
	var reason string
	c := &cobra.Command{
		Use:   "reject ID --reason R",
		Short: "Reject a change request (approvers, admin tokens or the local socket)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if reason == "" {
				return fmt.Errorf("--reason is required")
			}
			return configCall(cmd, v, &cf, "POST", "/api/v1/admin/change-requests/"+url.PathEscape(args[0])+"/reject",
				map[string]string{"reason": reason})
		},
	}
	cf.bind(c, v)
	c.Flags().StringVar(&reason, "reason", "", "why the change is rejected (required)")
	return c
}

// changeRequestSweepInterval is how often serve stores the expiry of
// change requests past their 7 days (reads already show them expired).
const changeRequestSweepInterval = 10 * time.Minute

// sweepChangeRequests expires overdue change requests until ctx ends.
func sweepChangeRequests(ctx context.Context, store db.ConfigService, logger *slog.Logger) {
	t := time.NewTicker(changeRequestSweepInterval)
	defer t.Stop()
	for {
		if n, err := store.ExpireChangeRequests(ctx); err != nil && ctx.Err() == nil {
			logger.Error("expiring change requests", "error", err)
		} else if n > 0 {
			logger.Info("change requests expired", "count", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
