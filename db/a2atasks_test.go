package db_test

import (
	"context"
	"path/filepath"
	"testing"

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
