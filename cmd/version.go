package cmd

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"
)

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit and build date",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b := buildFrom(cmd.Context())
			fmt.Fprintf(cmd.OutOrStdout(), "rootcause %s\ncommit %s\nbuilt %s\n%s %s/%s\n",
				b.Version, b.Commit, b.Date, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return nil
		},
	}
}
