package db

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Migration is one numbered schema step. Up runs inside its own write
// transaction together with the record of its application, so a migration is
// applied completely or not at all. Migrations decode into their own snapshot
// structs, never the live domain types, so later changes to the types cannot
// change what an old migration does.
type Migration struct {
	Name string
	Up   func(tx *bolt.Tx) error
}

// migrations is the ordered list of every migration this binary knows.
// Migration N (1-based) is migrations[N-1]; append only, never reorder.
var migrations = []Migration{
	migration0001CreateBuckets,
	migration0002A2ATasks,
	migration0003ConfigHistory,
	migration0004InvestigationCounts,
}

// ErrNewerSchema is returned when the database records a migration this
// binary does not know: it was written by a newer rootcause.
var ErrNewerSchema = errors.New("database was written by a newer rootcause")

// migrationRecord is the value stored in the migrations bucket.
type migrationRecord struct {
	Name       string    `json:"name"`
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at"`
}

// MigrationStatus describes one known migration and whether it is applied.
type MigrationStatus struct {
	Number  int    `json:"number"`
	Name    string `json:"name"`
	Applied bool   `json:"applied"`
}

// appliedMigrations reads the migrations bucket and checks it against the
// known list: a migration recorded under a number this binary does not know,
// or under a different name, means a newer (or foreign) binary wrote the file.
func appliedMigrations(tx *bolt.Tx) (int, error) {
	b := tx.Bucket(bucketMigrations)
	if b == nil {
		return 0, nil
	}
	applied := 0
	err := b.ForEach(func(k, v []byte) error {
		if len(k) != 8 {
			return fmt.Errorf("migrations bucket: malformed key %x", k)
		}
		n := int(btoi(k))
		var rec migrationRecord
		if err := json.Unmarshal(v, &rec); err != nil {
			return fmt.Errorf("migrations bucket: record %d: %w", n, err)
		}
		if n < 1 || n > len(migrations) {
			return fmt.Errorf("%w: it records migration %d %q, this binary knows %d migration(s); upgrade rootcause or restore a backup", ErrNewerSchema, n, rec.Name, len(migrations))
		}
		if migrations[n-1].Name != rec.Name {
			return fmt.Errorf("%w: migration %d is %q in the file but %q in this binary; upgrade rootcause or restore a backup", ErrNewerSchema, n, rec.Name, migrations[n-1].Name)
		}
		if n != applied+1 {
			return fmt.Errorf("migrations bucket: migration %d recorded without migration %d", n, applied+1)
		}
		applied = n
		return nil
	})
	return applied, err
}

// MigrationStatus reports every known migration and whether the file has it.
func (d *DB) MigrationStatus() ([]MigrationStatus, error) {
	var applied int
	if err := d.bolt.View(func(tx *bolt.Tx) error {
		var err error
		applied, err = appliedMigrations(tx)
		return err
	}); err != nil {
		return nil, fmt.Errorf("reading migrations: %w", err)
	}
	out := make([]MigrationStatus, len(migrations))
	for i, m := range migrations {
		out[i] = MigrationStatus{Number: i + 1, Name: m.Name, Applied: i < applied}
	}
	return out, nil
}

// Migrate applies pending migrations and returns the names of those it
// applied, or with dryRun the names it would apply, changing nothing.
//
// Before migrating a file that already holds data (at least one applied
// migration) it writes a consistent copy next to it,
// rootcause.db.pre-migrate-<n>.bak, where n is the first pending migration.
// Each migration runs in its own write transaction with its record.
func (d *DB) Migrate(dryRun bool) ([]string, error) {
	status, err := d.MigrationStatus()
	if err != nil {
		return nil, err
	}
	var pending []int
	for _, s := range status {
		if !s.Applied {
			pending = append(pending, s.Number)
		}
	}
	names := make([]string, 0, len(pending))
	for _, n := range pending {
		names = append(names, migrations[n-1].Name)
	}
	if dryRun || len(pending) == 0 {
		return names, nil
	}
	if d.bolt.IsReadOnly() {
		return nil, fmt.Errorf("migrating: database is open read-only and has %d pending migration(s)", len(pending))
	}
	if pending[0] > 1 && d.path != "" {
		backup := fmt.Sprintf("%s.pre-migrate-%04d.bak", d.path, pending[0])
		if err := d.bolt.View(func(tx *bolt.Tx) error {
			return tx.CopyFile(backup, 0o600)
		}); err != nil {
			_ = os.Remove(backup)
			return nil, fmt.Errorf("writing pre-migration backup %s: %w", backup, err)
		}
		d.logf("wrote pre-migration backup", "path", backup)
	}
	for _, n := range pending {
		m := migrations[n-1]
		started := d.now().UTC()
		err := d.bolt.Update(func(tx *bolt.Tx) error {
			if err := m.Up(tx); err != nil {
				return err
			}
			b, err := tx.CreateBucketIfNotExists(bucketMigrations)
			if err != nil {
				return err
			}
			return putJSON(b, itob(uint64(n)), migrationRecord{Name: m.Name, StartedAt: started, FinishedAt: d.now().UTC()})
		})
		if err != nil {
			return nil, fmt.Errorf("applying migration %04d %s: %w", n, m.Name, err)
		}
		d.logf("applied migration", "number", n, "name", m.Name)
	}
	return names, nil
}
