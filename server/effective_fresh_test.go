package server

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/rootcause/rootcause/db"
)

// TestEffectiveSeesEveryWriteAtOnce: the effective config is served from
// memory (its cache is checked against the store's config generation, not
// read back from bbolt), and every way a level's config can change shows
// in the very next answer, on the same keep-alive connection, through the
// corked write of the cached slice: an admin's write to an ancestor, the
// team's own write, a write through the local socket (the CLI's path), an
// approved change request, and a write straight into the store by another
// part of the process. Each answer carries a new ETag, and the previous
// tag no longer earns a 304. No other process can write behind the cache:
// the store is bbolt, whose file lock keeps a second opener out
// (db.TestOpenLocked; checked here too).
func TestEffectiveSeesEveryWriteAtOnce(t *testing.T) {
	h := configHarness(t)
	// Large enough to be corked and written from the cached slice.
	big := `{"agents":{"a":{"prompt":"` + strings.Repeat("investigate the checkout service ", 200) + `"}}}`
	h.ok(req{method: "PUT", path: "/api/v1/config/me", token: "payments-write", body: big}, 200)
	identity := map[string]string{"Accept-Encoding": "identity"}
	lastTag := ""
	// read GETs the effective config twice (the second a cache hit) and
	// checks key has value want in both and, after a change, a new ETag and
	// that the previous tag is not answered with 304.
	read := func(step, key, want string, changed bool) {
		t.Helper()
		for i := range 2 {
			r := h.do(req{path: "/api/v1/config/me/effective", token: "payments-read", header: identity})
			if r.status != http.StatusOK || len(r.body) < corkMin {
				t.Fatalf("%s: %d, %d bytes", step, r.status, len(r.body))
			}
			if got, _ := r.json(t)[key].(string); got != want {
				t.Fatalf("%s (read %d): %s = %v, want %q", step, i+1, key, got, want)
			}
			tag := r.header.Get("Etag")
			if tag == "" || (i == 0 && changed == (tag == lastTag)) || (i == 1 && tag != lastTag) {
				t.Fatalf("%s (read %d): ETag %q, the one before %q", step, i+1, tag, lastTag)
			}
			if changed && i == 0 {
				old := h.do(req{path: "/api/v1/config/me/effective", token: "payments-read",
					header: map[string]string{"Accept-Encoding": "identity", "If-None-Match": lastTag}})
				if old.status != http.StatusOK {
					t.Fatalf("%s: the previous ETag answered %d", step, old.status)
				}
			}
			lastTag = tag
		}
	}
	read("start", "slack_channel", "", true)

	h.ok(req{method: "PUT", path: "/api/v1/admin/nodes/acme/config", token: "admin", body: `{"slack_channel":"#org"}`}, 200)
	read("ancestor written by an admin", "slack_channel", "#org", true)

	h.ok(req{method: "PUT", path: "/api/v1/config/me", token: "payments-write", body: `{"slack_channel":"#team"}`}, 200)
	read("team's own write", "slack_channel", "#team", true)

	if r := h.doLocal(req{method: "PUT", path: "/api/v1/admin/nodes/platform/config", body: `{"slack_group_to_ping":"@platform"}`}); r.status != http.StatusOK {
		t.Fatalf("local write: %d %s", r.status, r.body)
	}
	read("group written through the local socket", "slack_group_to_ping", "@platform", true)

	if _, err := h.db.PatchNodeConfig(context.Background(), "platform", map[string]any{"slack_group_to_ping": "@store"}, db.Actor{ID: "test"}, nil); err != nil {
		t.Fatal(err)
	}
	read("written into the store directly", "slack_group_to_ping", "@store", true)

	enableApprovals(h)
	read("approvals enabled", "slack_group_to_ping", "@store", true)
	id := h.submitChange("payments-write", `{"slack_channel":"#approved"}`)["change_request_id"].(string)
	read("change request pending", "slack_channel", "#team", false)
	h.ok(req{method: "POST", path: "/api/v1/admin/change-requests/" + id + "/approve", token: "raw:Bearer " + jwtLead}, 200)
	read("change request approved", "slack_channel", "#approved", true)

	if _, err := db.Open(h.db.Path(), db.Options{Timeout: 100e6}); err == nil {
		t.Fatal("a second opener of the store got in: a write behind the cache would be possible")
	}
}
