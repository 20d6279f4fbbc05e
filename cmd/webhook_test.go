package cmd

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/rootcause/rootcause/db"
)

// TestTeamScope: the delivery worker checks Slack bot token references
// against the scope the team's lineage grants, as its investigations do.
func TestTeamScope(t *testing.T) {
	ctx := context.Background()
	store, err := db.Open(filepath.Join(t.TempDir(), db.FileName), db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if _, err := store.EnsureOrg(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	for _, n := range []db.Node{{Name: "platform", Parent: "acme", Kind: db.KindGroup}, {Name: "payments", Parent: "platform", Kind: db.KindTeam}} {
		if _, err := store.CreateNode(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	admin := db.Actor{Local: true, Name: "test"}
	for node, patch := range map[string]map[string]any{
		"acme":     {"secret_scopes": []any{"vault:secret/teams/{team}"}},
		"platform": {"secret_scopes": []any{"vault:secret/shared/"}},
		"payments": {"tokens_vault_path": map[string]any{"slack": "vault:secret/teams/payments/slack#token"}},
	} {
		if _, err := store.PatchNodeConfig(ctx, node, patch, admin, nil); err != nil {
			t.Fatal(err)
		}
	}
	sc, err := teamScope(ctx, store, "payments")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(sc.Prefixes, []string{"secret/teams/payments/", "secret/shared/"}) || !sc.Own["vault:secret/teams/payments/slack#token"] {
		t.Errorf("scope %+v", sc)
	}
	if _, err := teamScope(ctx, store, "platform"); db.ErrorCode(err) != db.EINVALID {
		t.Errorf("scope of a group: %v, want invalid", err)
	}
	if _, err := teamScope(ctx, store, "nosuch"); err == nil {
		t.Error("scope of a missing team: no error")
	}
	if _, err := store.PatchNodeConfig(ctx, "platform", map[string]any{"secret_scopes": []any{"env:SHARED"}}, admin, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := teamScope(ctx, store, "payments"); db.ErrorCode(err) != db.EINVALID {
		t.Errorf("unreadable grant: %v, want invalid (nothing sent)", err)
	}
}
