package cmd

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"github.com/rootcause/rootcause/agent/evidence/bundle"
)

func newBundleCommand(v *viper.Viper) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bundle",
		Short: "Inspect incident bundles",
	}
	cmd.AddCommand(newBundleCheckCommand())
	return cmd
}

func newBundleCheckCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "check DIR",
		Short: "List what rootcause reads in a bundle, what it skips and why",
		Long: `Check reads every file of an incident bundle (see docs/bundles.md) the way an
investigation would and lists what was read (per Kubernetes file, the objects
of each kind), what was skipped and why (kinds not read, files that are no
bundle form, transcript commands not understood), and bad data, each with
its file and line. It exits 1 when the bundle holds bad data or nothing
readable.`,
		Example: `  rootcause bundle check ./incident
  rootcause bundle check --json ./incident | jq '.skipped'`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := bundle.OpenDir(args[0])
			if err != nil {
				return err
			}
			r, err := bundle.Check(cmd.Context(), b)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(r); err != nil {
					return err
				}
			} else {
				printCheck(out, r)
			}
			switch {
			case r.Empty():
				return fmt.Errorf("bundle %s: %w: looked for %s", args[0], bundle.ErrEmpty, bundle.Forms)
			case len(r.Errors) > 0:
				return fmt.Errorf("bundle %s: %d files hold bad data", args[0], len(r.Errors))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

func printCheck(w io.Writer, r *bundle.CheckReport) {
	section := func(title string, items []bundle.CheckItem) {
		fmt.Fprintf(w, "%s (%d)\n", title, len(items))
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		for _, it := range items {
			where := it.File
			if it.Line > 0 {
				where = fmt.Sprintf("%s:%d", it.File, it.Line)
			}
			fmt.Fprintf(tw, "  %s\t%s\n", where, it.What)
		}
		tw.Flush()
	}
	section("read", r.Read)
	section("skipped", r.Skipped)
	if len(r.Errors) > 0 {
		section("errors", r.Errors)
	}
}
