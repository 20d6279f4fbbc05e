package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"github.com/rootcause/rootcause/db"
)

// tokenJSON is a token as the CLI prints it with --json, the same shape as
// the admin API's token list.
type tokenJSON struct {
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

func tokenToJSON(t *db.Token) tokenJSON {
	out := tokenJSON{ID: t.ID, Kind: t.Kind, Name: t.Name, Permissions: t.Permissions, CreatedAt: t.CreatedAt,
		ExpiresAt: t.ExpiresAt, LastUsedAt: t.LastUsedAt, RevokedAt: t.RevokedAt}
	if t.Team != "" {
		team := t.Team
		out.Team = &team
	}
	if out.Permissions == nil {
		out.Permissions = []string{}
	}
	return out
}

func newTokenCommand(v *viper.Viper) *cobra.Command {
	c := &cobra.Command{
		Use:   "token",
		Short: "Issue, list and revoke API tokens",
		Long: `Manage API tokens. Team tokens have the form <token_id>.<secret> and admin
tokens admin.<secret>; the secret is shown once, at issue, and only a keyed
hash of it is stored.

These commands work through the local socket while the server runs, and
directly on <data-dir>/rootcause.db while it is stopped.`,
	}
	c.AddCommand(newTokenIssueCommand(v), newTokenListCommand(v), newTokenRevokeCommand(v))
	return c
}

func newTokenIssueCommand(v *viper.Viper) *cobra.Command {
	var (
		admin bool
		team  string
		write bool
		name  string
		ttl   string
	)
	c := &cobra.Command{
		Use:   "issue (--admin | --team TEAM [--write]) [--name LABEL] [--ttl DURATION]",
		Short: "Issue a token and print it once",
		Long: `Issues a token and prints it alone on stdout, one line, so it can be piped
or captured: TOKEN=$(rootcause token issue --admin). Metadata (id,
permissions, expiry) goes to stderr. The token cannot be shown again.

--admin     an admin token (admin:read, admin:write, team:read, team:write)
--team T    a token for team node T (team:read; --write adds team:write)
--ttl D     expire after D, a duration such as 90m, 720h or 30d (default: never)`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			req := db.IssueTokenRequest{Name: name}
			switch {
			case admin && team != "":
				return fmt.Errorf("give either --admin or --team, not both")
			case admin:
				if write {
					return fmt.Errorf("--write is for team tokens; admin tokens can always write")
				}
				req.Kind = db.TokenAdmin
			case team != "":
				req.Kind, req.Team, req.Write = db.TokenTeam, team, write
			default:
				return fmt.Errorf("give --admin or --team TEAM")
			}
			if ttl != "" {
				d, err := parseTTL(ttl)
				if err != nil {
					return err
				}
				req.TTL = d
			}
			secret, tok, err := issueToken(cmd.Context(), v, req, ttl)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), secret)
			exp := "never"
			if tok.ExpiresAt != nil {
				exp = tok.ExpiresAt.UTC().Format(time.RFC3339)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "issued %s token %s (permissions %s, expires %s); it is shown only once\n",
				tok.Kind, tok.ID, strings.Join(tok.Permissions, ","), exp)
			return nil
		},
	}
	f := c.Flags()
	f.BoolVar(&admin, "admin", false, "issue an admin token")
	f.StringVar(&team, "team", "", "issue a token for this team node")
	f.BoolVar(&write, "write", false, "grant team:write (team tokens)")
	f.StringVar(&name, "name", "", "a label for the token")
	f.StringVar(&ttl, "ttl", "", "lifetime, such as 90m, 720h or 30d (default: no expiry)")
	return c
}

// parseTTL parses a Go duration or a whole number of days ("30d").
func parseTTL(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err == nil && n > 0 && n <= 36500 {
			return time.Duration(n) * 24 * time.Hour, nil
		}
	} else if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return d, nil
	}
	return 0, fmt.Errorf("--ttl %q is not a positive duration such as 90m, 720h or 30d", s)
}

func issueToken(ctx context.Context, v *viper.Viper, req db.IssueTokenRequest, ttl string) (string, *db.Token, error) {
	dataDir := v.GetString("data_dir")
	c, err := localClient(dataDir, buildFrom(ctx).Version)
	if err != nil {
		return "", nil, err
	}
	if c != nil {
		body := map[string]any{"kind": req.Kind}
		if req.Team != "" {
			body["team"] = req.Team
			body["write"] = req.Write
		}
		if req.Name != "" {
			body["name"] = req.Name
		}
		if req.TTL > 0 {
			body["ttl"] = req.TTL.String()
		}
		var out struct {
			Token string `json:"token"`
			tokenJSON
		}
		if err := c.do(ctx, "POST", "/api/v1/admin/tokens", body, &out); err != nil {
			return "", nil, err
		}
		return out.Token, fromTokenJSON(out.tokenJSON), nil
	}
	d, err := openOffline(dataDir, db.Options{})
	if err != nil {
		return "", nil, err
	}
	defer d.Close()
	return d.IssueToken(ctx, req)
}

func fromTokenJSON(t tokenJSON) *db.Token {
	out := &db.Token{ID: t.ID, Kind: t.Kind, Name: t.Name, Permissions: t.Permissions, CreatedAt: t.CreatedAt,
		ExpiresAt: t.ExpiresAt, LastUsedAt: t.LastUsedAt, RevokedAt: t.RevokedAt}
	if t.Team != nil {
		out.Team = *t.Team
	}
	return out
}

func newTokenListCommand(v *viper.Viper) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "list [--json]",
		Short: "List tokens (never their secrets)",
		Long: `Lists every token: id, kind, team, permissions, created, expires, last used
and revoked times. Secrets are never stored, so they are never shown.
--json prints {"tokens": [...]}, the admin API's shape.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			toks, err := listTokens(cmd.Context(), v)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSONOut(cmd.OutOrStdout(), map[string]any{"tokens": toks})
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tKIND\tTEAM\tNAME\tPERMISSIONS\tCREATED\tEXPIRES\tLAST USED\tREVOKED")
			for _, t := range toks {
				team := "-"
				if t.Team != nil {
					team = *t.Team
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.Kind, team, orDash(t.Name),
					strings.Join(t.Permissions, ","), fmtTime(&t.CreatedAt), fmtTime(t.ExpiresAt), fmtTime(t.LastUsedAt), fmtTime(t.RevokedAt))
			}
			return tw.Flush()
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func listTokens(ctx context.Context, v *viper.Viper) ([]tokenJSON, error) {
	var out []tokenJSON
	err := onlineOrOffline(ctx, v, true,
		func(c *socketClient) error {
			var body struct {
				Tokens []tokenJSON `json:"tokens"`
			}
			err := c.do(ctx, "GET", "/api/v1/admin/tokens", nil, &body)
			out = body.Tokens
			return err
		},
		func(d *db.DB) error {
			toks, err := d.ListTokens(ctx)
			for _, t := range toks {
				out = append(out, tokenToJSON(t))
			}
			return err
		})
	if out == nil {
		out = []tokenJSON{}
	}
	return out, err
}

func newTokenRevokeCommand(v *viper.Viper) *cobra.Command {
	return &cobra.Command{
		Use:   "revoke TOKEN_ID",
		Short: "Revoke a token at once",
		Long: `Revokes the token with id TOKEN_ID (the part before the dot, as token list
shows it; for admin tokens, the id from token list). The very next request
with it is refused with 401.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[0]
			if strings.Contains(id, ".") {
				return fmt.Errorf("give the token id only (as token list shows it), not the whole token")
			}
			ctx := cmd.Context()
			dataDir := v.GetString("data_dir")
			c, err := localClient(dataDir, buildFrom(ctx).Version)
			if err != nil {
				return err
			}
			if c != nil {
				err = c.do(ctx, "POST", "/api/v1/admin/tokens/revoke", map[string]string{"token_id": id}, nil)
			} else {
				var d *db.DB
				if d, err = openOffline(dataDir, db.Options{}); err != nil {
					return err
				}
				err = d.RevokeToken(ctx, id)
				if cerr := d.Close(); err == nil {
					err = cerr
				}
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "revoked token %s\n", id)
			return nil
		},
	}
}

func writeJSONOut(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func fmtTime(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
