package db

import (
	"context"
	"fmt"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// walkTotal counts team's index entries in status (any when empty) the
// slow way, to check the stored counts against.
func walkTotal(t *testing.T, d *DB, team, status string) int {
	t.Helper()
	n := 0
	d.bolt.View(func(tx *bolt.Tx) error {
		prefix := append([]byte(team), 0)
		c := tx.Bucket(bucketInvestigationsByTeam).Cursor()
		for k, v := c.Seek(prefix); k != nil && string(k[:min(len(k), len(prefix))]) == string(prefix); k, v = c.Next() {
			if status == "" || string(v) == status {
				n++
			}
		}
		return nil
	})
	return n
}

func checkTotals(t *testing.T, d *DB, teams ...string) {
	t.Helper()
	for _, team := range teams {
		for _, st := range []string{"", StatusPending, StatusRunning, StatusCompleted, StatusFailed, StatusCancelled} {
			list, total, err := d.ListInvestigations(context.Background(), InvestigationFilter{Team: team, Status: st, Limit: 5})
			if err != nil {
				t.Fatal(err)
			}
			want := walkTotal(t, d, team, st)
			if total != want {
				t.Fatalf("team %s status %q: total %d, index holds %d", team, st, total, want)
			}
			if len(list) != min(5, want) {
				t.Fatalf("team %s status %q: page of %d, want %d", team, st, len(list), min(5, want))
			}
		}
	}
}

// TestInvestigationCounts moves investigations through every transition
// and retention and checks each list total against the index.
func TestInvestigationCounts(t *testing.T) {
	d, _ := openTree(t)
	ctx := context.Background()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 60 {
		team := []string{"payments", "search"}[i%2]
		inv := &Investigation{ID: fmt.Sprintf("inv-%03d", i), Team: team, Agent: "a", Status: StatusPending, CreatedAt: base.Add(time.Duration(i) * time.Minute)}
		if err := d.CreateInvestigation(ctx, inv); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.CreateInvestigation(ctx, &Investigation{ID: "inv-000", Team: "payments", Status: StatusPending, CreatedAt: base}); ErrorCode(err) != ECONFLICT {
		t.Fatalf("duplicate create: %v", err)
	}
	checkTotals(t, d, "payments", "search", "nobody")
	for i := range 60 {
		id := fmt.Sprintf("inv-%03d", i)
		steps := []string{StatusRunning, []string{StatusCompleted, StatusFailed, StatusCancelled}[i%3]}
		if i%5 == 0 {
			steps = steps[:1] // left running
		}
		for _, st := range steps {
			if _, err := d.UpdateInvestigation(ctx, id, func(inv *Investigation) error { inv.Status = st; return nil }); err != nil {
				t.Fatal(err)
			}
		}
		// An update that fails changes nothing.
		d.UpdateInvestigation(ctx, id, func(inv *Investigation) error { inv.Status = StatusPending; return fmt.Errorf("refused") })
		// An update that keeps the status keeps the counts.
		if _, err := d.UpdateInvestigation(ctx, id, func(inv *Investigation) error { inv.Message = "x"; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	checkTotals(t, d, "payments", "search")
	n, err := d.DeleteInvestigationsBefore(ctx, base.Add(30*time.Minute))
	if err != nil || n == 0 {
		t.Fatalf("retention deleted %d, %v", n, err)
	}
	checkTotals(t, d, "payments", "search")

	// Migration 0004 rebuilds the same counts from the index.
	var before map[string]uint64
	readCounts := func() map[string]uint64 {
		m := map[string]uint64{}
		d.bolt.View(func(tx *bolt.Tx) error {
			return tx.Bucket(bucketInvestigationCounts).ForEach(func(k, v []byte) error { m[string(k)] = btoi(v); return nil })
		})
		return m
	}
	before = readCounts()
	if err := d.bolt.Update(func(tx *bolt.Tx) error {
		if err := tx.DeleteBucket(bucketInvestigationCounts); err != nil {
			return err
		}
		return migration0004InvestigationCounts.Up(tx)
	}); err != nil {
		t.Fatal(err)
	}
	after := readCounts()
	if fmt.Sprint(before) != fmt.Sprint(after) || len(after) == 0 {
		t.Fatalf("counts before the migration %v, rebuilt %v", before, after)
	}
	checkTotals(t, d, "payments", "search")
}
