package cmd

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"github.com/rootcause/rootcause/db"
)

func newMigrateCommand(v *viper.Viper) *cobra.Command {
	var dryRun bool
	c := &cobra.Command{
		Use:   "migrate [--dry-run]",
		Short: "Apply pending schema migrations (server stopped)",
		Long: `Applies the database schema migrations this binary knows and the file does
not have yet, each in its own transaction. Before migrating a file that
holds data, a copy is written next to it as
rootcause.db.pre-migrate-<n>.bak. serve does the same on open; this command
lets an operator do it, or see what would happen with --dry-run, beforehand.

A file written by a newer rootcause (it records migrations this binary does
not know) is refused: upgrade the binary or restore a backup.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dataDir := v.GetString("data_dir")
			path := dbPath(dataDir)
			if _, err := os.Stat(path); err != nil && dryRun {
				_, err = requireDB(dataDir)
				return err
			}
			opts := db.Options{NoMigrate: true}
			if dryRun {
				opts.ReadOnly = true
			}
			d, err := db.Open(path, opts)
			if err != nil {
				return err
			}
			defer d.Close()
			names, err := d.Migrate(dryRun)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			switch {
			case len(names) == 0:
				fmt.Fprintln(out, "the database is up to date")
			case dryRun:
				fmt.Fprintf(out, "%d pending migration(s):\n", len(names))
				for _, n := range names {
					fmt.Fprintln(out, "  "+n)
				}
			default:
				for _, n := range names {
					fmt.Fprintln(out, "applied "+n)
				}
			}
			return nil
		},
	}
	c.Flags().BoolVar(&dryRun, "dry-run", false, "list pending migrations without applying them")
	return c
}
