package cmd

import (
	"context"
	"log/slog"

	"github.com/rootcause/rootcause/db"
	"github.com/rootcause/rootcause/oidcauth"
)

// newOIDC returns the OIDC verifier and console sign-in of the server
// (docs/authentication.md). It follows the org root's `oidc` config object
// at runtime, so it is always wired: without that object every JWT is
// refused and /login answers 404. Discovery runs in the background at
// startup so that an unreachable provider is reported in the log at once;
// it never stops the server.
func newOIDC(ctx context.Context, store *db.DB, org string, logger *slog.Logger) *oidcauth.Dynamic {
	dyn := oidcauth.NewDynamic(oidcauth.DynamicOptions{
		Load: func(ctx context.Context) (map[string]any, error) {
			lin, err := store.ConfigLineage(ctx, org, true)
			if err != nil {
				return nil, err
			}
			return lin[0].Own, nil
		},
		Resolver: newResolver(),
		Base:     oidcauth.Settings{Logger: logger},
	})
	go dyn.Warm(ctx)
	return dyn
}
