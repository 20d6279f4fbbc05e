package db

import (
	"bytes"
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// migration0003ConfigHistory moves each applied audit entry's full_config
// (a full copy of the node's document per version, about as large as the
// document) out of the entry into the snapshot records of
// bucketConfigSnapshots: a full copy or an exact merge patch from the
// previous version (confighistory.go). Every version reads back byte for
// byte as before; TestMigration0003 compares them all.
//
// Entries are read in chunks and the cursor re-seeks after each chunk's
// writes, so no slice of the file is held across a write.
var migration0003ConfigHistory = Migration{
	Name: "0003_config_history_snapshots",
	Up: func(tx *bolt.Tx) error {
		if _, err := tx.CreateBucketIfNotExists(bucketConfigSnapshots); err != nil {
			return fmt.Errorf("creating bucket %s: %w", bucketConfigSnapshots, err)
		}
		versions := tx.Bucket(bucketConfigVersions)
		if versions == nil {
			return nil
		}
		type entry struct{ key, val []byte }
		var (
			prevNode string
			prevVer  int64
			prevDoc  []byte
			next     []byte // key to resume at; nil: the first
			started  bool
		)
		for {
			var chunk []entry
			c := versions.Cursor()
			var k, v []byte
			if !started {
				k, v = c.First()
				started = true
			} else {
				k, v = c.Seek(next)
			}
			for ; k != nil && len(chunk) < 64; k, v = c.Next() {
				chunk = append(chunk, entry{cloneBytes(k), cloneBytes(v)})
			}
			if len(chunk) == 0 {
				return nil
			}
			if k != nil {
				next = cloneBytes(k)
			}
			for _, e := range chunk {
				if len(e.key) < 9 || e.key[len(e.key)-9] != 0 {
					return fmt.Errorf("config_versions: malformed key %q", e.key)
				}
				node := string(e.key[:len(e.key)-9])
				var raw map[string]json.RawMessage
				if err := json.Unmarshal(e.val, &raw); err != nil {
					return fmt.Errorf("config_versions %s: %w", e.key, err)
				}
				full, has := raw["full_config"]
				if !has {
					continue
				}
				delete(raw, "full_config")
				var head struct {
					Version int64  `json:"version"`
					Event   string `json:"event"`
				}
				if err := json.Unmarshal(e.val, &head); err != nil {
					return fmt.Errorf("config_versions %s: %w", e.key, err)
				}
				if head.Event == "applied" && !bytes.Equal(full, []byte("null")) {
					var doc bytes.Buffer
					if err := json.Compact(&doc, full); err != nil {
						return fmt.Errorf("config_versions %s full_config: %w", e.key, err)
					}
					var prev []byte
					if node == prevNode && head.Version == prevVer+1 {
						prev = prevDoc
					}
					if err := putSnapshot(tx, node, head.Version, prev, doc.Bytes()); err != nil {
						return fmt.Errorf("config %s version %d: %w", node, head.Version, err)
					}
					prevNode, prevVer, prevDoc = node, head.Version, doc.Bytes()
				}
				buf, err := json.Marshal(raw)
				if err != nil {
					return err
				}
				if err := versions.Put(e.key, buf); err != nil {
					return err
				}
			}
			if k == nil {
				return nil
			}
		}
	},
}
