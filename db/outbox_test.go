package db

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func outboxFixture(t *testing.T) (*DB, *time.Time) {
	t.Helper()
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	d, err := Open(t.TempDir()+"/"+FileName, Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	ctx := context.Background()
	if _, err := d.EnsureOrg(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	for _, n := range []Node{{Name: "grp", Parent: "acme", Kind: KindGroup}, {Name: "payments", Parent: "grp", Kind: KindTeam}, {Name: "search", Parent: "acme", Kind: KindTeam}} {
		if _, err := d.CreateNode(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	return d, &now
}

func entry(id, team string, at time.Time) OutboxEntry {
	return OutboxEntry{ID: id, Kind: OutboxWebhook, Team: team, InvestigationID: "inv_" + id, Target: "https://h.example/" + team,
		Payload: json.RawMessage(`{"event":"investigation_complete"}`), CreatedAt: at}
}

func TestOutboxClaimLeaseRecord(t *testing.T) {
	d, now := outboxFixture(t)
	ctx := context.Background()
	if err := d.EnqueueDeliveries(ctx, entry("m1", "payments", *now), entry("m2", "payments", now.Add(time.Minute)), entry("m3", "search", *now)); err != nil {
		t.Fatal(err)
	}
	if err := d.EnqueueDeliveries(ctx, entry("m1", "payments", *now)); ErrorCode(err) != ECONFLICT {
		t.Fatalf("duplicate id: %v", err)
	}
	got, err := d.ClaimDueDeliveries(ctx, *now, time.Minute, 10)
	if err != nil || len(got) != 2 {
		t.Fatalf("claim: %d %v", len(got), err)
	}
	for _, e := range got {
		if e.ID == "m2" || e.LeaseUntil == nil {
			t.Fatalf("claimed %+v", e)
		}
	}
	// Leased entries are not claimed again, even when due.
	if again, _ := d.ClaimDueDeliveries(ctx, now.Add(30*time.Second), time.Minute, 10); len(again) != 0 {
		t.Fatalf("claimed twice: %v", again)
	}
	next := now.Add(5 * time.Second)
	e, err := d.RecordDelivery(ctx, "m1", DeliveryOutcome{Attempt: &DeliveryAttempt{Time: *now, StatusCode: 503, LatencyMS: 12, Error: "503"},
		State: DeliveryPending, NextAttemptAt: next, LastStatus: 503, LastError: "503"})
	if err != nil || e.Attempts != 1 || e.WindowAttempts != 1 || e.LeaseUntil != nil || !e.NextAttemptAt.Equal(next) {
		t.Fatalf("record: %+v %v", e, err)
	}
	if due, ok, _ := d.NextDeliveryDue(ctx); !ok || !due.Equal(next) {
		t.Fatalf("next due %v %v, want %v", due, ok, next)
	}
	if _, err := d.RecordDelivery(ctx, "m3", DeliveryOutcome{Attempt: &DeliveryAttempt{Time: *now, StatusCode: 200}, State: DeliveryDelivered, LastStatus: 200}); err != nil {
		t.Fatal(err)
	}
	got, _ = d.ClaimDueDeliveries(ctx, now.Add(10*time.Second), time.Minute, 10)
	if len(got) != 1 || got[0].ID != "m1" {
		t.Fatalf("second claim %v", got)
	}
	got, _ = d.ClaimDueDeliveries(ctx, now.Add(65*time.Second), time.Minute, 10) // m1 is leased until +70s
	if len(got) != 1 || got[0].ID != "m2" {
		t.Fatalf("m2 claim %v", got)
	}
	// A restart releases leases: m1 and m2 are due again.
	if n, err := d.ReleaseLeases(ctx); err != nil || n != 2 {
		t.Fatalf("release: %d %v", n, err)
	}
	if got, _ = d.ClaimDueDeliveries(ctx, *now, time.Minute, 10); len(got) != 2 {
		t.Fatalf("after release: %v", got)
	}
	log, err := d.DeliveryAttempts(ctx, "m1")
	if err != nil || len(log) != 1 || log[0].Attempt != 1 || log[0].NextAttemptAt == nil || log[0].StatusCode != 503 {
		t.Fatalf("log %+v %v", log, err)
	}
}

func TestOutboxTeamIsolationAndRedeliver(t *testing.T) {
	d, now := outboxFixture(t)
	ctx := context.Background()
	if err := d.EnqueueDeliveries(ctx, entry("p1", "payments", *now), entry("s1", "search", *now), entry("p2", "payments", now.Add(time.Second))); err != nil {
		t.Fatal(err)
	}
	l, err := d.ListDeliveries(ctx, "payments", 10)
	if err != nil || len(l) != 2 || l[0].ID != "p2" || l[1].ID != "p1" {
		t.Fatalf("payments list %v %v", l, err)
	}
	if l, _ := d.ListDeliveries(ctx, "pay", 10); len(l) != 0 {
		t.Fatalf("a team name prefix matched: %v", l)
	}
	if _, err := d.GetDelivery(ctx, "search", "p1"); ErrorCode(err) != ENOTFOUND {
		t.Fatalf("cross-team get: %v", err)
	}
	if _, err := d.RedeliverDelivery(ctx, "search", "p1"); ErrorCode(err) != ENOTFOUND {
		t.Fatalf("cross-team redeliver: %v", err)
	}
	// 410 on p1 disables its target; p2 (same URL) is then disabled unsent.
	d.ClaimDueDeliveries(ctx, *now, time.Minute, 1)
	if _, err := d.RecordDelivery(ctx, "p1", DeliveryOutcome{Attempt: &DeliveryAttempt{Time: *now, StatusCode: 410}, State: DeliveryDisabled, DisableTarget: true}); err != nil {
		t.Fatal(err)
	}
	if got, _ := d.ClaimDueDeliveries(ctx, now.Add(time.Minute), time.Minute, 10); len(got) != 1 || got[0].ID != "s1" {
		t.Fatalf("claim after 410: %v", got)
	}
	if e, _ := d.GetDelivery(ctx, "payments", "p2"); e.State != DeliveryDisabled || e.Attempts != 0 {
		t.Fatalf("p2 %+v", e)
	}
	if _, err := d.RecordDelivery(ctx, "s1", DeliveryOutcome{Attempt: &DeliveryAttempt{Time: *now, StatusCode: 200}, State: DeliveryDelivered}); err != nil {
		t.Fatal(err)
	}
	*now = now.Add(time.Hour)
	e, err := d.RedeliverDelivery(ctx, "payments", "p2")
	if err != nil || e.State != DeliveryPending || !e.WindowStart.Equal(*now) || e.WindowAttempts != 0 {
		t.Fatalf("redeliver %+v %v", e, err)
	}
	if got, _ := d.ClaimDueDeliveries(ctx, *now, time.Minute, 10); len(got) != 1 || got[0].ID != "p2" {
		t.Fatalf("claim after redeliver: %v", got)
	}
	if _, err := d.RedeliverDelivery(ctx, "", "p2"); ErrorCode(err) != EINVALIDSTATE {
		t.Fatalf("redeliver while leased: %v", err)
	}
}

func TestWebhookSecretsSealedAndRotated(t *testing.T) {
	d, now := outboxFixture(t)
	ctx := context.Background()
	if _, err := d.WebhookSigningSecrets(ctx, "payments"); ErrorCode(err) != ENOTFOUND {
		t.Fatalf("no secret yet: %v", err)
	}
	if _, err := d.CreateWebhookSecret(ctx, "grp", 0, false); ErrorCode(err) != EINVALID {
		t.Fatalf("group: %v", err)
	}
	if _, err := d.CreateWebhookSecret(ctx, "nope", 0, false); ErrorCode(err) != ENOTFOUND {
		t.Fatalf("unknown: %v", err)
	}
	// A delivery waiting for the secret is re-queued by its creation.
	w := entry("w1", "payments", *now)
	w.State = DeliveryWaitingSecret
	if err := d.EnqueueDeliveries(ctx, w); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := d.NextDeliveryDue(ctx); ok {
		t.Fatal("a waiting entry is in the due queue")
	}
	s1, err := d.CreateWebhookSecret(ctx, "payments", time.Hour, true)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s1.Secret, "whsec_"))
	if err != nil || len(raw) != 32 || s1.PreviousExpiresAt != nil {
		t.Fatalf("secret %q: %v", s1.Secret, err)
	}
	if e, _ := d.GetDelivery(ctx, "", "w1"); e.State != DeliveryPending {
		t.Fatalf("waiting entry after create: %s", e.State)
	}
	if _, err := d.CreateWebhookSecret(ctx, "payments", time.Hour, true); ErrorCode(err) != ECONFLICT {
		t.Fatalf("create-only twice: %v", err)
	}
	s2, err := d.CreateWebhookSecret(ctx, "payments", time.Hour, false)
	if err != nil || s2.PreviousExpiresAt == nil {
		t.Fatal(err)
	}
	got, _ := d.WebhookSigningSecrets(ctx, "payments")
	if len(got) != 2 || got[0] != s2.Secret || got[1] != s1.Secret {
		t.Fatalf("signing secrets during overlap: %d", len(got))
	}
	*now = now.Add(2 * time.Hour)
	if got, _ := d.WebhookSigningSecrets(ctx, "payments"); len(got) != 1 || got[0] != s2.Secret {
		t.Fatalf("after overlap: %d", len(got))
	}
	info, _ := d.WebhookSecretInfo(ctx, "payments")
	if info.Secret != "" || info.PreviousExpiresAt != nil {
		t.Fatalf("info reveals: %+v", info)
	}
	// Neither the secret nor the raw key is anywhere in the file.
	err = d.Bolt().View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			return b.ForEach(func(k, v []byte) error {
				for _, s := range []*WebhookSecret{s1, s2} {
					key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(s.Secret, "whsec_"))
					if bytes.Contains(v, []byte(s.Secret)) || bytes.Contains(v, key) ||
						bytes.Contains(v, []byte(base64.StdEncoding.EncodeToString(key))) {
						t.Errorf("bucket %s key %q holds a webhook secret", name, k)
					}
				}
				return nil
			})
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	// The sealed key is bound to its team.
	var rec webhookSecretRecord
	d.Bolt().View(func(tx *bolt.Tx) error {
		_, err := getJSON(tx.Bucket(bucketWebhookSecrets), []byte("payments"), &rec)
		return err
	})
	if _, err := d.open("search", rec.Current.Sealed); err == nil {
		t.Fatal("a sealed key opened under another team")
	}
}

func TestDeleteDeliveriesBefore(t *testing.T) {
	d, now := outboxFixture(t)
	ctx := context.Background()
	old := now.Add(-40 * 24 * time.Hour)
	d.EnqueueDeliveries(ctx, entry("old-done", "payments", old), entry("old-pending", "payments", old), entry("new-done", "payments", *now))
	for _, id := range []string{"old-done", "new-done"} {
		if _, err := d.RecordDelivery(ctx, id, DeliveryOutcome{Attempt: &DeliveryAttempt{Time: *now, StatusCode: 200}, State: DeliveryDelivered}); err != nil {
			t.Fatal(err)
		}
	}
	n, err := d.DeleteDeliveriesBefore(ctx, now.Add(-30*24*time.Hour))
	if err != nil || n != 1 {
		t.Fatalf("deleted %d %v", n, err)
	}
	if _, err := d.GetDelivery(ctx, "", "old-done"); ErrorCode(err) != ENOTFOUND {
		t.Fatalf("old-done still there: %v", err)
	}
	if log, _ := d.DeliveryAttempts(ctx, "old-done"); len(log) != 0 {
		t.Fatalf("log kept: %v", log)
	}
	if l, _ := d.ListDeliveries(ctx, "payments", 10); len(l) != 2 {
		t.Fatalf("left %d", len(l))
	}
}

// FinishInvestigation writes the outbox with its indexes in its transaction.
func TestFinishInvestigationWritesIndexedOutbox(t *testing.T) {
	d, now := outboxFixture(t)
	ctx := context.Background()
	inv := &Investigation{ID: "inv_x", Team: "payments", Agent: "planner", Status: StatusRunning, CreatedAt: *now}
	if err := d.CreateInvestigation(ctx, inv); err != nil {
		t.Fatal(err)
	}
	_, err := d.FinishInvestigation(ctx, "inv_x", func(i *Investigation) error { i.Status = StatusCompleted; return nil },
		func(i *Investigation) []OutboxEntry { return []OutboxEntry{entry("mx", i.Team, *now)} })
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := d.ClaimDueDeliveries(ctx, *now, time.Minute, 5); len(got) != 1 || got[0].ID != "mx" || got[0].InvestigationID != "inv_mx" {
		t.Fatalf("claim %v", got)
	}
}
