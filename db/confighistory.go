package db

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"

	bolt "go.etcd.io/bbolt"
)

// Config history snapshots.
//
// An audit entry in bucketConfigVersions holds the change (diff, who,
// when) but not the node's full document after it: that lives in
// bucketConfigSnapshots, one record per applied version, keyed
// node ‖ 0x00 ‖ u64be version. A record is either a full copy of the
// node's own document ('F' ‖ JSON) or an RFC 7396 merge patch from the
// previous version's document ('P' ‖ JSON), so a version costs space in
// proportion to its change. A full copy is written for a node's first
// version, at least every fullSnapshotEvery versions, whenever the patches
// since the last full copy would outweigh a new one, and whenever a patch
// would not reproduce the document byte for byte (each patch is checked by
// applying it before it is stored). Reading a version starts from the
// nearest full copy at or before it and applies the patches in order.
//
// Reading the history without full_config never touches this bucket.
// Options.ConfigHistoryKeep prunes it: only the newest versions of each
// node stay reconstructable (see pruneSnapshots).

// bucketConfigSnapshots: node ‖ 0x00 ‖ u64be version -> snapshot record.
// Created by migration 0003.
var bucketConfigSnapshots = []byte("config_snapshots")

// Snapshot record kinds (the record's first byte).
const (
	snapFull  = 'F'
	snapPatch = 'P'
)

// fullSnapshotEvery bounds the patches applied to read one version.
const fullSnapshotEvery = 64

func snapshotKey(node string, version int64) []byte {
	return append(auditPrefix(node), itob(uint64(version))...)
}

// chainSince walks back from the record before version and returns the
// number of patch records since the last full copy and their total size;
// ok is false when version-1 has no record (no chain to extend).
func chainSince(b *bolt.Bucket, node string, version int64) (patches, size int, ok bool) {
	prefix := auditPrefix(node)
	c := b.Cursor()
	k, v := c.Seek(snapshotKey(node, version))
	if k == nil {
		k, v = c.Last()
	} else {
		k, v = c.Prev()
	}
	want := version - 1
	for ; k != nil && bytes.HasPrefix(k, prefix) && len(k) == len(prefix)+8; k, v = c.Prev() {
		if int64(btoi(k[len(prefix):])) != want || len(v) == 0 {
			return 0, 0, false
		}
		if v[0] == snapFull {
			return patches, size, true
		}
		patches++
		size += len(v)
		want--
	}
	return 0, 0, false
}

// putSnapshot stores the record of node's version whose document is next,
// given prev, the document of version-1 (nil: none known). It writes a
// patch when that is exact and worth it, else a full copy.
func putSnapshot(tx *bolt.Tx, node string, version int64, prev, next []byte) error {
	b := tx.Bucket(bucketConfigSnapshots)
	if b == nil {
		return &Error{Code: EINTERNAL, Message: "config_snapshots bucket missing: run the migrations"}
	}
	rec := fullRecord(next)
	if prev != nil {
		if patches, size, ok := chainSince(b, node, version); ok && patches+1 < fullSnapshotEvery {
			if p, err := patchRecord(prev, next); err == nil && p != nil && size+len(p) < len(next) {
				rec = p
			}
		}
	}
	return b.Put(snapshotKey(node, version), rec)
}

func fullRecord(doc []byte) []byte {
	rec := make([]byte, 0, len(doc)+1)
	return append(append(rec, snapFull), doc...)
}

// patchRecord returns the patch record turning prev into next, or nil when
// a patch would not reproduce next exactly.
func patchRecord(prev, next []byte) ([]byte, error) {
	var from, to map[string]any
	if err := decodeNumbers(prev, &from); err != nil {
		return nil, err
	}
	if err := decodeNumbers(next, &to); err != nil {
		return nil, err
	}
	if from == nil {
		from = map[string]any{}
	}
	patch := mergePatchFrom(from, to)
	pb, err := json.Marshal(patch)
	if err != nil {
		return nil, err
	}
	// Check the record as it will be read: decoded from its bytes and
	// applied to prev's document, it must give next byte for byte.
	var decoded map[string]any
	if err := decodeNumbers(pb, &decoded); err != nil {
		return nil, err
	}
	applyMergePatch(from, decoded)
	got, err := json.Marshal(from)
	if err != nil || !bytes.Equal(got, next) {
		return nil, err
	}
	rec := make([]byte, 0, len(pb)+1)
	return append(append(rec, snapPatch), pb...), nil
}

// mergePatchFrom returns the RFC 7396 merge patch turning from into to
// (null members delete keys). Values are shared with to, not copied.
func mergePatchFrom(from, to map[string]any) map[string]any {
	p := map[string]any{}
	for k := range from {
		if _, ok := to[k]; !ok {
			p[k] = nil
		}
	}
	for k, tv := range to {
		fv, had := from[k]
		if had {
			fm, fIsMap := fv.(map[string]any)
			tm, tIsMap := tv.(map[string]any)
			if fIsMap && tIsMap {
				if sub := mergePatchFrom(fm, tm); len(sub) > 0 {
					p[k] = sub
				}
				continue
			}
			if reflect.DeepEqual(fv, tv) {
				continue
			}
		}
		p[k] = tv
	}
	return p
}

// applyMergePatch applies patch to doc in place (RFC 7396). The patch's
// values become part of doc.
func applyMergePatch(doc, patch map[string]any) {
	for k, pv := range patch {
		if pv == nil {
			delete(doc, k)
			continue
		}
		if pm, ok := pv.(map[string]any); ok {
			tm, ok := doc[k].(map[string]any)
			if !ok {
				tm = map[string]any{}
			}
			applyMergePatch(tm, pm)
			doc[k] = tm
			continue
		}
		doc[k] = pv
	}
}

// configVersions returns node's own document at every version from lo to
// hi that is still reconstructable, as compact JSON. Versions whose
// records were pruned (or never stored) are absent from the map.
func configVersions(tx *bolt.Tx, node string, lo, hi int64) (map[int64][]byte, error) {
	out := map[int64][]byte{}
	b := tx.Bucket(bucketConfigSnapshots)
	if b == nil || lo > hi {
		return out, nil
	}
	prefix := auditPrefix(node)
	inPrefix := func(k []byte) bool { return k != nil && bytes.HasPrefix(k, prefix) && len(k) == len(prefix)+8 }
	c := b.Cursor()
	// Find the start: the newest full copy at or before lo, else the first
	// record after lo.
	k, v := c.Seek(snapshotKey(node, lo))
	if !inPrefix(k) || int64(btoi(k[len(prefix):])) != lo || v[0] != snapFull {
		bk, bv := k, v
		if k == nil {
			bk, bv = c.Last()
		} else {
			bk, bv = c.Prev()
		}
		for ; inPrefix(bk); bk, bv = c.Prev() {
			if len(bv) > 0 && bv[0] == snapFull {
				break
			}
		}
		if inPrefix(bk) {
			k, v = bk, bv
		} else {
			k, v = c.Seek(snapshotKey(node, lo))
		}
	}
	var (
		doc  map[string]any
		last int64 = -1
	)
	for ; inPrefix(k); k, v = c.Next() {
		ver := int64(btoi(k[len(prefix):]))
		if ver > hi {
			break
		}
		if len(v) == 0 {
			doc = nil
			continue
		}
		switch v[0] {
		case snapFull:
			doc = nil
			if err := decodeNumbers(v[1:], &doc); err != nil {
				return nil, &Error{Code: EINTERNAL, Err: fmt.Errorf("config snapshot %s v%d: %w", node, ver, err)}
			}
			if doc == nil {
				doc = map[string]any{}
			}
		case snapPatch:
			if doc == nil || ver != last+1 {
				doc = nil // the chain is broken (pruned): skip to the next full copy
				break
			}
			var patch map[string]any
			if err := decodeNumbers(v[1:], &patch); err != nil {
				return nil, &Error{Code: EINTERNAL, Err: fmt.Errorf("config snapshot %s v%d: %w", node, ver, err)}
			}
			applyMergePatch(doc, patch)
		default:
			return nil, &Error{Code: EINTERNAL, Message: fmt.Sprintf("config snapshot %s v%d: unknown record kind %q", node, ver, v[0])}
		}
		last = ver
		if doc != nil && ver >= lo {
			buf, err := json.Marshal(doc)
			if err != nil {
				return nil, &Error{Code: EINTERNAL, Err: err}
			}
			out[ver] = buf
		}
	}
	return out, nil
}

// pruneSnapshots deletes node's snapshot records that are no longer needed
// to read its newest keep versions: every record before the newest full
// copy at or before version-keep+1. keep <= 0 keeps everything.
func pruneSnapshots(tx *bolt.Tx, node string, version int64, keep int) error {
	if keep <= 0 || version-int64(keep)+1 <= 1 {
		return nil
	}
	b := tx.Bucket(bucketConfigSnapshots)
	prefix := auditPrefix(node)
	oldest := version - int64(keep) + 1
	c := b.Cursor()
	k, v := c.Seek(snapshotKey(node, oldest))
	if k == nil || !bytes.HasPrefix(k, prefix) || int64(btoi(k[len(prefix):])) != oldest {
		return nil
	}
	for ; k != nil && bytes.HasPrefix(k, prefix); k, v = c.Prev() {
		if len(v) > 0 && v[0] == snapFull {
			break
		}
	}
	if k == nil || !bytes.HasPrefix(k, prefix) {
		return nil
	}
	base := btoi(k[len(prefix):])
	var dead [][]byte
	for k, _ = c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && btoi(k[len(prefix):]) < base; k, _ = c.Next() {
		dead = append(dead, cloneBytes(k))
	}
	for _, k := range dead {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}
