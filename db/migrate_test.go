package db

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

func TestMigrateFreshFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	d, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	err = d.bolt.View(func(tx *bolt.Tx) error {
		for _, b := range allBuckets {
			if tx.Bucket(b) == nil {
				t.Errorf("bucket %s missing", b)
			}
		}
		if k := tx.Bucket(bucketMeta).Get(metaInstallKey); len(k) != 32 {
			t.Errorf("install key has %d bytes", len(k))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	st, err := d.MigrationStatus()
	if err != nil || len(st) != len(migrations) || !st[0].Applied {
		t.Fatalf("status = %+v, %v", st, err)
	}
	// No backup for a fresh file.
	if m, _ := filepath.Glob(path + ".pre-migrate-*"); len(m) != 0 {
		t.Fatalf("unexpected backups %v", m)
	}
	pending, err := d.Migrate(true)
	if err != nil || len(pending) != 0 {
		t.Fatalf("Migrate(dry) on current file = %v, %v", pending, err)
	}
}

// TestMigrateExistingFile adds a migration the way a later release would:
// the file at N-1 gets a backup, then migration N runs and is recorded.
func TestMigrateExistingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	d, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.EnsureOrg(context.Background(), "acme"); err != nil {
		t.Fatal(err)
	}
	key := cloneBytes(d.installKey)
	d.Close()

	saved := migrations
	t.Cleanup(func() { migrations = saved })
	migrations = append(append([]Migration(nil), saved...), Migration{
		Name: "0002_test_marker",
		Up: func(tx *bolt.Tx) error {
			return tx.Bucket(bucketMeta).Put([]byte("test_marker"), []byte("1"))
		},
	})
	n := len(migrations)

	t.Run("dry run reports and changes nothing", func(t *testing.T) {
		d, err := Open(path, Options{NoMigrate: true})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		pending, err := d.Migrate(true)
		if err != nil || len(pending) != 1 || pending[0] != "0002_test_marker" {
			t.Fatalf("pending = %v, %v", pending, err)
		}
		st, _ := d.MigrationStatus()
		if st[n-1].Applied {
			t.Fatal("dry run applied the migration")
		}
	})
	t.Run("open migrates after a backup", func(t *testing.T) {
		d, err := Open(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		backup := fmt.Sprintf("%s.pre-migrate-%04d.bak", path, n)
		if err := Verify(backup); err != nil {
			t.Fatalf("backup not usable: %v", err)
		}
		var marker []byte
		d.bolt.View(func(tx *bolt.Tx) error {
			marker = cloneBytes(tx.Bucket(bucketMeta).Get([]byte("test_marker")))
			return nil
		})
		if string(marker) != "1" {
			t.Fatal("the test migration did not run")
		}
		if string(d.installKey) != string(key) {
			t.Fatal("install key changed across migration")
		}
		if name, err := d.OrgName(context.Background()); err != nil || name != "acme" {
			t.Fatalf("data lost: %q %v", name, err)
		}
	})
	t.Run("ErrNewerSchema for an older binary", func(t *testing.T) {
		migrations = saved
		_, err := Open(path, Options{})
		if !errors.Is(err, ErrNewerSchema) || !strings.Contains(err.Error(), "0002_test_marker") {
			t.Fatalf("err = %v", err)
		}
		if err := Verify(path); !errors.Is(err, ErrNewerSchema) {
			t.Fatalf("Verify err = %v", err)
		}
	})
}

func TestRenamedMigrationRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	d, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	d.bolt.Update(func(tx *bolt.Tx) error {
		return putJSON(tx.Bucket(bucketMigrations), itob(1), migrationRecord{Name: "0001_something_else"})
	})
	d.Close()
	if _, err := Open(path, Options{}); !errors.Is(err, ErrNewerSchema) {
		t.Fatalf("err = %v", err)
	}
}

func TestOpenLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	d, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	// bbolt's flock is per open file description, so a second open in the
	// same process sees the lock like another process would.
	_, err = Open(path, Options{Timeout: 100e6})
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "use the socket or stop it") {
		t.Fatalf("err = %v", err)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.db")
	os.WriteFile(garbage, []byte(strings.Repeat("not a database ", 1000)), 0o600)
	tests := []struct {
		name string
		path string
		opts Options
	}{
		{"not a bbolt file", garbage, Options{}},
		{"read-only missing file", filepath.Join(dir, "missing.db"), Options{ReadOnly: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Open(tt.path, tt.opts)
			if err == nil {
				d.Close()
				t.Fatal("Open succeeded")
			}
		})
	}
}

func TestKeys(t *testing.T) {
	for _, n := range []uint64{0, 1, 255, 256, 1 << 40, ^uint64(0)} {
		if got := btoi(itob(n)); got != n {
			t.Errorf("btoi(itob(%d)) = %d", n, got)
		}
	}
	if string(itob(1)) >= string(itob(256)) {
		t.Error("keys do not sort numerically")
	}
}
