package db

import (
	"path/filepath"
	"testing"
)

// MustOpen opens a new, migrated database in a temporary directory for a
// test and closes it when the test ends. It is cheap enough that tests of
// other packages use a real database instead of mocks.
func MustOpen(tb testing.TB) *DB {
	tb.Helper()
	d, err := Open(filepath.Join(tb.TempDir(), FileName), Options{})
	if err != nil {
		tb.Fatalf("opening test database: %v", err)
	}
	tb.Cleanup(func() {
		if err := d.Close(); err != nil {
			tb.Errorf("closing test database: %v", err)
		}
	})
	return d
}
