package db

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// bucketA2ATasks: A2A task id -> JSON a2aTaskRecord. Created by migration
// 0002.
var bucketA2ATasks = []byte("a2a_tasks")

// MaxA2ATaskBytes bounds one stored A2A task (its history and artifacts).
const MaxA2ATaskBytes = 4 << 20

// a2aTaskRecord is a stored A2A task with its owner.
type a2aTaskRecord struct {
	Team      string          `json:"team"`
	Task      json.RawMessage `json:"task"`
	UpdatedAt time.Time       `json:"updated_at"`
}

// SaveA2ATask stores task (the A2A Task object as JSON) under id for team.
// A task belongs to the team that created it: saving a task id another
// team owns is ENOTFOUND, exactly as reading it is, so no caller can tell
// another team's task from a missing one, nor overwrite it.
func (d *DB) SaveA2ATask(ctx context.Context, team, id string, task json.RawMessage) error {
	if team == "" || id == "" {
		return Errorf(EINVALID, "an A2A task needs a team and an id")
	}
	if len(task) > MaxA2ATaskBytes {
		return Errorf(ETOOLARGE, "A2A task %s exceeds %d bytes", id, MaxA2ATaskBytes)
	}
	return d.update(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketA2ATasks)
		if b == nil {
			return fmt.Errorf("bucket %s missing (migration 0002 not applied)", bucketA2ATasks)
		}
		if raw := b.Get([]byte(id)); raw != nil {
			var old a2aTaskRecord
			if err := json.Unmarshal(raw, &old); err != nil {
				return fmt.Errorf("a2a task %s: %w", id, err)
			}
			if old.Team != team {
				return Errorf(ENOTFOUND, "task %s not found", id)
			}
		}
		v, err := json.Marshal(a2aTaskRecord{Team: team, Task: task, UpdatedAt: d.now().UTC()})
		if err != nil {
			return err
		}
		return b.Put([]byte(id), v)
	})
}

// A2ATask returns the task id of team; a missing task and another team's
// are the same ENOTFOUND.
func (d *DB) A2ATask(ctx context.Context, team, id string) (json.RawMessage, error) {
	var out json.RawMessage
	err := d.view(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketA2ATasks)
		var raw []byte
		if b != nil {
			raw = b.Get([]byte(id))
		}
		if raw == nil {
			return Errorf(ENOTFOUND, "task %s not found", id)
		}
		var rec a2aTaskRecord
		if err := json.Unmarshal(raw, &rec); err != nil {
			return fmt.Errorf("a2a task %s: %w", id, err)
		}
		if rec.Team != team || team == "" {
			return Errorf(ENOTFOUND, "task %s not found", id)
		}
		out = append(json.RawMessage(nil), rec.Task...)
		return nil
	})
	return out, err
}

// A2ATaskPruner deletes finished A2A tasks (retention); *DB implements it.
type A2ATaskPruner interface {
	DeleteA2ATasksBefore(ctx context.Context, t time.Time) (int, error)
}

// a2aFinalStates are the A2A task states after which a task no longer
// changes (the protocol's terminal states).
var a2aFinalStates = map[string]bool{"completed": true, "canceled": true, "failed": true, "rejected": true}

// DeleteA2ATasksBefore deletes the A2A tasks of every team that are in a
// final state (completed, canceled, failed, rejected) and were last saved
// before t, and returns how many it deleted. Tasks still running or
// waiting are kept whatever their age (one cut off by a restart becomes
// final when next read, and goes at a later pass). The tasks are read
// outside the write transaction, so writers wait only for the deletes.
func (d *DB) DeleteA2ATasksBefore(ctx context.Context, t time.Time) (int, error) {
	var dead [][]byte
	err := d.view(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketA2ATasks)
		if b == nil {
			return fmt.Errorf("bucket %s missing (migration 0002 not applied)", bucketA2ATasks)
		}
		return b.ForEach(func(k, v []byte) error {
			if a2aTaskExpired(v, t) {
				dead = append(dead, bytes.Clone(k))
			}
			return nil
		})
	})
	if err != nil || len(dead) == 0 {
		return 0, err
	}
	n := 0
	err = d.update(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketA2ATasks)
		for _, k := range dead {
			// saved again since it was read: judged again
			if v := b.Get(k); v != nil && a2aTaskExpired(v, t) {
				if err := b.Delete(k); err != nil {
					return err
				}
				n++
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// a2aTaskExpired reports whether a stored task record is final and was
// last saved before t. An unreadable record is kept, for an operator to
// look at.
func a2aTaskExpired(v []byte, t time.Time) bool {
	var rec struct {
		UpdatedAt time.Time `json:"updated_at"`
		Task      struct {
			Status struct {
				State string `json:"state"`
			} `json:"status"`
		} `json:"task"`
	}
	return json.Unmarshal(v, &rec) == nil && a2aFinalStates[rec.Task.Status.State] && rec.UpdatedAt.Before(t)
}
