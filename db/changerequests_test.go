package db

import (
	"context"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

var (
	requester = Actor{ID: "rct_requesterxxxxxxx", Name: "payments ci"}
	approver  = Actor{ID: "admin_tok", Name: "ops"}
)

// submit sets approvers on the org root and submits a change for payments.
func submit(t *testing.T, d *DB, patch string) *ChangeRequest {
	t.Helper()
	ctx := context.Background()
	if _, err := d.PatchNodeConfig(ctx, "acme", doc(t, `{"approvers":["lead@example.com"]}`), approver, nil); err != nil {
		t.Fatal(err)
	}
	cr, err := d.CreateChangeRequest(ctx, ChangeRequestInput{Node: "payments", Patch: doc(t, patch), Message: "please", By: requester}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cr
}

func teamState(t *testing.T, d *DB) (int64, string) {
	t.Helper()
	lin, err := d.ConfigLineage(context.Background(), "payments", true)
	if err != nil {
		t.Fatal(err)
	}
	team := lin[len(lin)-1]
	return team.Version, asJSON(t, team.Own)
}

func TestCreateChangeRequest(t *testing.T) {
	ctx := context.Background()
	d, _ := openTree(t)
	cr := submit(t, d, `{"slack_channel":"#new"}`)
	if !strings.HasPrefix(cr.ID, "cr_") || cr.Status != StatusPendingApproval || cr.BaseVersion != 0 {
		t.Fatalf("cr = %+v", cr)
	}
	if got := asJSON(t, cr.Approvers); got != `["lead@example.com"]` {
		t.Errorf("approvers = %s", got)
	}
	if got := asJSON(t, cr.Changes); got != `{"slack_channel":{"old":null,"new":"#new"}}` {
		t.Errorf("changes = %s", got)
	}
	if !cr.ExpiresAt.Equal(cr.CreatedAt.Add(7 * 24 * time.Hour)) {
		t.Errorf("expires_at = %v, created_at %v", cr.ExpiresAt, cr.CreatedAt)
	}
	if v, own := teamState(t, d); v != 0 || own != `{}` {
		t.Fatalf("submitting applied something: version %d own %s", v, own)
	}
	h, err := d.ConfigHistory(ctx, "payments", HistoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 1 || h[0].Event != EventSubmitted || h[0].ChangeRequestID != cr.ID || len(h[0].Diff) != 0 || h[0].Changes["slack_channel"].New != "#new" {
		t.Fatalf("history = %s", asJSON(t, h))
	}
	pending, err := d.ListChangeRequests(ctx, ChangeRequestFilter{Node: "payments", Status: StatusPendingApproval})
	if err != nil || len(pending) != 1 || pending[0].ID != cr.ID {
		t.Fatalf("pending = %v, %v", pending, err)
	}
	// The index is per node: another team sees nothing.
	other, err := d.ListChangeRequests(ctx, ChangeRequestFilter{Node: "search"})
	if err != nil || len(other) != 0 {
		t.Fatalf("search's requests = %v, %v", other, err)
	}
	t.Run("ErrEmptyDiff", func(t *testing.T) {
		_, err := d.CreateChangeRequest(ctx, ChangeRequestInput{Node: "payments", Patch: doc(t, `{"tools":null}`), By: requester}, nil)
		if ErrorCode(err) != EINVALID {
			t.Fatalf("err = %v, want invalid_request", err)
		}
	})
	t.Run("ErrCheck", func(t *testing.T) {
		_, err := d.CreateChangeRequest(ctx, ChangeRequestInput{Node: "payments", Patch: doc(t, `{"a":1}`), By: requester},
			func([]map[string]any, map[string]any) error { return Validationf("a", "bad") })
		if ErrorCode(err) != EVALIDATION {
			t.Fatalf("err = %v, want validation_error", err)
		}
	})
}

func TestApproveChangeRequest(t *testing.T) {
	ctx := context.Background()
	t.Run("OK", func(t *testing.T) {
		d, _ := openTree(t)
		cr := submit(t, d, `{"slack_channel":"#new"}`)
		got, err := d.ApproveChangeRequest(ctx, cr.ID, approver, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != StatusApplied || got.AppliedVersion != 1 || got.DecidedBy != "token:admin_tok (ops)" || got.DecidedAt == nil {
			t.Fatalf("cr = %+v", got)
		}
		if v, own := teamState(t, d); v != 1 || own != `{"slack_channel":"#new"}` {
			t.Fatalf("version %d own %s", v, own)
		}
		h, _ := d.ConfigHistory(ctx, "payments", HistoryOptions{IncludeFull: true})
		if h[0].Event != EventApplied || h[0].Version != 1 || h[0].ChangeRequestID != cr.ID || h[0].RequestedBy != requester.ChangedBy() || h[0].ChangedBy != approver.ChangedBy() {
			t.Fatalf("newest entry = %s", asJSON(t, h[0]))
		}
		if _, err := d.ApproveChangeRequest(ctx, cr.ID, approver, nil); ErrorCode(err) != EINVALIDSTATE {
			t.Fatalf("second approval: %v, want invalid_state", err)
		}
	})
	t.Run("ErrSelfApprovalByID", func(t *testing.T) {
		d, _ := openTree(t)
		cr := submit(t, d, `{"slack_channel":"#new"}`)
		if _, err := d.ApproveChangeRequest(ctx, cr.ID, requester, nil); ErrorCode(err) != EFORBIDDEN {
			t.Fatalf("err = %v, want forbidden", err)
		}
		if v, _ := teamState(t, d); v != 0 {
			t.Fatalf("version moved to %d", v)
		}
	})
	t.Run("ErrSelfApprovalByEmail", func(t *testing.T) {
		d, _ := openTree(t)
		ctx := context.Background()
		cr, err := d.CreateChangeRequest(ctx, ChangeRequestInput{Node: "payments", Patch: doc(t, `{"a":1}`), By: Actor{ID: "sub-1", Email: "Dev@Example.com"}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.ApproveChangeRequest(ctx, cr.ID, Actor{ID: "sub-2", Email: "dev@example.com"}, nil); ErrorCode(err) != EFORBIDDEN {
			t.Fatalf("err = %v, want forbidden", err)
		}
	})
	t.Run("ErrConflict", func(t *testing.T) {
		d, _ := openTree(t)
		cr := submit(t, d, `{"slack_channel":"#new"}`)
		if _, err := d.PatchNodeConfig(ctx, "payments", doc(t, `{"slack_group_to_ping":"@x"}`), approver, nil); err != nil {
			t.Fatal(err)
		}
		got, err := d.ApproveChangeRequest(ctx, cr.ID, approver, nil)
		if ErrorCode(err) != ECONFLICT {
			t.Fatalf("err = %v, want conflict", err)
		}
		if got == nil || got.Status != StatusConflict {
			t.Fatalf("cr = %+v", got)
		}
		if v, own := teamState(t, d); v != 1 || own != `{"slack_group_to_ping":"@x"}` {
			t.Fatalf("version %d own %s", v, own)
		}
		stored, _ := d.FindChangeRequest(ctx, cr.ID)
		if stored.Status != StatusConflict {
			t.Fatalf("stored status %s", stored.Status)
		}
		h, _ := d.ConfigHistory(ctx, "payments", HistoryOptions{})
		if h[0].Event != EventConflict || h[0].Version != 1 {
			t.Fatalf("newest entry = %s", asJSON(t, h[0]))
		}
	})
	t.Run("ErrCheckKeepsPending", func(t *testing.T) {
		d, _ := openTree(t)
		cr := submit(t, d, `{"slack_channel":"#new"}`)
		_, err := d.ApproveChangeRequest(ctx, cr.ID, approver, func([]map[string]any, map[string]any) error { return Validationf("slack_channel", "bad") })
		if ErrorCode(err) != EVALIDATION {
			t.Fatalf("err = %v", err)
		}
		if stored, _ := d.FindChangeRequest(ctx, cr.ID); stored.Status != StatusPendingApproval {
			t.Fatalf("status %s", stored.Status)
		}
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		d, _ := openTree(t)
		if _, err := d.ApproveChangeRequest(ctx, "cr_nope", approver, nil); ErrorCode(err) != ENOTFOUND {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestRejectChangeRequest(t *testing.T) {
	ctx := context.Background()
	d, _ := openTree(t)
	cr := submit(t, d, `{"slack_channel":"#new"}`)
	got, err := d.RejectChangeRequest(ctx, cr.ID, approver, "not now")
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != StatusRejected || got.Reason != "not now" {
		t.Fatalf("cr = %+v", got)
	}
	if v, own := teamState(t, d); v != 0 || own != `{}` {
		t.Fatalf("version %d own %s", v, own)
	}
	h, _ := d.ConfigHistory(ctx, "payments", HistoryOptions{})
	if h[0].Event != EventRejected || h[0].Reason != "not now" || h[0].Version != 0 {
		t.Fatalf("newest entry = %s", asJSON(t, h[0]))
	}
	if _, err := d.ApproveChangeRequest(ctx, cr.ID, approver, nil); ErrorCode(err) != EINVALIDSTATE {
		t.Fatalf("approving a rejected request: %v", err)
	}
	if _, err := d.RejectChangeRequest(ctx, cr.ID, approver, "again"); ErrorCode(err) != EINVALIDSTATE {
		t.Fatalf("rejecting twice: %v", err)
	}
}

func TestChangeRequestExpiry(t *testing.T) {
	ctx := context.Background()
	t.Run("LazyOnReadThenApproveRefused", func(t *testing.T) {
		d, clock := openTree(t)
		cr := submit(t, d, `{"slack_channel":"#new"}`)
		clock.Advance(7*24*time.Hour - time.Second)
		if got, _ := d.FindChangeRequest(ctx, cr.ID); got.Status != StatusPendingApproval {
			t.Fatalf("status before expiry = %s", got.Status)
		}
		clock.Advance(time.Second)
		if got, _ := d.FindChangeRequest(ctx, cr.ID); got.Status != StatusExpired {
			t.Fatalf("status after expiry = %s", got.Status)
		}
		if p, _ := d.ListChangeRequests(ctx, ChangeRequestFilter{Status: StatusPendingApproval}); len(p) != 0 {
			t.Fatalf("expired request listed as pending: %v", p)
		}
		if _, err := d.ApproveChangeRequest(ctx, cr.ID, approver, nil); ErrorCode(err) != EINVALIDSTATE {
			t.Fatalf("approve after expiry: %v", err)
		}
		if v, own := teamState(t, d); v != 0 || own != `{}` {
			t.Fatalf("version %d own %s", v, own)
		}
		h, _ := d.ConfigHistory(ctx, "payments", HistoryOptions{})
		if h[0].Event != EventExpired {
			t.Fatalf("newest entry = %s", asJSON(t, h[0]))
		}
	})
	t.Run("Sweep", func(t *testing.T) {
		d, clock := openTree(t)
		cr := submit(t, d, `{"slack_channel":"#new"}`)
		if n, err := d.ExpireChangeRequests(ctx); err != nil || n != 0 {
			t.Fatalf("early sweep: %d, %v", n, err)
		}
		clock.Advance(8 * 24 * time.Hour)
		if n, err := d.ExpireChangeRequests(ctx); err != nil || n != 1 {
			t.Fatalf("sweep: %d, %v", n, err)
		}
		if n, _ := d.ExpireChangeRequests(ctx); n != 0 {
			t.Fatalf("second sweep expired %d", n)
		}
		var stored ChangeRequest
		if err := d.Bolt().View(func(tx *bolt.Tx) error {
			c, err := getCR(tx, cr.ID)
			if err == nil {
				stored = *c
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if stored.Status != StatusExpired {
			t.Fatalf("stored status = %s", stored.Status)
		}
		h, _ := d.ConfigHistory(ctx, "payments", HistoryOptions{})
		if len(h) != 2 || h[0].Event != EventExpired {
			t.Fatalf("history = %s", asJSON(t, h))
		}
	})
}
