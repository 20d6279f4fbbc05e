package cmd

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"github.com/rootcause/rootcause/db"
	"github.com/rootcause/rootcause/notify"
	"github.com/rootcause/rootcause/secretref"
)

func newWebhookCommand(v *viper.Viper) *cobra.Command {
	c := &cobra.Command{
		Use:   "webhook",
		Short: "Manage webhook signing secrets",
		Long: `Manage the per-team signing secrets of the investigation_complete webhook
(Standard Webhooks). See docs/webhooks.md.

These commands work through the local socket while the server runs, and
directly on <data-dir>/rootcause.db while it is stopped.`,
	}
	secret := &cobra.Command{
		Use:   "secret",
		Short: "Create or rotate a team's webhook signing secret",
	}
	secret.AddCommand(newWebhookSecretCommand(v, true), newWebhookSecretCommand(v, false))
	c.AddCommand(secret)
	return c
}

func newWebhookSecretCommand(v *viper.Viper, create bool) *cobra.Command {
	var (
		team    string
		overlap time.Duration
	)
	use, short, long := "create --team TEAM", "Create a team's signing secret and print it once",
		`Creates the team's webhook signing secret (whsec_...) and prints it alone on
stdout, once: give it to the receiver, which verifies every delivery with
it. It fails when the team already has one (use rotate). Deliveries held
in state waiting_for_secret are sent once it exists.`
	if !create {
		use, short, long = "rotate --team TEAM [--overlap 24h]", "Rotate a team's signing secret and print the new one once",
			`Replaces the team's webhook signing secret with a new one, printed alone on
stdout, once. During --overlap (default 24h; 0 ends the old secret at once)
deliveries carry two signatures, one per secret, so receivers can switch
without missing a delivery.`
	}
	c := &cobra.Command{
		Use:   use,
		Short: short,
		Long:  long,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if team == "" {
				return fmt.Errorf("give --team TEAM")
			}
			if overlap < 0 || overlap > notify.MaxOverlap {
				return fmt.Errorf("--overlap must be between 0s and %s", notify.MaxOverlap)
			}
			sec, err := createWebhookSecret(cmd.Context(), v, team, overlap, create)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), sec.Secret)
			prev := "the previous secret, if any, no longer signs"
			if sec.PreviousExpiresAt != nil {
				prev = "the previous secret also signs until " + sec.PreviousExpiresAt.UTC().Format(time.RFC3339)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "webhook signing secret of team %s created %s; %s; it is shown only once\n",
				sec.Team, sec.CreatedAt.UTC().Format(time.RFC3339), prev)
			return nil
		},
	}
	c.Flags().StringVar(&team, "team", "", "the team node")
	if !create {
		c.Flags().DurationVar(&overlap, "overlap", notify.DefaultOverlap, "how long the previous secret keeps signing too")
	}
	return c
}

func createWebhookSecret(ctx context.Context, v *viper.Viper, team string, overlap time.Duration, createOnly bool) (*db.WebhookSecret, error) {
	dataDir := v.GetString("data_dir")
	c, err := localClient(dataDir, buildFrom(ctx).Version)
	if err != nil {
		return nil, err
	}
	if c != nil {
		var out db.WebhookSecret
		body := map[string]any{"overlap": overlap.String(), "create_only": createOnly}
		if err := c.do(ctx, "POST", "/api/v1/admin/teams/"+url.PathEscape(team)+"/webhook-secret", body, &out); err != nil {
			return nil, err
		}
		return &out, nil
	}
	d, err := openOffline(dataDir, db.Options{})
	if err != nil {
		return nil, err
	}
	defer d.Close()
	sec, err := d.CreateWebhookSecret(ctx, team, overlap, createOnly)
	if err != nil && db.ErrorCode(err) != db.EINTERNAL {
		return nil, fmt.Errorf("%s", db.ErrorMessage(err))
	}
	return sec, err
}

// newNotifyWorker builds the delivery worker of the webhook and chat
// outbox from the server settings webhook.allow and slack.api_url. The
// caller starts it once the API is up and stops it before closing store;
// the runtime (cmd/runtime.go) writes its outbox with notify.Outbox and
// wakes it through OnFinal.
func newNotifyWorker(s Settings, b Build, store *db.DB, logger *slog.Logger, opts ...func(*notify.Config)) (*notify.Worker, error) {
	allow, err := notify.ParseAllowlist(s.Webhook.Allow)
	if err != nil {
		return nil, fmt.Errorf("setting outbound.allow: %w", err)
	}
	if s.Slack.APIURL != "" {
		if u, err := url.Parse(s.Slack.APIURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return nil, fmt.Errorf("setting slack.api_url: %q is not an http(s) URL", s.Slack.APIURL)
		}
	}
	nc := notify.Config{
		Store:       store,
		Allow:       allow,
		SlackAPIURL: s.Slack.APIURL,
		Resolver:    newResolver(),
		TeamConfig: func(ctx context.Context, team string) (map[string]any, error) {
			return teamEffectiveConfig(ctx, store, team) // cmd/runtime.go
		},
		Scope: func(ctx context.Context, team string) (*secretref.Scope, error) {
			return teamScope(ctx, store, team)
		},
		Logger:    logger.With("component", "notify"),
		UserAgent: "rootcause-webhooks/" + b.Version,
	}
	for _, o := range opts {
		o(&nc)
	}
	return notify.NewWorker(nc), nil
}

// teamScope is the secret scope of team from its config lineage, as its
// investigations resolve secrets; an unreadable secret_scopes grant is an
// invalid error (the delivery that asked for it is not sent).
func teamScope(ctx context.Context, store db.ConfigService, team string) (*secretref.Scope, error) {
	docs, err := teamLineage(ctx, store, team) // cmd/runtime.go
	if err != nil {
		return nil, err
	}
	sc, err := secretref.ScopeFor(team, docs)
	if err != nil {
		return nil, &db.Error{Code: db.EINVALID, Field: "secret_scopes", Message: err.Error()}
	}
	return sc, nil
}
