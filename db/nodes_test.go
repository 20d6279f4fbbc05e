package db_test

import (
	"context"
	"strings"
	"testing"

	"github.com/rootcause/rootcause/db"
)

func mustTree(t *testing.T) *db.DB {
	t.Helper()
	d := db.MustOpen(t)
	ctx := context.Background()
	if _, err := d.EnsureOrg(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	for _, n := range []db.Node{
		{Name: "platform", Parent: "acme", Kind: db.KindGroup},
		{Name: "payments", Parent: "platform", Kind: db.KindTeam},
		{Name: "search", Parent: "acme", Kind: db.KindTeam},
	} {
		if _, err := d.CreateNode(ctx, n); err != nil {
			t.Fatalf("creating %s: %v", n.Name, err)
		}
	}
	return d
}

func TestCreateNode(t *testing.T) {
	d := mustTree(t)
	ctx := context.Background()
	tests := []struct {
		name string
		node db.Node
		code string
	}{
		{"OK group under org", db.Node{Name: "infra", Parent: "acme", Kind: db.KindGroup}, ""},
		{"OK group under group", db.Node{Name: "sub", Parent: "platform", Kind: db.KindGroup}, ""},
		{"OK team under group", db.Node{Name: "web_2", Parent: "platform", Kind: db.KindTeam}, ""},
		{"ErrConflict duplicate", db.Node{Name: "payments", Parent: "acme", Kind: db.KindTeam}, db.ECONFLICT},
		{"ErrConflict org name", db.Node{Name: "acme", Parent: "platform", Kind: db.KindGroup}, db.ECONFLICT},
		{"ErrNotFound parent", db.Node{Name: "x", Parent: "nope", Kind: db.KindTeam}, db.ENOTFOUND},
		{"ErrInvalid under team", db.Node{Name: "x", Parent: "payments", Kind: db.KindTeam}, db.EINVALID},
		{"ErrInvalid kind org", db.Node{Name: "x", Parent: "acme", Kind: db.KindOrg}, db.EINVALID},
		{"ErrInvalid kind empty", db.Node{Name: "x", Parent: "acme"}, db.EINVALID},
		{"ErrInvalid no parent", db.Node{Name: "x", Kind: db.KindTeam}, db.EINVALID},
		{"ErrInvalid upper case", db.Node{Name: "Payments", Parent: "acme", Kind: db.KindTeam}, db.EINVALID},
		{"ErrInvalid slash", db.Node{Name: "a/b", Parent: "acme", Kind: db.KindTeam}, db.EINVALID},
		{"ErrInvalid dot", db.Node{Name: "a.b", Parent: "acme", Kind: db.KindTeam}, db.EINVALID},
		{"ErrInvalid leading dash", db.Node{Name: "-a", Parent: "acme", Kind: db.KindTeam}, db.EINVALID},
		{"ErrInvalid empty", db.Node{Parent: "acme", Kind: db.KindTeam}, db.EINVALID},
		{"ErrInvalid too long", db.Node{Name: strings.Repeat("a", 64), Parent: "acme", Kind: db.KindTeam}, db.EINVALID},
		{"OK max length", db.Node{Name: strings.Repeat("a", 63), Parent: "acme", Kind: db.KindTeam}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := d.CreateNode(ctx, tt.node)
			if got := db.ErrorCode(err); got != tt.code {
				t.Fatalf("code = %q, want %q (err %v)", got, tt.code, err)
			}
			if tt.code != "" {
				if db.ErrorMessage(err) == "internal error" {
					t.Fatalf("message not caller-safe: %v", err)
				}
				return
			}
			if n.Version != 0 || n.CreatedAt.IsZero() || n.Kind != tt.node.Kind {
				t.Fatalf("created node = %+v", n)
			}
			got, err := d.FindNode(ctx, tt.node.Name)
			if err != nil || got.Parent != tt.node.Parent {
				t.Fatalf("FindNode = %+v, %v", got, err)
			}
		})
	}
}

func TestEnsureOrg(t *testing.T) {
	ctx := context.Background()
	t.Run("OK creates once", func(t *testing.T) {
		d := db.MustOpen(t)
		if _, err := d.OrgName(ctx); db.ErrorCode(err) != db.ENOTFOUND {
			t.Fatalf("OrgName before EnsureOrg: %v", err)
		}
		n, err := d.EnsureOrg(ctx, "acme")
		if err != nil || n.Kind != db.KindOrg || n.Parent != "" {
			t.Fatalf("EnsureOrg = %+v, %v", n, err)
		}
		again, err := d.EnsureOrg(ctx, "other")
		if err != nil || again.Name != "acme" {
			t.Fatalf("second EnsureOrg = %+v, %v; want the existing org", again, err)
		}
		if name, err := d.OrgName(ctx); err != nil || name != "acme" {
			t.Fatalf("OrgName = %q, %v", name, err)
		}
	})
	t.Run("ErrInvalid name", func(t *testing.T) {
		d := db.MustOpen(t)
		if _, err := d.EnsureOrg(ctx, "Bad Name"); db.ErrorCode(err) != db.EINVALID {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestFindNode(t *testing.T) {
	d := mustTree(t)
	ctx := context.Background()
	if _, err := d.FindNode(ctx, "missing"); db.ErrorCode(err) != db.ENOTFOUND {
		t.Fatalf("ErrNotFound: got %v", err)
	}
	if n, err := d.FindNode(ctx, "acme"); err != nil || n.Kind != db.KindOrg {
		t.Fatalf("OK: got %+v, %v", n, err)
	}
}

func TestListNodes(t *testing.T) {
	d := mustTree(t)
	nodes, err := d.ListNodes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range nodes {
		names = append(names, n.Name)
	}
	if got, want := strings.Join(names, ","), "acme,payments,platform,search"; got != want {
		t.Fatalf("ListNodes = %s, want %s", got, want)
	}
}

func TestLineage(t *testing.T) {
	d := mustTree(t)
	ctx := context.Background()
	tests := []struct {
		name, node, want, code string
	}{
		{"OK team in group", "payments", "acme,platform,payments", ""},
		{"OK team under org", "search", "acme,search", ""},
		{"OK org", "acme", "acme", ""},
		{"ErrNotFound", "nope", "", db.ENOTFOUND},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns, err := d.Lineage(ctx, tt.node)
			if db.ErrorCode(err) != tt.code {
				t.Fatalf("err = %v, want code %q", err, tt.code)
			}
			var names []string
			for _, n := range ns {
				names = append(names, n.Name)
			}
			if got := strings.Join(names, ","); got != tt.want {
				t.Fatalf("Lineage = %s, want %s", got, tt.want)
			}
		})
	}
}
