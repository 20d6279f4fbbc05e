// Package cmd holds the cobra commands of rootcause. It is the only package
// that reads flags, environment and config files, and it wires storage, the
// HTTP server and the investigation agents together.
package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"github.com/rootcause/rootcause/db"
)

// Build describes the binary, as set by the linker.
type Build struct {
	Version string
	Commit  string
	Date    string
}

// resolve fills a "dev" build from the module's build info, for binaries
// built with go install or go build rather than the release pipeline.
func (b Build) resolve() Build {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	if (b.Version == "" || b.Version == "dev") && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		b.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch {
		case s.Key == "vcs.revision" && (b.Commit == "" || b.Commit == "none"):
			b.Commit = s.Value
		case s.Key == "vcs.time" && (b.Date == "" || b.Date == "unknown"):
			b.Date = s.Value
		}
	}
	if b.Version == "" {
		b.Version = "dev"
	}
	return b
}

type buildKey struct{}

func withBuild(ctx context.Context, b Build) context.Context {
	return context.WithValue(ctx, buildKey{}, b)
}

func buildFrom(ctx context.Context) Build {
	if ctx != nil {
		if b, ok := ctx.Value(buildKey{}).(Build); ok {
			return b
		}
	}
	return Build{Version: "dev", Commit: "none", Date: "unknown"}
}

// Execute runs the command line and returns the process exit code. Errors
// are printed to stderr as their message alone.
func Execute(ctx context.Context, b Build) int {
	root := NewRootCommand(viper.New())
	if err := root.ExecuteContext(withBuild(ctx, b.resolve())); err != nil {
		fmt.Fprintln(root.ErrOrStderr(), "rootcause: "+errorText(err))
		return 1
	}
	return 0
}

// errorText is what the user sees for err: an API error's message alone,
// a domain error's caller-safe message, or the wrapped chain otherwise.
func errorText(err error) string {
	var apiErr *APIError
	if errors.As(err, &apiErr) {
		return apiErr.Message
	}
	var dbErr *db.Error
	if errors.As(err, &dbErr) && dbErr.Message != "" && dbErr.Err == nil {
		return dbErr.Message
	}
	return err.Error()
}

// NewRootCommand returns the rootcause command tree. Options are read from
// v, where flags, ROOTCAUSE_* environment variables and the --config YAML
// file are bound once per option (precedence flag > env > file > default).
func NewRootCommand(v *viper.Viper) *cobra.Command {
	v.SetEnvPrefix("ROOTCAUSE")
	v.SetEnvKeyReplacer(strings.NewReplacer(".", "_", "-", "_"))
	v.AutomaticEnv()
	setDefaults(v)

	root := &cobra.Command{
		Use:   "rootcause",
		Short: "Investigate production incidents and keep team configuration",
		Long: `rootcause is a self-hosted appliance that investigates production incidents
and keeps hierarchical team configuration. Everything it stores lives in one
bbolt file, <data-dir>/rootcause.db.

Options come from flags, then ROOTCAUSE_* environment variables (for example
ROOTCAUSE_DATA_DIR, ROOTCAUSE_ADDR, ROOTCAUSE_RATE_LIMIT_READ), then the YAML
file given with --config, then built-in defaults.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return readConfigFile(v)
		},
	}
	root.CompletionOptions.DisableDefaultCmd = true
	pf := root.PersistentFlags()
	pf.String("data-dir", defaultDataDir, "directory of the database and the local socket (env ROOTCAUSE_DATA_DIR)")
	pf.String("config", "", "YAML file of server settings (env ROOTCAUSE_CONFIG)")
	mustBind(v, "data_dir", pf.Lookup("data-dir"))
	mustBind(v, "config", pf.Lookup("config"))

	root.AddCommand(
		newServeCommand(v),
		newTokenCommand(v),
		newNodeCommand(v),
		newConfigCommand(v),
		newBackupCommand(v),
		newRestoreCommand(v),
		newMigrateCommand(v),
		newWebhookCommand(v),
		newVersionCommand(),
		newInvestigateCommand(v),
		newBundleCommand(v),
		newCaptureCommand(v),
		newEvalCommand(v),
		newDemoCommand(v),
		newRunCommand(v),
		newInvestigationsCommand(v),
		newMCPCommand(v),
	)
	return root
}

// readConfigFile reads the --config YAML file, if one is named.
func readConfigFile(v *viper.Viper) error {
	file := v.GetString("config")
	if file == "" {
		return nil
	}
	v.SetConfigFile(file)
	v.SetConfigType("yaml")
	if err := v.ReadInConfig(); err != nil {
		return fmt.Errorf("reading config file %s: %w", file, err)
	}
	return nil
}

// paths of the data directory.
func dbPath(dataDir string) string     { return filepath.Join(dataDir, db.FileName) }
func socketPath(dataDir string) string { return filepath.Join(dataDir, SocketName) }

// SocketName is the local socket's file name inside the data directory.
const SocketName = "rootcause.sock"

// requireDB returns the database path, or a clear error when there is no
// database in dataDir yet.
func requireDB(dataDir string) (string, error) {
	p := dbPath(dataDir)
	if _, err := os.Stat(p); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("no database at %s: start `rootcause serve --data-dir %s` once to create it, or check --data-dir", p, dataDir)
		}
		return "", fmt.Errorf("checking database: %w", err)
	}
	return p, nil
}

// onlineOrOffline runs online through the local server's socket when a
// server answers on the data directory's socket, else offline directly on
// the database file (read-only when readOnly), which bbolt's lock makes
// impossible while a server runs.
func onlineOrOffline(ctx context.Context, v *viper.Viper, readOnly bool, online func(*socketClient) error, offline func(*db.DB) error) error {
	dataDir := v.GetString("data_dir")
	c, err := localClient(dataDir, buildFrom(ctx).Version)
	if err != nil {
		return err
	}
	if c != nil {
		return online(c)
	}
	d, err := openOffline(dataDir, db.Options{ReadOnly: readOnly})
	if err != nil {
		return err
	}
	defer d.Close()
	return offline(d)
}

// openOffline opens the database file directly for a client command whose
// server is not running.
func openOffline(dataDir string, opts db.Options) (*db.DB, error) {
	p, err := requireDB(dataDir)
	if err != nil {
		return nil, err
	}
	return db.Open(p, opts)
}
