// Command rootcause is a self-hosted appliance that investigates production
// incidents and keeps hierarchical team configuration. See README.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/rootcause/rootcause/cmd"
)

// Build information, set by the linker (GoReleaser's default -X main.* flags).
var (
	version = "dev"
	commit  = "none"
	date    = "unknown"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// After the first signal starts the graceful shutdown, restore the
	// default behaviour so a second one stops the process at once.
	go func() {
		<-ctx.Done()
		stop()
	}()
	code := cmd.Execute(ctx, cmd.Build{Version: version, Commit: commit, Date: date})
	stop()
	os.Exit(code)
}
