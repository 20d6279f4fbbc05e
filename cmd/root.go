// Package cmd holds the cobra commands of rootcause. It is the only package
// that reads flags, environment and config files, and it wires storage, the
// HTTP server and the investigation agents together.
package cmd

import (
	"context"
	"fmt"
	"os"
)

// Build describes the binary, as set by the linker.
type Build struct {
	Version string
	Commit  string
	Date    string
}

// Execute runs the command line and returns the process exit code.
func Execute(ctx context.Context, b Build) int {
	_ = ctx
	fmt.Fprintln(os.Stderr, "rootcause", b.Version)
	return 0
}
