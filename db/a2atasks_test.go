package db_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/rootcause/rootcause/db"
)

// A task belongs to the team that saved it: another team can neither read
// nor overwrite it, and cannot tell it from a missing one. Tasks outlive
// the process.
func TestA2ATasksOwnedAndDurable(t *testing.T) {
	path := filepath.Join(t.TempDir(), db.FileName)
	d, err := db.Open(path, db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := d.SaveA2ATask(ctx, "search", "t1", []byte(`{"id":"t1","secret":"s"}`)); err != nil {
		t.Fatal(err)
	}
	_, errOther := d.A2ATask(ctx, "payments", "t1")
	_, errMissing := d.A2ATask(ctx, "payments", "nope")
	if db.ErrorCode(errOther) != db.ENOTFOUND || db.ErrorCode(errMissing) != db.ENOTFOUND || db.ErrorMessage(errOther) != "task t1 not found" {
		t.Fatalf("other team: %v; missing: %v", errOther, errMissing)
	}
	if err := d.SaveA2ATask(ctx, "payments", "t1", []byte(`{"id":"t1","secret":"overwritten"}`)); db.ErrorCode(err) != db.ENOTFOUND {
		t.Fatalf("overwrite by another team: %v", err)
	}
	if _, err := d.A2ATask(ctx, "", "t1"); db.ErrorCode(err) != db.ENOTFOUND {
		t.Fatalf("no team: %v", err)
	}
	if err := d.SaveA2ATask(ctx, "search", "t1", []byte(`{"id":"t1","secret":"s2"}`)); err != nil {
		t.Fatal(err)
	}
	d.Close()
	d, err = db.Open(path, db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	got, err := d.A2ATask(ctx, "search", "t1")
	if err != nil || string(got) != `{"id":"t1","secret":"s2"}` {
		t.Fatalf("after reopening: %s %v", got, err)
	}
}

// Retention deletes the tasks in a final state last saved before the
// cutoff, of every team, and keeps running, waiting and newer ones.
func TestA2ATasksDeletedAfterRetention(t *testing.T) {
	now := time.Date(2026, 3, 14, 10, 0, 0, 0, time.UTC)
	d, err := db.Open(filepath.Join(t.TempDir(), db.FileName), db.Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx := context.Background()
	tasks := []struct {
		team, id, state string
		age             time.Duration
		kept            bool
	}{
		{"search", "old-completed", "completed", 48 * time.Hour, false},
		{"payments", "old-failed", "failed", 48 * time.Hour, false},
		{"payments", "old-canceled", "canceled", 25 * time.Hour, false},
		{"search", "old-rejected", "rejected", 25 * time.Hour, false},
		{"search", "old-working", "working", 48 * time.Hour, true},
		{"search", "old-submitted", "submitted", 48 * time.Hour, true},
		{"payments", "old-input-required", "input-required", 48 * time.Hour, true},
		{"search", "new-completed", "completed", time.Hour, true},
		{"payments", "at-cutoff", "completed", 24 * time.Hour, true},
	}
	for _, tk := range tasks {
		now = time.Date(2026, 3, 14, 10, 0, 0, 0, time.UTC).Add(-tk.age)
		body := fmt.Sprintf(`{"kind":"task","id":%q,"contextId":"c","status":{"state":%q}}`, tk.id, tk.state)
		if err := d.SaveA2ATask(ctx, tk.team, tk.id, []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	now = time.Date(2026, 3, 14, 10, 0, 0, 0, time.UTC)
	n, err := d.DeleteA2ATasksBefore(ctx, now.Add(-24*time.Hour))
	if err != nil || n != 4 {
		t.Fatalf("deleted %d (%v), want 4", n, err)
	}
	for _, tk := range tasks {
		_, err := d.A2ATask(ctx, tk.team, tk.id)
		if kept := err == nil; kept != tk.kept {
			t.Errorf("%s: kept %v (%v), want %v", tk.id, kept, err, tk.kept)
		}
	}
	if n, err := d.DeleteA2ATasksBefore(ctx, now.Add(-24*time.Hour)); err != nil || n != 0 {
		t.Errorf("second pass deleted %d (%v)", n, err)
	}
}
