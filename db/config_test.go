package db

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/rootcause/rootcause/mergeconf"
)

// testClock is a settable clock for expiry tests.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// openTree opens a database with the tree acme → platform → payments (team)
// and acme → search (team).
func openTree(t testing.TB) (*DB, *testClock) {
	t.Helper()
	clock := &testClock{t: time.Date(2026, 3, 14, 10, 0, 0, 0, time.UTC)}
	d, err := Open(filepath.Join(t.TempDir(), FileName), Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	ctx := context.Background()
	if _, err := d.EnsureOrg(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	for _, n := range []Node{
		{Name: "platform", Parent: "acme", Kind: KindGroup},
		{Name: "payments", Parent: "platform", Kind: KindTeam},
		{Name: "search", Parent: "acme", Kind: KindTeam},
	} {
		if _, err := d.CreateNode(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	return d, clock
}

func doc(t testing.TB, s string) map[string]any {
	t.Helper()
	m, err := mergeconf.Decode([]byte(s))
	if err != nil {
		t.Fatalf("decoding %s: %v", s, err)
	}
	return m
}

func asJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var alice = Actor{ID: "rct_aaaaaaaaaaaaaaaa", Name: "alice ci"}

func TestActorChangedBy(t *testing.T) {
	for _, tc := range []struct {
		a    Actor
		want string
	}{
		{Actor{ID: "sub-1", Email: "a@example.com"}, "a@example.com"},
		{Actor{ID: "rct_x", Name: "ci"}, "token:rct_x (ci)"},
		{Actor{ID: "rct_x"}, "token:rct_x"},
		{Actor{ID: "local", Name: "local socket", Local: true}, "local (local socket)"},
	} {
		if got := tc.a.ChangedBy(); got != tc.want {
			t.Errorf("%+v.ChangedBy() = %q, want %q", tc.a, got, tc.want)
		}
	}
}

func TestPatchNodeConfig(t *testing.T) {
	ctx := context.Background()
	errBoom := &Error{Code: EVALIDATION, Message: "boom"}
	for _, tc := range []struct {
		name        string
		start       string // the team's own doc before (applied as a first patch)
		patch       string
		check       ConfigCheck
		wantOwn     string
		wantVersion int64 // after the patch
		wantFields  []string
		wantCode    string
	}{
		{name: "ObjectsMerge", start: `{"agents":{"k8s_agent":{"timeout":30}}}`, patch: `{"agents":{"k8s_agent":{"enabled":false}}}`,
			wantOwn: `{"agents":{"k8s_agent":{"enabled":false,"timeout":30}}}`, wantVersion: 2, wantFields: []string{"agents.k8s_agent.enabled"}},
		{name: "ArraysReplace", start: `{"alerts":{"disabled":["a","b"]}}`, patch: `{"alerts":{"disabled":["c"]}}`,
			wantOwn: `{"alerts":{"disabled":["c"]}}`, wantVersion: 2, wantFields: []string{"alerts.disabled"}},
		{name: "NullRemovesKey", start: `{"slack_channel":"#x","slack_group_to_ping":"@y"}`, patch: `{"slack_channel":null}`,
			wantOwn: `{"slack_group_to_ping":"@y"}`, wantVersion: 2, wantFields: []string{"slack_channel"}},
		{name: "NoOpCreatesNoVersion", start: `{"slack_channel":"#x"}`, patch: `{"slack_channel":"#x"}`,
			wantOwn: `{"slack_channel":"#x"}`, wantVersion: 1, wantFields: []string{}},
		{name: "NullForAbsentKeyIsNoOp", start: `{"slack_channel":"#x"}`, patch: `{"tools":null}`,
			wantOwn: `{"slack_channel":"#x"}`, wantVersion: 1, wantFields: []string{}},
		{name: "CheckErrorSavesNothing", start: `{"slack_channel":"#x"}`, patch: `{"slack_channel":"#y"}`,
			check: func([]map[string]any, map[string]any) error { return errBoom }, wantOwn: `{"slack_channel":"#x"}`, wantVersion: 1, wantCode: EVALIDATION},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, _ := openTree(t)
			if _, err := d.PatchNodeConfig(ctx, "payments", doc(t, tc.start), alice, nil); err != nil {
				t.Fatal(err)
			}
			ch, err := d.PatchNodeConfig(ctx, "payments", doc(t, tc.patch), alice, tc.check)
			if got := ErrorCode(err); got != tc.wantCode {
				t.Fatalf("error code = %q (%v), want %q", got, err, tc.wantCode)
			}
			if err == nil {
				if ch.Version != tc.wantVersion {
					t.Errorf("version = %d, want %d", ch.Version, tc.wantVersion)
				}
				if !reflect.DeepEqual(ch.ChangedFields, tc.wantFields) {
					t.Errorf("changed fields = %v, want %v", ch.ChangedFields, tc.wantFields)
				}
			}
			lin, err := d.ConfigLineage(ctx, "payments", true)
			if err != nil {
				t.Fatal(err)
			}
			team := lin[len(lin)-1]
			if team.Version != tc.wantVersion {
				t.Errorf("stored version = %d, want %d", team.Version, tc.wantVersion)
			}
			if got := asJSON(t, team.Own); got != tc.wantOwn {
				t.Errorf("own = %s, want %s", got, tc.wantOwn)
			}
			hist, err := d.ConfigHistory(ctx, "payments", HistoryOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if int64(len(hist)) != tc.wantVersion {
				t.Errorf("history has %d entries, want %d", len(hist), tc.wantVersion)
			}
		})
	}
}

func TestPatchNodeConfigErrNotFound(t *testing.T) {
	d, _ := openTree(t)
	_, err := d.PatchNodeConfig(context.Background(), "nope", map[string]any{"a": 1}, alice, nil)
	if ErrorCode(err) != ENOTFOUND {
		t.Fatalf("err = %v, want not_found", err)
	}
	if _, err := d.ConfigHistory(context.Background(), "nope", HistoryOptions{}); ErrorCode(err) != ENOTFOUND {
		t.Fatalf("history err = %v, want not_found", err)
	}
}

// TestPatchCheckSeesLineage checks that check gets the lineage root first
// with the node's current own document last, and the merged new document.
func TestPatchCheckSeesLineage(t *testing.T) {
	ctx := context.Background()
	d, _ := openTree(t)
	for node, p := range map[string]string{"acme": `{"slack_channel":"#org"}`, "platform": `{"slack_channel":"#grp"}`, "payments": `{"a":1}`} {
		if _, err := d.PatchNodeConfig(ctx, node, doc(t, p), alice, nil); err != nil {
			t.Fatal(err)
		}
	}
	var gotLineage, gotNew string
	_, err := d.PatchNodeConfig(ctx, "payments", doc(t, `{"b":2}`), alice, func(l []map[string]any, n map[string]any) error {
		gotLineage, gotNew = asJSON(t, l), asJSON(t, n)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := `[{"slack_channel":"#org"},{"slack_channel":"#grp"},{"a":1}]`; gotLineage != want {
		t.Errorf("lineage = %s, want %s", gotLineage, want)
	}
	if want := `{"a":1,"b":2}`; gotNew != want {
		t.Errorf("new own = %s, want %s", gotNew, want)
	}
}

func TestConfigHistory(t *testing.T) {
	ctx := context.Background()
	d, clock := openTree(t)
	// Another node with a name that is a prefix must not leak into the history.
	if _, err := d.CreateNode(ctx, Node{Name: "pay", Parent: "acme", Kind: KindTeam}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 5; i++ {
		clock.Advance(time.Minute)
		if _, err := d.PatchNodeConfig(ctx, "payments", map[string]any{"slack_channel": fmt.Sprintf("#c%d", i)}, alice, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := d.PatchNodeConfig(ctx, "pay", map[string]any{"slack_channel": fmt.Sprintf("#p%d", i)}, Actor{ID: "sub", Email: "bob@example.com"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("NewestFirstWithDiffs", func(t *testing.T) {
		h, err := d.ConfigHistory(ctx, "payments", HistoryOptions{IncludeFull: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(h) != 5 {
			t.Fatalf("%d entries, want 5", len(h))
		}
		for i, e := range h {
			v := int64(5 - i)
			if e.Version != v || e.Event != EventApplied || e.ChangedBy != "token:rct_aaaaaaaaaaaaaaaa (alice ci)" {
				t.Errorf("entry %d = %+v", i, e)
			}
			ch := e.Diff["slack_channel"]
			if ch.New != fmt.Sprintf("#c%d", v) {
				t.Errorf("entry %d diff = %+v", i, e.Diff)
			}
			if v == 1 && ch.Old != nil {
				t.Errorf("first entry old = %v, want null", ch.Old)
			}
			if want := fmt.Sprintf(`{"slack_channel":"#c%d"}`, v); string(e.FullConfig) != want {
				t.Errorf("entry %d full_config = %s, want %s", i, e.FullConfig, want)
			}
		}
		if !h[0].ChangedAt.After(h[4].ChangedAt) {
			t.Errorf("changed_at not newest first: %v .. %v", h[0].ChangedAt, h[4].ChangedAt)
		}
	})
	t.Run("LimitAndNoFull", func(t *testing.T) {
		h, err := d.ConfigHistory(ctx, "payments", HistoryOptions{Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		if len(h) != 2 || h[0].Version != 5 || h[1].Version != 4 {
			t.Fatalf("got %d entries: %+v", len(h), h)
		}
		if h[0].FullConfig != nil {
			t.Errorf("full_config present without IncludeFull")
		}
	})
	t.Run("ErrInvalidLimit", func(t *testing.T) {
		for _, l := range []int{-1, MaxHistoryLimit + 1} {
			if _, err := d.ConfigHistory(ctx, "payments", HistoryOptions{Limit: l}); ErrorCode(err) != EINVALID {
				t.Errorf("limit %d: err = %v, want invalid_request", l, err)
			}
		}
	})
	t.Run("EmailForOIDC", func(t *testing.T) {
		h, err := d.ConfigHistory(ctx, "pay", HistoryOptions{Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if h[0].ChangedBy != "bob@example.com" {
			t.Errorf("changed_by = %q", h[0].ChangedBy)
		}
	})
}

// TestConcurrentPatches: 20 writers × 50 patches on distinct keys; every
// change must be present and versions contiguous 1..1000.
func TestConcurrentPatches(t *testing.T) {
	const writers, each = 20, 50
	ctx := context.Background()
	d, _ := openTree(t)
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				key := fmt.Sprintf("w%02d_%02d", w, i)
				patch := map[string]any{"tools": map[string]any{"x": map[string]any{key: i}}}
				if _, err := d.PatchNodeConfig(ctx, "payments", patch, alice, nil); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	lin, err := d.ConfigLineage(ctx, "payments", true)
	if err != nil {
		t.Fatal(err)
	}
	team := lin[len(lin)-1]
	if team.Version != writers*each {
		t.Fatalf("version = %d, want %d", team.Version, writers*each)
	}
	x := team.Own["tools"].(map[string]any)["x"].(map[string]any)
	if len(x) != writers*each {
		t.Fatalf("%d keys present, want %d", len(x), writers*each)
	}
	h, err := d.ConfigHistory(ctx, "payments", HistoryOptions{Limit: MaxHistoryLimit})
	if err != nil {
		t.Fatal(err)
	}
	// The API reads at most 500 entries: check those, then scan the bucket.
	for i, e := range h {
		if want := int64(writers*each - i); e.Version != want {
			t.Fatalf("entry %d has version %d, want %d", i, e.Version, want)
		}
		if len(e.Diff) != 1 {
			t.Fatalf("entry %d diff has %d paths, want 1", i, len(e.Diff))
		}
	}
	// All 1,000 entries exist: count them directly.
	n := 0
	seen := map[int64]bool{}
	if err := d.Bolt().View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketConfigVersions).Cursor()
		prefix := auditPrefix("payments")
		for k, v := c.Seek(prefix); k != nil && len(k) == len(prefix)+8 && string(k[:len(prefix)]) == string(prefix); k, v = c.Next() {
			var e AuditEntry
			if err := decodeNumbers(v, &e); err != nil {
				return err
			}
			n++
			seen[e.Version] = true
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n != writers*each {
		t.Fatalf("%d audit entries, want %d", n, writers*each)
	}
	for v := int64(1); v <= writers*each; v++ {
		if !seen[v] {
			t.Fatalf("version %d missing", v)
		}
	}
}

func TestCheckErrorPassesThrough(t *testing.T) {
	d, _ := openTree(t)
	sentinel := errors.New("not a db error")
	_, err := d.PatchNodeConfig(context.Background(), "payments", map[string]any{"a": 1}, alice,
		func([]map[string]any, map[string]any) error { return sentinel })
	if ErrorCode(err) != EINTERNAL || !errors.Is(err, sentinel) {
		t.Fatalf("err = %v, want internal wrapping the check's error", err)
	}
}
