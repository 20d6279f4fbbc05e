package cmd

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"github.com/rootcause/rootcause/db"
)

// nodeJSON is a node as the CLI prints it with --json, the admin API's shape.
type nodeJSON struct {
	Name      string    `json:"name"`
	Parent    *string   `json:"parent"`
	Kind      string    `json:"kind"`
	Version   int64     `json:"version"`
	CreatedAt time.Time `json:"created_at"`
}

func nodeToJSON(n *db.Node) nodeJSON {
	out := nodeJSON{Name: n.Name, Kind: n.Kind, Version: n.Version, CreatedAt: n.CreatedAt}
	if n.Parent != "" {
		p := n.Parent
		out.Parent = &p
	}
	return out
}

func newNodeCommand(v *viper.Viper) *cobra.Command {
	c := &cobra.Command{
		Use:   "node",
		Short: "Build the organization tree (org, groups, teams)",
		Long: `The organization tree has one org root (created by serve), groups under the
org or a group, and teams under the org or a group. Names are unique in the
whole org: 1 to 63 lower-case letters, digits, '-' or '_', starting with a
letter or digit. A team's name is its team_node_id.

These commands work through the local socket while the server runs, and
directly on the database file while it is stopped.`,
	}
	c.AddCommand(newNodeAddCommand(v), newNodeListCommand(v))
	return c
}

func newNodeAddCommand(v *viper.Viper) *cobra.Command {
	var parent, kind string
	c := &cobra.Command{
		Use:   "add NAME --parent PARENT --kind group|team",
		Short: "Add a group or team",
		Long: `Adds node NAME of --kind group or team under --parent, which must be the
org root or a group.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			n := db.Node{Name: args[0], Parent: parent, Kind: kind}
			if parent == "" {
				return fmt.Errorf("--parent is required (the org root or a group)")
			}
			if kind != db.KindGroup && kind != db.KindTeam {
				return fmt.Errorf("--kind must be group or team")
			}
			created, err := addNode(ctx, v, n)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "added %s %s under %s\n", created.Kind, created.Name, parent)
			return nil
		},
	}
	c.Flags().StringVar(&parent, "parent", "", "parent node: the org root or a group")
	c.Flags().StringVar(&kind, "kind", "", "group or team")
	return c
}

func addNode(ctx context.Context, v *viper.Viper, n db.Node) (*nodeJSON, error) {
	var out nodeJSON
	err := onlineOrOffline(ctx, v, false,
		func(c *socketClient) error {
			return c.do(ctx, "POST", "/api/v1/admin/nodes", map[string]string{"name": n.Name, "parent": n.Parent, "kind": n.Kind}, &out)
		},
		func(d *db.DB) error {
			created, err := d.CreateNode(ctx, n)
			if err == nil {
				out = nodeToJSON(created)
			}
			return err
		})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

func newNodeListCommand(v *viper.Viper) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "list [--json]",
		Short: "List the organization tree",
		Long:  `Lists every node, the org root first, then by name. --json prints {"nodes": [...]}.`,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			nodes, err := listNodes(cmd.Context(), v)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSONOut(cmd.OutOrStdout(), map[string]any{"nodes": nodes})
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tKIND\tPARENT\tVERSION")
			for _, n := range nodes {
				parent := "-"
				if n.Parent != nil {
					parent = *n.Parent
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\n", n.Name, n.Kind, parent, n.Version)
			}
			return tw.Flush()
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func listNodes(ctx context.Context, v *viper.Viper) ([]nodeJSON, error) {
	var out []nodeJSON
	err := onlineOrOffline(ctx, v, true,
		func(c *socketClient) error {
			var body struct {
				Nodes []nodeJSON `json:"nodes"`
			}
			err := c.do(ctx, "GET", "/api/v1/admin/nodes", nil, &body)
			out = body.Nodes
			return err
		},
		func(d *db.DB) error {
			nodes, err := d.ListNodes(ctx)
			for _, n := range nodes {
				out = append(out, nodeToJSON(n))
			}
			return err
		})
	if out == nil {
		out = []nodeJSON{}
	}
	return out, err
}
