package db

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Investigations are stored by id in bucketInvestigations. The index
// bucketInvestigationsByTeam maps team ‖ 0x00 ‖ u64be created-unix-nanos ‖
// id to the investigation's status, so a team's list is a reverse prefix
// scan that filters by status and counts exactly without decoding records,
// and restart recovery finds unfinished work without reading every record.
// Events are keyed id ‖ 0x00 ‖ u64be seq in bucketInvestigationEvents.
//
// bucketInvestigationCounts keeps, per team and status, the number of index
// entries, changed in the same transaction as the index: a list's exact
// total is one or a few reads whatever the team's size.

// bucketInvestigationCounts: team ‖ 0x00 ‖ status -> u64be count of the
// team's investigations in that status. Created by migration 0004.
var bucketInvestigationCounts = []byte("investigation_counts")

func countKey(team, status string) []byte {
	k := make([]byte, 0, len(team)+1+len(status))
	k = append(k, team...)
	k = append(k, 0)
	return append(k, status...)
}

// addCount adds delta to team's count of investigations in status.
func addCount(tx *bolt.Tx, team, status string, delta int64) error {
	b := tx.Bucket(bucketInvestigationCounts)
	if b == nil {
		return &Error{Code: EINTERNAL, Message: "investigation_counts bucket missing: run the migrations"}
	}
	k := countKey(team, status)
	n := int64(btoi(b.Get(k))) + delta
	if n <= 0 {
		return b.Delete(k)
	}
	return b.Put(k, itob(uint64(n)))
}

// teamCount returns how many of team's investigations are in status (any
// status when empty).
func teamCount(tx *bolt.Tx, team, status string) int {
	b := tx.Bucket(bucketInvestigationCounts)
	if b == nil {
		return 0
	}
	if status != "" {
		return int(btoi(b.Get(countKey(team, status))))
	}
	prefix := countKey(team, "")
	n := 0
	c := b.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		n += int(btoi(v))
	}
	return n
}

// putIndex stores inv's index entry with status and moves the team's
// counts from old (empty: a new entry).
func putIndex(tx *bolt.Tx, inv *Investigation, old string) error {
	if err := tx.Bucket(bucketInvestigationsByTeam).Put(teamIndexKey(inv.Team, inv.CreatedAt, inv.ID), []byte(inv.Status)); err != nil {
		return err
	}
	if old != "" {
		if err := addCount(tx, inv.Team, old, -1); err != nil {
			return err
		}
	}
	return addCount(tx, inv.Team, inv.Status, 1)
}

var _ InvestigationService = (*DB)(nil)

func teamIndexKey(team string, created time.Time, id string) []byte {
	k := make([]byte, 0, len(team)+1+8+len(id))
	k = append(k, team...)
	k = append(k, 0)
	k = append(k, itob(uint64(created.UnixNano()))...)
	return append(k, id...)
}

func eventKey(id string, seq uint64) []byte {
	k := make([]byte, 0, len(id)+9)
	k = append(k, id...)
	k = append(k, 0)
	return append(k, itob(seq)...)
}

func invNotFound(id string) error {
	if len(id) > 80 {
		id = id[:80] + "…"
	}
	return Errorf(ENOTFOUND, "investigation %q not found", id)
}

// CreateInvestigation stores a new investigation, indexes it under its
// team and appends events, in one transaction. A duplicate id is ECONFLICT.
func (d *DB) CreateInvestigation(ctx context.Context, inv *Investigation, events ...InvestigationEvent) error {
	if inv.ID == "" || inv.Team == "" {
		return Errorf(EINVALID, "investigation id and team are required")
	}
	return d.groupUpdate(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketInvestigations)
		if b.Get([]byte(inv.ID)) != nil {
			return Errorf(ECONFLICT, "investigation %s already exists", inv.ID)
		}
		if err := putJSON(b, []byte(inv.ID), inv); err != nil {
			return err
		}
		if err := putIndex(tx, inv, ""); err != nil {
			return err
		}
		for _, ev := range events {
			if _, err := appendEvent(tx, inv.ID, ev); err != nil {
				return err
			}
		}
		return nil
	})
}

// GetInvestigation returns the investigation id, or ENOTFOUND.
func (d *DB) GetInvestigation(ctx context.Context, id string) (*Investigation, error) {
	var inv Investigation
	err := d.view(ctx, func(tx *bolt.Tx) error {
		ok, err := getJSON(tx.Bucket(bucketInvestigations), []byte(id), &inv)
		if err != nil {
			return err
		}
		if !ok {
			return invNotFound(id)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &inv, nil
}

// UpdateInvestigation applies fn to the stored record in one transaction.
// An error from fn aborts the transaction and is returned unchanged.
func (d *DB) UpdateInvestigation(ctx context.Context, id string, fn func(*Investigation) error) (*Investigation, error) {
	return d.FinishInvestigation(ctx, id, fn, nil)
}

// FinishInvestigation applies fn and writes the outbox entries computed from
// the updated record in the same transaction.
func (d *DB) FinishInvestigation(ctx context.Context, id string, fn func(*Investigation) error, outbox func(*Investigation) []OutboxEntry) (*Investigation, error) {
	return d.WriteInvestigation(ctx, id, InvestigationWrite{Update: fn, Outbox: outbox})
}

// WriteInvestigation applies w in one transaction; see InvestigationWrite.
func (d *DB) WriteInvestigation(ctx context.Context, id string, w InvestigationWrite) (*Investigation, error) {
	var out Investigation
	err := d.groupUpdate(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketInvestigations)
		var inv Investigation
		ok, err := getJSON(b, []byte(id), &inv)
		if err != nil {
			return err
		}
		if !ok {
			return invNotFound(id)
		}
		if w.Update != nil {
			oldStatus := inv.Status
			if err := w.Update(&inv); err != nil {
				return err
			}
			if inv.ID != id {
				return fmt.Errorf("investigation id changed from %s to %s", id, inv.ID)
			}
			if err := putJSON(b, []byte(id), &inv); err != nil {
				return err
			}
			if inv.Status != oldStatus {
				if err := putIndex(tx, &inv, oldStatus); err != nil {
					return err
				}
			}
		}
		if w.Outbox != nil {
			for _, e := range w.Outbox(&inv) {
				if err := putOutboxEntry(tx, e, d.now()); err != nil { // db/outbox.go
					return err
				}
			}
		}
		if w.Events != nil {
			for _, ev := range w.Events(&inv) {
				if _, err := appendEvent(tx, id, ev); err != nil {
					return err
				}
			}
		}
		out = inv
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// ListInvestigations returns a team's investigations newest first, with the
// exact total that match the filter (from the counts, never a walk).
func (d *DB) ListInvestigations(ctx context.Context, f InvestigationFilter) ([]*Investigation, int, error) {
	if f.Team == "" {
		return nil, 0, Errorf(EINVALID, "team is required to list investigations")
	}
	if f.Limit <= 0 {
		f.Limit = 20
	}
	if f.Offset < 0 {
		f.Offset = 0
	}
	var list []*Investigation
	total := 0
	err := d.view(ctx, func(tx *bolt.Tx) error {
		total = teamCount(tx, f.Team, f.Status)
		idx := tx.Bucket(bucketInvestigationsByTeam).Cursor()
		recs := tx.Bucket(bucketInvestigations)
		prefix := append([]byte(f.Team), 0)
		// Seek past the team's last key, then walk backwards: newest first.
		end := append(bytes.Clone(prefix), bytes.Repeat([]byte{0xff}, 9)...)
		k, v := idx.Seek(end)
		if k == nil {
			k, v = idx.Last()
		} else {
			k, v = idx.Prev()
		}
		skip := f.Offset
		for ; k != nil && bytes.HasPrefix(k, prefix) && len(list) < f.Limit; k, v = idx.Prev() {
			if f.Status != "" && string(v) != f.Status {
				continue
			}
			if skip > 0 {
				skip--
				continue
			}
			id := k[len(prefix)+8:]
			var inv Investigation
			ok, err := getJSON(recs, id, &inv)
			if err != nil {
				return err
			}
			if ok {
				list = append(list, &inv)
			}
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	return list, total, nil
}

// AppendInvestigationEvent stores ev with the next sequence number of id's
// event log and returns it.
func (d *DB) AppendInvestigationEvent(ctx context.Context, id string, ev InvestigationEvent) (uint64, error) {
	var seq uint64
	err := d.groupUpdate(ctx, func(tx *bolt.Tx) error {
		var err error
		seq, err = appendEvent(tx, id, ev)
		return err
	})
	return seq, err
}

// appendEvent stores ev as the next event of id inside tx.
func appendEvent(tx *bolt.Tx, id string, ev InvestigationEvent) (uint64, error) {
	b := tx.Bucket(bucketInvestigationEvents)
	c := b.Cursor()
	prefix := append([]byte(id), 0)
	seq := uint64(1)
	if k, _ := c.Seek(append(bytes.Clone(prefix), bytes.Repeat([]byte{0xff}, 8)...)); k != nil {
		if pk, _ := c.Prev(); pk != nil && bytes.HasPrefix(pk, prefix) {
			seq = btoi(pk[len(prefix):]) + 1
		}
	} else if lk, _ := c.Last(); lk != nil && bytes.HasPrefix(lk, prefix) {
		seq = btoi(lk[len(prefix):]) + 1
	}
	ev.Seq = seq
	return seq, putJSON(b, eventKey(id, seq), ev)
}

// InvestigationEvents returns id's events with a sequence above after.
func (d *DB) InvestigationEvents(ctx context.Context, id string, after uint64) ([]InvestigationEvent, error) {
	var out []InvestigationEvent
	err := d.view(ctx, func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketInvestigationEvents).Cursor()
		prefix := append([]byte(id), 0)
		for k, v := c.Seek(eventKey(id, after+1)); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			var ev InvestigationEvent
			if err := json.Unmarshal(v, &ev); err != nil {
				return fmt.Errorf("decoding event %x: %w", k, err)
			}
			out = append(out, ev)
		}
		return nil
	})
	return out, err
}

// UnfinishedInvestigations returns pending and running investigations,
// oldest first, found through the index without decoding finished ones.
func (d *DB) UnfinishedInvestigations(ctx context.Context) ([]*Investigation, error) {
	var out []*Investigation
	err := d.view(ctx, func(tx *bolt.Tx) error {
		recs := tx.Bucket(bucketInvestigations)
		return tx.Bucket(bucketInvestigationsByTeam).ForEach(func(k, v []byte) error {
			if s := string(v); s != StatusPending && s != StatusRunning {
				return nil
			}
			i := bytes.IndexByte(k, 0)
			if i < 0 || len(k) < i+9 {
				return nil
			}
			var inv Investigation
			ok, err := getJSON(recs, k[i+9:], &inv)
			if err != nil || !ok {
				return err
			}
			out = append(out, &inv)
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	sortByCreated(out)
	return out, nil
}

func sortByCreated(list []*Investigation) {
	for i := 1; i < len(list); i++ {
		for j := i; j > 0 && list[j].CreatedAt.Before(list[j-1].CreatedAt); j-- {
			list[j], list[j-1] = list[j-1], list[j]
		}
	}
}

// DeleteInvestigationsBefore deletes final investigations created before t,
// with their index entries and events.
func (d *DB) DeleteInvestigationsBefore(ctx context.Context, t time.Time) (int, error) {
	n := 0
	err := d.update(ctx, func(tx *bolt.Tx) error {
		idx := tx.Bucket(bucketInvestigationsByTeam)
		recs := tx.Bucket(bucketInvestigations)
		evs := tx.Bucket(bucketInvestigationEvents)
		var (
			dead       [][]byte
			deadStatus []string
		)
		err := idx.ForEach(func(k, v []byte) error {
			if !IsFinal(string(v)) {
				return nil
			}
			i := bytes.IndexByte(k, 0)
			if i < 0 || len(k) < i+9 {
				return nil
			}
			if int64(btoi(k[i+1:i+9])) < t.UnixNano() {
				dead = append(dead, bytes.Clone(k))
				deadStatus = append(deadStatus, string(v))
			}
			return nil
		})
		if err != nil {
			return err
		}
		for j, k := range dead {
			i := bytes.IndexByte(k, 0)
			id := k[i+9:]
			if err := idx.Delete(k); err != nil {
				return err
			}
			if err := addCount(tx, string(k[:i]), deadStatus[j], -1); err != nil {
				return err
			}
			if err := recs.Delete(id); err != nil {
				return err
			}
			prefix := append(bytes.Clone(id), 0)
			c := evs.Cursor()
			for ek, _ := c.Seek(prefix); ek != nil && bytes.HasPrefix(ek, prefix); ek, _ = c.Seek(prefix) {
				if err := c.Delete(); err != nil {
					return err
				}
			}
			n++
		}
		return nil
	})
	return n, err
}
