package db

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/rootcause/rootcause/mergeconf"
)

// historyDoc is a team's own config of about 50 KB: 100 custom agents with
// 450-byte prompts, as in the server's config benchmarks.
func historyDoc() map[string]any {
	agents := map[string]any{}
	for i := range 100 {
		agents[fmt.Sprintf("agent_%03d", i)] = map[string]any{
			"prompt":  strings.Repeat(fmt.Sprintf("Investigate <service> %d & report; ", i), 13),
			"timeout": json.Number("30"),
			"tools":   []any{"list_pods", "get_events"},
		}
	}
	return map[string]any{"agents": agents, "slack_channel": "#payments"}
}

// historyEdit returns the merge patch of version v (v >= 2) of the
// history used by these tests: a mix of small leaf edits, additions,
// removals, arrays, number literals, non-ASCII and HTML-escaped text, and
// now and then a large rewrite.
func historyEdit(v int) map[string]any {
	a := fmt.Sprintf("agent_%03d", v%100)
	switch v % 7 {
	case 0:
		return map[string]any{"agents": map[string]any{a: map[string]any{"timeout": json.Number(strconv.Itoa(v))}}}
	case 1:
		return map[string]any{"slack_channel": fmt.Sprintf("#pay-%d-ünïcode-<&>", v)}
	case 2:
		return map[string]any{"agents": map[string]any{a: map[string]any{"tools": []any{"get_pod_logs", json.Number("1.50"), v}}}}
	case 3:
		return map[string]any{"extra": map[string]any{fmt.Sprintf("k%d", v%5): map[string]any{"n": json.Number("1e3")}}}
	case 4:
		return map[string]any{"extra": nil}
	case 5:
		if v%35 == 5 { // rewrite every prompt: a change as large as the document
			agents := map[string]any{}
			for i := range 100 {
				agents[fmt.Sprintf("agent_%03d", i)] = map[string]any{"prompt": strings.Repeat(fmt.Sprintf("v%d p%d ", v, i), 60)}
			}
			return map[string]any{"agents": agents}
		}
		return map[string]any{"agents": map[string]any{a: map[string]any{"prompt": fmt.Sprintf("rewritten at %d", v)}}}
	default:
		return map[string]any{"agents": map[string]any{a: nil}}
	}
}

// ownBytes returns node's stored own document.
func ownBytes(t testing.TB, d *DB, node string) []byte {
	t.Helper()
	var out []byte
	if err := d.bolt.View(func(tx *bolt.Tx) error {
		out = cloneBytes(tx.Bucket(bucketConfigs).Get([]byte(node)))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// snapshotStats counts node's snapshot records by kind and their bytes.
func snapshotStats(t testing.TB, d *DB, node string) (full, patch, size int) {
	t.Helper()
	d.bolt.View(func(tx *bolt.Tx) error {
		prefix := auditPrefix(node)
		c := tx.Bucket(bucketConfigSnapshots).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			size += len(k) + len(v)
			if v[0] == snapFull {
				full++
			} else {
				patch++
			}
		}
		return nil
	})
	return
}

func TestConfigHistorySnapshots(t *testing.T) {
	d, _ := openTree(t)
	ctx := context.Background()
	if _, err := d.PatchNodeConfig(ctx, "payments", historyDoc(), alice, nil); err != nil {
		t.Fatal(err)
	}
	want := map[int64][]byte{1: ownBytes(t, d, "payments")}
	const versions = 150
	for v := 2; v <= versions; v++ {
		ch, err := d.PatchNodeConfig(ctx, "payments", historyEdit(v), alice, nil)
		if err != nil {
			t.Fatal(err)
		}
		if ch.Version != int64(v) {
			t.Fatalf("version %d after edit %d (empty diff?)", ch.Version, v)
		}
		want[int64(v)] = ownBytes(t, d, "payments")
	}
	h, err := d.ConfigHistory(ctx, "payments", HistoryOptions{Limit: MaxHistoryLimit, IncludeFull: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != versions {
		t.Fatalf("%d entries, want %d", len(h), versions)
	}
	for _, e := range h {
		if !bytes.Equal(e.FullConfig, want[e.Version]) {
			t.Fatalf("version %d: full_config differs from the document stored then", e.Version)
		}
	}
	// A window in the middle reads the same bytes as the whole history.
	d.bolt.View(func(tx *bolt.Tx) error {
		got, err := configVersions(tx, "payments", 130, 140)
		if err != nil || len(got) != 11 {
			t.Fatalf("window: %d versions, %v", len(got), err)
		}
		for v, b := range got {
			if !bytes.Equal(b, want[v]) {
				t.Fatalf("window version %d differs", v)
			}
		}
		return nil
	})
	full, patch, size := snapshotStats(t, d, "payments")
	t.Logf("%d versions: %d full copies, %d patches, %d bytes of records (%d bytes per full copy)",
		versions, full, patch, size, len(want[versions]))
	if full > versions/fullSnapshotEvery+versions/35+3 || size > 20*len(want[versions]) {
		t.Errorf("%d full copies and %d bytes for %d versions: history not stored as changes", full, size, versions)
	}
	// Without include_full no entry carries a document.
	h, err = d.ConfigHistory(ctx, "payments", HistoryOptions{Limit: 10})
	if err != nil || len(h) != 10 || h[0].FullConfig != nil {
		t.Fatalf("include_full=false: %d entries, %v", len(h), err)
	}
}

func TestMergePatchRoundTrip(t *testing.T) {
	for _, tc := range []struct{ name, from, to string }{
		{"add and remove", `{"a":1,"b":{"c":2}}`, `{"b":{"d":3},"e":[1,2]}`},
		{"object to scalar", `{"a":{"b":1}}`, `{"a":"x"}`},
		{"scalar to object", `{"a":"x"}`, `{"a":{"b":{}}}`},
		{"number literals kept", `{"n":1.50}`, `{"m":1e3,"n":1.5}`},
		{"empty objects", `{"a":{}}`, `{"a":{},"b":{}}`},
		{"null member (patch cannot say it: full copy)", `{"a":1}`, `{"a":null}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, err := patchRecord([]byte(tc.from), []byte(tc.to))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(tc.name, "null member") {
				if rec != nil {
					t.Fatalf("patch %s accepted for a document with a null member", rec)
				}
				return
			}
			if rec == nil || rec[0] != snapPatch {
				t.Fatalf("no patch for %s -> %s", tc.from, tc.to)
			}
			var doc, p map[string]any
			decodeNumbers([]byte(tc.from), &doc)
			decodeNumbers(rec[1:], &p)
			applyMergePatch(doc, p)
			got, _ := json.Marshal(doc)
			var want bytes.Buffer
			json.Compact(&want, []byte(tc.to))
			if !bytes.Equal(got, want.Bytes()) {
				t.Fatalf("patch %s gives %s, want %s", rec[1:], got, want.Bytes())
			}
		})
	}
}

func TestConfigHistoryKeep(t *testing.T) {
	clock := &testClock{t: time.Date(2026, 3, 14, 10, 0, 0, 0, time.UTC)}
	d, err := Open(filepath.Join(t.TempDir(), FileName), Options{Now: clock.Now, ConfigHistoryKeep: 20})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx := context.Background()
	if _, err := d.EnsureOrg(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.CreateNode(ctx, Node{Name: "payments", Parent: "acme", Kind: KindTeam}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.PatchNodeConfig(ctx, "payments", historyDoc(), alice, nil); err != nil {
		t.Fatal(err)
	}
	want := map[int64][]byte{1: ownBytes(t, d, "payments")}
	const versions = 200
	for v := 2; v <= versions; v++ {
		if _, err := d.PatchNodeConfig(ctx, "payments", historyEdit(v), alice, nil); err != nil {
			t.Fatal(err)
		}
		want[int64(v)] = ownBytes(t, d, "payments")
	}
	h, err := d.ConfigHistory(ctx, "payments", HistoryOptions{Limit: MaxHistoryLimit, IncludeFull: true})
	if err != nil || len(h) != versions {
		t.Fatalf("%d entries, %v", len(h), err)
	}
	kept := 0
	for _, e := range h {
		switch {
		case e.FullConfig != nil:
			kept++
			if !bytes.Equal(e.FullConfig, want[e.Version]) {
				t.Fatalf("version %d: full_config differs", e.Version)
			}
		case e.Version > versions-20:
			t.Fatalf("version %d is among the newest 20 but has no full_config", e.Version)
		}
		if len(e.Diff) == 0 {
			t.Fatalf("version %d lost its diff", e.Version)
		}
	}
	full, patch, _ := snapshotStats(t, d, "payments")
	if kept < 20 || kept > 20+fullSnapshotEvery || full+patch != kept {
		t.Fatalf("%d versions readable, %d records: want 20 to %d", kept, full+patch, 20+fullSnapshotEvery)
	}
}

// legacyAuditEntry is an audit entry as written before migration 0003,
// with the full document inline.
type legacyAuditEntry struct {
	Version    int64                       `json:"version"`
	Event      string                      `json:"event"`
	ChangedAt  time.Time                   `json:"changed_at"`
	ChangedBy  string                      `json:"changed_by"`
	Diff       map[string]mergeconf.Change `json:"diff"`
	FullConfig json.RawMessage             `json:"full_config,omitempty"`
}

// writeLegacyHistory stores n versions of node's config in the layout
// before migration 0003 (a full copy inline in every applied entry, plus
// a "submitted" note every 10 versions) and returns every version's
// document.
func writeLegacyHistory(t testing.TB, d *DB, node string, n int) map[int64][]byte {
	t.Helper()
	docs := make(map[int64][]byte, n)
	doc := historyDoc()
	seq := uint64(0)
	at := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for lo := 1; lo <= n; lo += 500 {
		err := d.bolt.Update(func(tx *bolt.Tx) error {
			b := tx.Bucket(bucketConfigVersions)
			for v := lo; v < min(lo+500, n+1); v++ {
				old := doc
				if v > 1 {
					doc = mergeconf.MergePatch(doc, historyEdit(v))
				}
				buf, err := json.Marshal(doc)
				if err != nil {
					return err
				}
				docs[int64(v)] = buf
				diff := map[string]mergeconf.Change{"v": {Old: v - 1, New: v}}
				if v%100 == 0 {
					diff = mergeconf.Diff(old, doc)
				}
				seq++
				e := legacyAuditEntry{Version: int64(v), Event: EventApplied, ChangedAt: at.Add(time.Duration(v) * time.Minute),
					ChangedBy: "token:t1", Diff: diff, FullConfig: buf}
				if err := putJSON(b, append(auditPrefix(node), itob(seq)...), e); err != nil {
					return err
				}
				if v%10 == 0 {
					seq++
					note := legacyAuditEntry{Version: int64(v), Event: EventSubmitted, ChangedAt: e.ChangedAt, ChangedBy: "token:t2",
						Diff: map[string]mergeconf.Change{}}
					if err := putJSON(b, append(auditPrefix(node), itob(seq)...), note); err != nil {
						return err
					}
				}
			}
			if err := tx.Bucket(bucketConfigs).Put([]byte(node), docs[int64(min(lo+499, n))]); err != nil {
				return err
			}
			nd, err := findNode(tx, node)
			if err != nil {
				return err
			}
			nd.Version = int64(min(lo+499, n))
			return putJSON(tx.Bucket(bucketNodes), []byte(node), nd)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return docs
}

// compactedSize is the size of a compacted copy of the database: the space
// its data needs, free pages left out.
func compactedSize(t testing.TB, d *DB) int64 {
	t.Helper()
	path := filepath.Join(t.TempDir(), "compact.db")
	dst, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := bolt.Compact(dst, d.bolt, 64<<20); err != nil {
		t.Fatal(err)
	}
	dst.Close()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(path)
	return st.Size()
}

// TestMigration0003 writes a history in the layout before migration 0003,
// migrates it and compares every version's document, byte for byte and as
// JSON, before and after. 300 versions by default; set
// ROOTCAUSE_TEST_MIGRATION_VERSIONS=10000 for the large-database check
// (about a minute and 600 MB of temporary disk):
//
//	ROOTCAUSE_TEST_MIGRATION_VERSIONS=10000 go test ./db -run TestMigration0003 -v -timeout 30m
func TestMigration0003(t *testing.T) {
	n := 300
	if s := os.Getenv("ROOTCAUSE_TEST_MIGRATION_VERSIONS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 2 {
			t.Fatalf("ROOTCAUSE_TEST_MIGRATION_VERSIONS=%q: want a count of at least 2", s)
		}
	}
	d, _ := openTree(t)
	ctx := context.Background()
	start := time.Now()
	docs := writeLegacyHistory(t, d, "payments", n)
	// A second node, so one node's records never leak into another's.
	if _, err := d.PatchNodeConfig(ctx, "search", map[string]any{"slack_channel": "#search"}, alice, nil); err != nil {
		t.Fatal(err)
	}
	d.bolt.Update(func(tx *bolt.Tx) error { // search's entry in the legacy layout too
		return tx.Bucket(bucketConfigSnapshots).Delete(snapshotKey("search", 1))
	})
	legacySearch := legacyAuditEntry{Version: 1, Event: EventApplied, ChangedBy: "token:t1", FullConfig: json.RawMessage(`{"slack_channel":"#search"}`)}
	d.bolt.Update(func(tx *bolt.Tx) error {
		return putJSON(tx.Bucket(bucketConfigVersions), append(auditPrefix("search"), itob(1)...), legacySearch)
	})
	st, _ := os.Stat(d.path)
	before := compactedSize(t, d)
	t.Logf("legacy history of %d versions written in %v: file %.1f MB, compacted %.1f MB",
		n, time.Since(start).Round(time.Millisecond), float64(st.Size())/1e6, float64(before)/1e6)

	start = time.Now()
	if err := d.bolt.Update(migration0003ConfigHistory.Up); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	after := compactedSize(t, d)
	st, _ = os.Stat(d.path)
	t.Logf("migrated in %v: compacted %.1f MB -> %.1f MB (%.1f KB -> %.2f KB per version); file %.1f MB (bbolt keeps freed pages for reuse)",
		took.Round(time.Millisecond), float64(before)/1e6, float64(after)/1e6,
		float64(before)/float64(n)/1e3, float64(after)/float64(n)/1e3, float64(st.Size())/1e6)

	err := d.bolt.View(func(tx *bolt.Tx) error {
		got, err := configVersions(tx, "payments", 1, int64(n))
		if err != nil {
			return err
		}
		if len(got) != n {
			t.Fatalf("%d versions readable after the migration, want %d", len(got), n)
		}
		for v := int64(1); v <= int64(n); v++ {
			if !bytes.Equal(got[v], docs[v]) {
				var a, b any
				json.Unmarshal(got[v], &a)
				json.Unmarshal(docs[v], &b)
				t.Fatalf("version %d differs after the migration (JSON-equal: %v)", v, mergeconf.Equal(a, b))
			}
		}
		c := tx.Bucket(bucketConfigVersions).Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if bytes.Contains(v, []byte(`"full_config"`)) {
				t.Fatalf("entry %q still holds full_config", k)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	h, err := d.ConfigHistory(ctx, "search", HistoryOptions{IncludeFull: true})
	if err != nil || len(h) != 1 || string(h[0].FullConfig) != `{"slack_channel":"#search"}` {
		t.Fatalf("search history after the migration: %+v %v", h, err)
	}
	// The history API reads the migrated entries, notes included.
	h, err = d.ConfigHistory(ctx, "payments", HistoryOptions{Limit: 22, IncludeFull: true})
	if err != nil || len(h) != 22 {
		t.Fatalf("history: %d, %v", len(h), err)
	}
	for _, e := range h {
		if e.Event == EventApplied && !bytes.Equal(e.FullConfig, docs[e.Version]) {
			t.Fatalf("history version %d differs", e.Version)
		}
		if e.Event == EventSubmitted && e.FullConfig != nil {
			t.Fatalf("a note carries full_config")
		}
	}
	// New writes continue the chain.
	if _, err := d.PatchNodeConfig(ctx, "payments", map[string]any{"slack_channel": "#after"}, alice, nil); err != nil {
		t.Fatal(err)
	}
	h, err = d.ConfigHistory(ctx, "payments", HistoryOptions{Limit: 3, IncludeFull: true})
	if err != nil || !bytes.Equal(h[0].FullConfig, ownBytes(t, d, "payments")) || !bytes.Equal(h[2].FullConfig, docs[int64(n)]) {
		t.Fatalf("history after a new write: %v", err)
	}
}

// BenchmarkConfigHistory reads the newest 50 audit entries of a node with
// 1,000 versions of a 50 KB config (each version changes one agent's
// timeout), with and without full_config, and reports the answer's size.
//
//	go test ./db -run '^$' -bench ConfigHistory -benchtime 2s
func BenchmarkConfigHistory(b *testing.B) {
	d, _ := openTree(b)
	ctx := context.Background()
	if _, err := d.PatchNodeConfig(ctx, "payments", historyDoc(), alice, nil); err != nil {
		b.Fatal(err)
	}
	for v := 2; v <= 1000; v++ {
		edit := map[string]any{"agents": map[string]any{fmt.Sprintf("agent_%03d", v%100): map[string]any{"timeout": json.Number(strconv.Itoa(v))}}}
		if _, err := d.PatchNodeConfig(ctx, "payments", edit, alice, nil); err != nil {
			b.Fatal(err)
		}
	}
	for _, full := range []bool{false, true} {
		b.Run("include_full="+strconv.FormatBool(full), func(b *testing.B) {
			var size int
			for b.Loop() {
				h, err := d.ConfigHistory(ctx, "payments", HistoryOptions{Limit: 50, IncludeFull: full})
				if err != nil || len(h) != 50 || (h[0].FullConfig != nil) != full {
					b.Fatalf("%d entries, %v", len(h), err)
				}
				if size == 0 {
					buf, _ := json.Marshal(h)
					size = len(buf)
				}
			}
			b.ReportMetric(float64(size), "answer-bytes")
		})
	}
}

// BenchmarkConfigVersionGrowth writes 300 versions of a 50 KB config, each
// changing one agent's timeout, and reports how much the database grows
// per version (compacted size, so free pages are not counted) and the
// encoded size of the config.
//
//	go test ./db -run '^$' -bench ConfigVersionGrowth -benchtime 1x
func BenchmarkConfigVersionGrowth(b *testing.B) {
	for b.Loop() {
		d, _ := openTree(b)
		ctx := context.Background()
		if _, err := d.PatchNodeConfig(ctx, "payments", historyDoc(), alice, nil); err != nil {
			b.Fatal(err)
		}
		base := compactedSize(b, d)
		const versions = 300
		for v := 2; v <= versions+1; v++ {
			edit := map[string]any{"agents": map[string]any{fmt.Sprintf("agent_%03d", v%100): map[string]any{"timeout": json.Number(strconv.Itoa(v))}}}
			if _, err := d.PatchNodeConfig(ctx, "payments", edit, alice, nil); err != nil {
				b.Fatal(err)
			}
		}
		grown := compactedSize(b, d) - base
		b.ReportMetric(float64(grown)/versions, "bytes/version")
		b.ReportMetric(float64(len(ownBytes(b, d, "payments"))), "config-bytes")
	}
}
