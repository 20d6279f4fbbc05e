package cmd

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"github.com/rootcause/rootcause/db"
)

func newBackupCommand(v *viper.Viper) *cobra.Command {
	return &cobra.Command{
		Use:   "backup FILE",
		Short: "Write a consistent copy of the database to FILE",
		Long: `Writes a consistent copy of the database to FILE. While the server runs, the
copy is streamed through the local socket from one read transaction, so
writers are not blocked and every write acknowledged before the backup began
is in it. While the server is stopped, the file is read directly.

The copy goes to a temporary file next to FILE, is verified (bbolt
consistency check, rootcause buckets) and then renamed to FILE, so FILE is
never a partial copy. An existing FILE is replaced.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, online, err := backup(cmd.Context(), v.GetString("data_dir"), args[0])
			if err != nil {
				return err
			}
			how := "offline, from the file"
			if online {
				how = "online, through the server"
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "wrote backup %s (%d bytes, %s)\n", args[0], n, how)
			return nil
		},
	}
}

// backup writes the database to target through a temp file.
func backup(ctx context.Context, dataDir, target string) (n int64, online bool, err error) {
	dir := filepath.Dir(target)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(target)+".tmp-*")
	if err != nil {
		return 0, false, fmt.Errorf("creating backup file: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err = tmp.Chmod(0o600); err != nil {
		return 0, false, fmt.Errorf("creating backup file: %w", err)
	}

	c, err := localClient(dataDir, buildFrom(ctx).Version)
	if err != nil {
		return 0, false, err
	}
	if c != nil {
		online = true
		resp, err := c.send(ctx, "GET", "/api/v1/admin/backup", nil)
		if err != nil {
			return 0, true, err
		}
		n, err = io.Copy(tmp, resp.Body)
		resp.Body.Close()
		if err != nil {
			return 0, true, fmt.Errorf("receiving backup: %w", err)
		}
		if resp.ContentLength >= 0 && n != resp.ContentLength {
			return 0, true, fmt.Errorf("receiving backup: got %d of %d bytes", n, resp.ContentLength)
		}
	} else {
		d, err := openOffline(dataDir, db.Options{ReadOnly: true})
		if err != nil {
			return 0, false, err
		}
		n, err = d.WriteBackup(tmp)
		if cerr := d.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return 0, false, err
		}
	}
	if err = tmp.Sync(); err != nil {
		return 0, online, fmt.Errorf("writing backup: %w", err)
	}
	if err = tmp.Close(); err != nil {
		return 0, online, fmt.Errorf("writing backup: %w", err)
	}
	if err = db.Verify(tmp.Name()); err != nil {
		return 0, online, fmt.Errorf("the backup failed verification: %w", err)
	}
	if err = os.Rename(tmp.Name(), target); err != nil {
		return 0, online, fmt.Errorf("moving backup into place: %w", err)
	}
	db.SyncDir(dir)
	return n, online, nil
}

func newRestoreCommand(v *viper.Viper) *cobra.Command {
	return &cobra.Command{
		Use:   "restore FILE",
		Short: "Replace the database with a backup (server stopped)",
		Long: `Replaces <data-dir>/rootcause.db with FILE, a backup taken by rootcause
backup. The server must be stopped. FILE is verified first (bbolt
consistency check, rootcause buckets, no migrations unknown to this binary);
the current database is kept aside as rootcause.db.replaced-<timestamp>.
FILE itself is copied, not moved. The next serve migrates the restored file
if it is older than this binary.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dataDir := v.GetString("data_dir")
			if up, err := socketAnswers(socketPath(dataDir)); err != nil {
				return err
			} else if up {
				return fmt.Errorf("a server is running on %s; stop it before restoring", dataDir)
			}
			replaced, err := db.Restore(dbPath(dataDir), args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "restored %s into %s\n", args[0], dbPath(dataDir))
			if replaced != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "the previous database is kept at %s\n", replaced)
			}
			return nil
		},
	}
}
