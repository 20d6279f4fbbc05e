package db

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
)

// WriteBackup writes a consistent copy of the whole database to w from one
// read transaction; writers are not blocked while it runs. It returns the
// number of bytes written. If w has a SetSize(int64) method (as the
// server's backup response writer does), it is called with the exact size
// before the first byte, so an HTTP answer can carry Content-Length.
func (d *DB) WriteBackup(w io.Writer) (int64, error) {
	var size func(int64)
	if s, ok := w.(interface{ SetSize(int64) }); ok {
		size = s.SetSize
	}
	return d.WriteBackupSized(w, size)
}

// WriteBackupSized is WriteBackup that first calls size (when not nil) with
// the exact number of bytes it is about to write, so an HTTP handler can set
// Content-Length before the body starts.
func (d *DB) WriteBackupSized(w io.Writer, size func(int64)) (int64, error) {
	var n int64
	err := d.bolt.View(func(tx *bolt.Tx) error {
		if size != nil {
			size(tx.Size())
		}
		var err error
		n, err = tx.WriteTo(w)
		return err
	})
	if err != nil {
		return n, fmt.Errorf("writing backup: %w", err)
	}
	return n, nil
}

// Verify checks that path is a rootcause database this binary can use: it
// opens it read-only, runs bbolt's consistency check over every page, and
// requires the meta and migrations buckets, an install key and only known
// migrations.
func Verify(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("verifying %s: %w", path, err)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("verifying %s: not a regular file", path)
	}
	bdb, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		return fmt.Errorf("verifying %s: not a readable bbolt database: %w", path, err)
	}
	defer bdb.Close()
	return bdb.View(func(tx *bolt.Tx) error {
		var errs []error
		for err := range tx.Check() {
			errs = append(errs, err)
			if len(errs) >= 10 {
				break
			}
		}
		if len(errs) > 0 {
			return fmt.Errorf("verifying %s: consistency check failed: %w", path, errors.Join(errs...))
		}
		meta := tx.Bucket(bucketMeta)
		if meta == nil || tx.Bucket(bucketMigrations) == nil {
			return fmt.Errorf("verifying %s: not a rootcause database (no meta or migrations bucket)", path)
		}
		if meta.Get(metaInstallKey) == nil {
			return fmt.Errorf("verifying %s: not a rootcause database (no install key)", path)
		}
		if _, err := appliedMigrations(tx); err != nil {
			return fmt.Errorf("verifying %s: %w", path, err)
		}
		return nil
	})
}

// Check runs bbolt's consistency check on the open database and returns
// the problems found, joined; nil when the file is sound.
func (d *DB) Check() error {
	return d.bolt.View(func(tx *bolt.Tx) error {
		var errs []error
		for err := range tx.Check() {
			errs = append(errs, err)
		}
		return errors.Join(errs...)
	})
}

// Restore replaces the database at dbPath with a verified copy of
// candidate. The current file (if any) is kept aside as
// <dbPath>.replaced-<UTC timestamp> and its path returned. The current file
// must not be in use: its lock is held during the swap, so a running server
// makes Restore fail with ErrLocked.
func Restore(dbPath, candidate string) (replaced string, err error) {
	if err := Verify(candidate); err != nil {
		return "", err
	}
	absCand, _ := filepath.Abs(candidate)
	absDB, _ := filepath.Abs(dbPath)
	if absCand == absDB {
		return "", fmt.Errorf("restoring: %s is the database itself", candidate)
	}
	dir := filepath.Dir(dbPath)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("restoring: creating data directory: %w", err)
	}

	// Hold the current file's lock while swapping, so no server opens it
	// half way. Renaming an open file is fine on POSIX: the lock stays on the
	// old inode, which is what we move aside.
	var current *bolt.DB
	if _, err := os.Stat(dbPath); err == nil {
		current, err = bolt.Open(dbPath, 0o600, &bolt.Options{Timeout: time.Second, ReadOnly: true})
		if err != nil {
			if errors.Is(err, bolt.ErrTimeout) {
				return "", fmt.Errorf("restoring: %w", ErrLocked)
			}
			// An unreadable current file is exactly what restore is for:
			// move it aside without the lock.
			current = nil
		}
	}
	defer func() {
		if current != nil {
			_ = current.Close()
		}
	}()

	tmp, err := copyToTemp(candidate, dir)
	if err != nil {
		return "", fmt.Errorf("restoring: %w", err)
	}
	defer func() {
		if err != nil {
			_ = os.Remove(tmp)
		}
	}()
	if _, statErr := os.Stat(dbPath); statErr == nil {
		replaced = fmt.Sprintf("%s.replaced-%s", dbPath, time.Now().UTC().Format("20060102T150405.000000000Z"))
		if err = os.Rename(dbPath, replaced); err != nil {
			return "", fmt.Errorf("restoring: moving the old database aside: %w", err)
		}
	}
	if err = os.Rename(tmp, dbPath); err != nil {
		if replaced != "" {
			_ = os.Rename(replaced, dbPath)
		}
		return "", fmt.Errorf("restoring: moving the restored file into place: %w", err)
	}
	syncDir(dir)
	return replaced, nil
}

// copyToTemp copies src to a new synced temp file in dir and returns its path.
func copyToTemp(src, dir string) (string, error) {
	in, err := os.Open(src)
	if err != nil {
		return "", err
	}
	defer in.Close()
	out, err := os.CreateTemp(dir, ".rootcause.db.restore-*")
	if err != nil {
		return "", err
	}
	name := out.Name()
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		os.Remove(name)
		return "", fmt.Errorf("copying %s: %w", src, err)
	}
	if err := out.Chmod(0o600); err != nil {
		out.Close()
		os.Remove(name)
		return "", err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		os.Remove(name)
		return "", err
	}
	if err := out.Close(); err != nil {
		os.Remove(name)
		return "", err
	}
	return name, nil
}

// syncDir fsyncs a directory so renames in it are durable; best effort.
func syncDir(dir string) {
	if f, err := os.Open(dir); err == nil {
		_ = f.Sync()
		_ = f.Close()
	}
}

// SyncDir fsyncs directory dir so a rename into it survives a crash.
func SyncDir(dir string) { syncDir(dir) }
