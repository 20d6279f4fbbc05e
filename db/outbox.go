package db

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	"golang.org/x/crypto/hkdf"
)

// Outbox and delivery storage (issue 9, contract section 4).
//
// bucketOutbox holds one JSON OutboxEntry per delivery under a u64be
// sequence, written by FinishInvestigation in the transaction that finishes
// the investigation (through putOutboxEntry, which also writes the indexes
// below), so a finished investigation is never without its deliveries.
//
// bucketDeliveries holds the delivery log and the indexes, each key kind
// under its own one-byte prefix:
//
//	'a' ‖ id ‖ 0x00 ‖ u64be attempt   -> JSON DeliveryAttempt (the log)
//	'i' ‖ id                          -> u64be outbox seq     (id index)
//	'q' ‖ u64be due-unix-nanos ‖ seq  -> empty                (the due queue)
//	't' ‖ team ‖ 0x00 ‖ u64be seq     -> empty                (team index)
//	'x' ‖ team ‖ 0x00 ‖ target URL    -> JSON DisabledTarget  (410 Gone)
//
// Every entry in state pending has exactly one 'q' key, at LeaseUntil while
// a worker holds it and at NextAttemptAt otherwise, so finding due work is a
// short forward scan from the start of the 'q' range.
//
// bucketWebhookSecrets maps a team name to its signing keys, sealed with
// AES-256-GCM under a key derived from the install key with HKDF-SHA256
// (info "rootcause/webhook-signing-key/v1", the team name as additional
// data). A signing key must be usable to sign, so a keyed hash (contract
// section 3's rule for token secrets) cannot work; sealing keeps the
// plaintext out of the file, its backups and every dump. The plaintext is
// returned once, at creation.

var _ OutboxService = (*DB)(nil)

// Outbox entry kinds.
const (
	OutboxWebhook = "webhook"
	OutboxSlack   = "slack"
)

// Delivery states.
const (
	DeliveryPending   = "pending"
	DeliveryDelivered = "delivered"
	DeliveryFailed    = "failed"
	DeliveryDisabled  = "disabled"
	// DeliveryWaitingSecret holds webhook deliveries of a team without a
	// signing secret; creating one re-queues them.
	DeliveryWaitingSecret = "waiting_for_secret"
)

// DeliveryAttempt is one attempt in the delivery log.
type DeliveryAttempt struct {
	Attempt       int        `json:"attempt"`
	Time          time.Time  `json:"time"`
	StatusCode    int        `json:"status_code,omitempty"`
	LatencyMS     int64      `json:"latency_ms"`
	Error         string     `json:"error,omitempty"`
	NextAttemptAt *time.Time `json:"next_attempt_at,omitempty"`
}

// DeliveryOutcome is what a worker reports after handling a claimed entry.
type DeliveryOutcome struct {
	// Attempt is logged when a request was made (nil when the entry was
	// only held, for example waiting for a signing secret).
	Attempt *DeliveryAttempt
	// State is the entry's new state; pending needs NextAttemptAt.
	State         string
	NextAttemptAt time.Time
	LastStatus    int
	LastError     string
	// DisableTarget records the entry's target as disabled for its team
	// (410 Gone): later entries to it are not attempted.
	DisableTarget bool
}

// DisabledTarget records an endpoint that answered 410 Gone.
type DisabledTarget struct {
	Team       string    `json:"team"`
	Target     string    `json:"target"`
	DisabledAt time.Time `json:"disabled_at"`
	EntryID    string    `json:"entry_id"`
}

// WebhookSecret describes a team's signing secret. Secret is set only in
// the answer that created it.
type WebhookSecret struct {
	Team              string     `json:"team"`
	Secret            string     `json:"secret,omitempty"`
	CreatedAt         time.Time  `json:"created_at"`
	PreviousExpiresAt *time.Time `json:"previous_expires_at"`
}

// OutboxService stores deliveries, their log and the webhook signing keys.
//
// ClaimDueDeliveries leases up to max pending entries due at now until
// now+lease (another claim skips them) and returns them; entries whose
// webhook target is disabled become state disabled instead. ReleaseLeases
// makes every leased entry due now (at start, when no other process can
// hold a lease). RecordDelivery applies a worker's outcome (ENOTFOUND).
// GetDelivery, DeliveryAttempts and RedeliverDelivery return ENOTFOUND for
// an unknown id or an entry of another team (team "" means any).
// CreateWebhookSecret returns ENOTFOUND for an unknown team, EINVALID for a
// node that is not a team, ECONFLICT with createOnly when one exists.
// WebhookSigningSecrets returns ENOTFOUND when the team has none.
type OutboxService interface {
	ClaimDueDeliveries(ctx context.Context, now time.Time, lease time.Duration, max int) ([]*OutboxEntry, error)
	NextDeliveryDue(ctx context.Context) (time.Time, bool, error)
	ReleaseLeases(ctx context.Context) (int, error)
	RecordDelivery(ctx context.Context, id string, out DeliveryOutcome) (*OutboxEntry, error)
	GetDelivery(ctx context.Context, team, id string) (*OutboxEntry, error)
	ListDeliveries(ctx context.Context, team string, limit int) ([]*OutboxEntry, error)
	DeliveryAttempts(ctx context.Context, id string) ([]DeliveryAttempt, error)
	RedeliverDelivery(ctx context.Context, team, id string) (*OutboxEntry, error)
	DeleteDeliveriesBefore(ctx context.Context, t time.Time) (int, error)
	CreateWebhookSecret(ctx context.Context, team string, overlap time.Duration, createOnly bool) (*WebhookSecret, error)
	WebhookSecretInfo(ctx context.Context, team string) (*WebhookSecret, error)
	WebhookSigningSecrets(ctx context.Context, team string) ([]string, error)
}

// Key prefixes of bucketDeliveries.
const (
	pfxAttempt  = 'a'
	pfxID       = 'i'
	pfxQueue    = 'q'
	pfxTeam     = 't'
	pfxDisabled = 'x'
)

func nanos(t time.Time) uint64 {
	if t.IsZero() || t.UnixNano() < 0 {
		return 0
	}
	return uint64(t.UnixNano())
}

func attemptKey(id string, n int) []byte {
	k := append([]byte{pfxAttempt}, id...)
	k = append(k, 0)
	return append(k, itob(uint64(n))...)
}

func idKey(id string) []byte { return append([]byte{pfxID}, id...) }

func queueKey(due time.Time, seq uint64) []byte {
	k := append([]byte{pfxQueue}, itob(nanos(due))...)
	return append(k, itob(seq)...)
}

func teamKey(team string, seq uint64) []byte {
	k := append([]byte{pfxTeam}, team...)
	k = append(k, 0)
	return append(k, itob(seq)...)
}

func disabledKey(team, target string) []byte {
	k := append([]byte{pfxDisabled}, team...)
	k = append(k, 0)
	return append(k, target...)
}

// queueDue is where a pending entry sits in the due queue.
func queueDue(e *OutboxEntry) time.Time {
	if e.LeaseUntil != nil {
		return *e.LeaseUntil
	}
	return e.NextAttemptAt
}

func deliveryNotFound(id string) error {
	if len(id) > 80 {
		id = id[:80] + "…"
	}
	return Errorf(ENOTFOUND, "delivery %q not found", id)
}

// putOutboxEntry stores a new entry with its indexes. Defaults: state
// pending, due at creation.
func putOutboxEntry(tx *bolt.Tx, e OutboxEntry, now time.Time) error {
	if e.ID == "" || e.Team == "" || e.Kind == "" {
		return fmt.Errorf("outbox entry needs id, team and kind")
	}
	if e.CreatedAt.IsZero() {
		e.CreatedAt = now
	}
	if e.State == "" {
		e.State = DeliveryPending
	}
	if e.NextAttemptAt.IsZero() {
		e.NextAttemptAt = e.CreatedAt
	}
	if e.WindowStart.IsZero() {
		e.WindowStart = e.CreatedAt
	}
	e.UpdatedAt = now
	ob, dl := tx.Bucket(bucketOutbox), tx.Bucket(bucketDeliveries)
	if dl.Get(idKey(e.ID)) != nil {
		return Errorf(ECONFLICT, "delivery %s already exists", e.ID)
	}
	seq, err := ob.NextSequence()
	if err != nil {
		return err
	}
	if err := putJSON(ob, itob(seq), e); err != nil {
		return err
	}
	if err := dl.Put(idKey(e.ID), itob(seq)); err != nil {
		return err
	}
	if err := dl.Put(teamKey(e.Team, seq), nil); err != nil {
		return err
	}
	if e.State == DeliveryPending {
		return dl.Put(queueKey(queueDue(&e), seq), nil)
	}
	return nil
}

// EnqueueDeliveries stores entries outside an investigation's transaction
// (tests, tools). FinishInvestigation is the normal writer.
func (d *DB) EnqueueDeliveries(ctx context.Context, entries ...OutboxEntry) error {
	return d.update(ctx, func(tx *bolt.Tx) error {
		for _, e := range entries {
			if err := putOutboxEntry(tx, e, d.now()); err != nil {
				return err
			}
		}
		return nil
	})
}

// loadEntry reads the entry with id and its seq.
func loadEntry(tx *bolt.Tx, id string) (*OutboxEntry, uint64, error) {
	sk := tx.Bucket(bucketDeliveries).Get(idKey(id))
	if sk == nil {
		return nil, 0, deliveryNotFound(id)
	}
	seq := btoi(sk)
	var e OutboxEntry
	ok, err := getJSON(tx.Bucket(bucketOutbox), itob(seq), &e)
	if err != nil {
		return nil, 0, err
	}
	if !ok {
		return nil, 0, deliveryNotFound(id)
	}
	return &e, seq, nil
}

// saveEntry writes e back and moves its queue key from oldDue/oldPending to
// where its new state puts it.
func saveEntry(tx *bolt.Tx, e *OutboxEntry, seq uint64, wasPending bool, oldDue time.Time) error {
	dl := tx.Bucket(bucketDeliveries)
	if wasPending {
		if err := dl.Delete(queueKey(oldDue, seq)); err != nil {
			return err
		}
	}
	if e.State == DeliveryPending {
		if err := dl.Put(queueKey(queueDue(e), seq), nil); err != nil {
			return err
		}
	}
	return putJSON(tx.Bucket(bucketOutbox), itob(seq), e)
}

// NextDeliveryDue returns the earliest due time in the queue (a lease end
// for claimed entries), and false when nothing is pending.
func (d *DB) NextDeliveryDue(ctx context.Context) (time.Time, bool, error) {
	var due time.Time
	var found bool
	err := d.view(ctx, func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketDeliveries).Cursor()
		k, _ := c.Seek([]byte{pfxQueue})
		if k != nil && k[0] == pfxQueue && len(k) == 17 {
			due, found = time.Unix(0, int64(btoi(k[1:9]))).UTC(), true
		}
		return nil
	})
	return due, found, err
}

// ClaimDueDeliveries leases due pending entries for a worker.
func (d *DB) ClaimDueDeliveries(ctx context.Context, now time.Time, lease time.Duration, max int) ([]*OutboxEntry, error) {
	if max <= 0 {
		return nil, nil
	}
	// A read transaction first: an idle poll must not cost a write (fsync).
	next, ok, err := d.NextDeliveryDue(ctx)
	if err != nil || !ok || next.After(now) {
		return nil, err
	}
	var out []*OutboxEntry
	err = d.update(ctx, func(tx *bolt.Tx) error {
		dl := tx.Bucket(bucketDeliveries)
		c := dl.Cursor()
		var due [][]byte
		limit := itob(nanos(now))
		for k, _ := c.Seek([]byte{pfxQueue}); k != nil && k[0] == pfxQueue && len(due) < max*4; k, _ = c.Next() {
			if len(k) != 17 || bytes.Compare(k[1:9], limit) > 0 {
				break
			}
			due = append(due, bytes.Clone(k))
		}
		ob := tx.Bucket(bucketOutbox)
		for _, k := range due {
			if len(out) >= max {
				break
			}
			seq := btoi(k[9:])
			var e OutboxEntry
			ok, err := getJSON(ob, itob(seq), &e)
			if err != nil {
				return err
			}
			if !ok || e.State != DeliveryPending {
				if err := dl.Delete(k); err != nil { // a stale key: drop it
					return err
				}
				continue
			}
			old := queueDue(&e)
			if e.Kind == OutboxWebhook {
				var dt DisabledTarget
				if found, err := getJSON(dl, disabledKey(e.Team, e.Target), &dt); err != nil {
					return err
				} else if found {
					e.State = DeliveryDisabled
					e.LeaseUntil = nil
					e.UpdatedAt = now
					e.LastError = fmt.Sprintf("not attempted: the endpoint answered 410 Gone at %s (delivery %s) and is disabled until the URL changes or a delivery to it is redelivered",
						dt.DisabledAt.UTC().Format(time.RFC3339), dt.EntryID)
					if err := saveEntry(tx, &e, seq, true, old); err != nil {
						return err
					}
					continue
				}
			}
			until := now.Add(lease)
			e.LeaseUntil = &until
			e.UpdatedAt = now
			if err := saveEntry(tx, &e, seq, true, old); err != nil {
				return err
			}
			cp := e
			out = append(out, &cp)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ReleaseLeases makes every leased pending entry due now. Only the process
// holding the file lock runs workers, so at start every lease is stale.
func (d *DB) ReleaseLeases(ctx context.Context) (int, error) {
	n := 0
	now := d.now()
	err := d.update(ctx, func(tx *bolt.Tx) error {
		dl := tx.Bucket(bucketDeliveries)
		c := dl.Cursor()
		var keys [][]byte
		for k, _ := c.Seek([]byte{pfxQueue}); k != nil && k[0] == pfxQueue; k, _ = c.Next() {
			keys = append(keys, bytes.Clone(k))
		}
		ob := tx.Bucket(bucketOutbox)
		for _, k := range keys {
			if len(k) != 17 {
				continue
			}
			seq := btoi(k[9:])
			var e OutboxEntry
			if ok, err := getJSON(ob, itob(seq), &e); err != nil || !ok || e.LeaseUntil == nil {
				if err != nil {
					return err
				}
				continue
			}
			old := queueDue(&e)
			e.LeaseUntil = nil
			if e.NextAttemptAt.After(now) {
				e.NextAttemptAt = now
			}
			if err := saveEntry(tx, &e, seq, e.State == DeliveryPending, old); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}

// RecordDelivery applies the outcome of handling entry id: it logs the
// attempt, updates the entry, releases its lease and reschedules it.
func (d *DB) RecordDelivery(ctx context.Context, id string, o DeliveryOutcome) (*OutboxEntry, error) {
	switch o.State {
	case DeliveryPending, DeliveryDelivered, DeliveryFailed, DeliveryDisabled, DeliveryWaitingSecret:
	default:
		return nil, Errorf(EINVALID, "unknown delivery state %q", o.State)
	}
	var out *OutboxEntry
	err := d.update(ctx, func(tx *bolt.Tx) error {
		e, seq, err := loadEntry(tx, id)
		if err != nil {
			return err
		}
		wasPending, old := e.State == DeliveryPending, queueDue(e)
		now := d.now()
		if o.Attempt != nil {
			e.Attempts++
			e.WindowAttempts++
			a := *o.Attempt
			a.Attempt = e.Attempts
			if o.State == DeliveryPending {
				next := o.NextAttemptAt
				a.NextAttemptAt = &next
			}
			if err := putJSON(tx.Bucket(bucketDeliveries), attemptKey(id, a.Attempt), a); err != nil {
				return err
			}
			now = a.Time
		}
		e.State = o.State
		e.LastStatus = o.LastStatus
		e.LastError = o.LastError
		e.LeaseUntil = nil
		e.UpdatedAt = d.now()
		if o.State == DeliveryPending {
			e.NextAttemptAt = o.NextAttemptAt
		}
		if o.State == DeliveryDelivered {
			t := now
			e.DeliveredAt = &t
		}
		if o.DisableTarget {
			dt := DisabledTarget{Team: e.Team, Target: e.Target, DisabledAt: now, EntryID: e.ID}
			if err := putJSON(tx.Bucket(bucketDeliveries), disabledKey(e.Team, e.Target), dt); err != nil {
				return err
			}
		}
		if err := saveEntry(tx, e, seq, wasPending, old); err != nil {
			return err
		}
		out = e
		return nil
	})
	return out, err
}

// GetDelivery returns entry id of team ("" for any team).
func (d *DB) GetDelivery(ctx context.Context, team, id string) (*OutboxEntry, error) {
	var out *OutboxEntry
	err := d.view(ctx, func(tx *bolt.Tx) error {
		e, _, err := loadEntry(tx, id)
		if err != nil {
			return err
		}
		if team != "" && e.Team != team {
			return deliveryNotFound(id)
		}
		out = e
		return nil
	})
	return out, err
}

// ListDeliveries returns a team's entries, newest first.
func (d *DB) ListDeliveries(ctx context.Context, team string, limit int) ([]*OutboxEntry, error) {
	if team == "" {
		return nil, Errorf(EINVALID, "team is required to list deliveries")
	}
	if limit <= 0 {
		limit = 20
	}
	var out []*OutboxEntry
	err := d.view(ctx, func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketDeliveries).Cursor()
		ob := tx.Bucket(bucketOutbox)
		prefix := append(append([]byte{pfxTeam}, team...), 0)
		end := append(bytes.Clone(prefix), bytes.Repeat([]byte{0xff}, 9)...)
		k, _ := c.Seek(end)
		if k == nil {
			k, _ = c.Last()
		} else {
			k, _ = c.Prev()
		}
		for ; k != nil && bytes.HasPrefix(k, prefix) && len(out) < limit; k, _ = c.Prev() {
			var e OutboxEntry
			ok, err := getJSON(ob, k[len(prefix):], &e)
			if err != nil {
				return err
			}
			if ok {
				out = append(out, &e)
			}
		}
		return nil
	})
	return out, err
}

// DeliveryAttempts returns the log of entry id, oldest first.
func (d *DB) DeliveryAttempts(ctx context.Context, id string) ([]DeliveryAttempt, error) {
	out := []DeliveryAttempt{}
	err := d.view(ctx, func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketDeliveries).Cursor()
		prefix := append(append([]byte{pfxAttempt}, id...), 0)
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			var a DeliveryAttempt
			if err := json.Unmarshal(v, &a); err != nil {
				return fmt.Errorf("decoding delivery attempt %x: %w", k, err)
			}
			out = append(out, a)
		}
		return nil
	})
	return out, err
}

// RedeliverDelivery re-queues entry id now with the same id (the
// webhook-id) and a fresh retry window, whatever its state. For a webhook
// it also re-enables the target if a 410 had disabled it.
func (d *DB) RedeliverDelivery(ctx context.Context, team, id string) (*OutboxEntry, error) {
	var out *OutboxEntry
	err := d.update(ctx, func(tx *bolt.Tx) error {
		e, seq, err := loadEntry(tx, id)
		if err != nil {
			return err
		}
		if team != "" && e.Team != team {
			return deliveryNotFound(id)
		}
		if e.State == DeliveryPending && e.LeaseUntil != nil {
			return Errorf(EINVALIDSTATE, "delivery %s is being attempted right now", id)
		}
		wasPending, old := e.State == DeliveryPending, queueDue(e)
		now := d.now()
		e.State = DeliveryPending
		e.NextAttemptAt = now
		e.WindowStart = now
		e.WindowAttempts = 0
		e.LeaseUntil = nil
		e.UpdatedAt = now
		if e.Kind == OutboxWebhook {
			if err := tx.Bucket(bucketDeliveries).Delete(disabledKey(e.Team, e.Target)); err != nil {
				return err
			}
		}
		if err := saveEntry(tx, e, seq, wasPending, old); err != nil {
			return err
		}
		out = e
		return nil
	})
	return out, err
}

// requeueWaitingTx moves a team's webhook entries waiting for a signing
// secret back to pending, due now.
func requeueWaitingTx(tx *bolt.Tx, team string, now time.Time) error {
	dl := tx.Bucket(bucketDeliveries)
	ob := tx.Bucket(bucketOutbox)
	prefix := append(append([]byte{pfxTeam}, team...), 0)
	var seqs []uint64
	c := dl.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		seqs = append(seqs, btoi(k[len(prefix):]))
	}
	for _, seq := range seqs {
		var e OutboxEntry
		ok, err := getJSON(ob, itob(seq), &e)
		if err != nil {
			return err
		}
		if !ok || e.State != DeliveryWaitingSecret {
			continue
		}
		e.State = DeliveryPending
		e.NextAttemptAt = now
		e.LastError = ""
		e.UpdatedAt = now
		if err := saveEntry(tx, &e, seq, false, time.Time{}); err != nil {
			return err
		}
	}
	return nil
}

// DeleteDeliveriesBefore deletes entries that are no longer pending (or
// waiting) and were created before t, with their log and indexes.
func (d *DB) DeleteDeliveriesBefore(ctx context.Context, t time.Time) (int, error) {
	n := 0
	err := d.update(ctx, func(tx *bolt.Tx) error {
		ob, dl := tx.Bucket(bucketOutbox), tx.Bucket(bucketDeliveries)
		type dead struct {
			seq      uint64
			id, team string
		}
		var list []dead
		err := ob.ForEach(func(k, v []byte) error {
			var e OutboxEntry
			if err := json.Unmarshal(v, &e); err != nil {
				return fmt.Errorf("decoding outbox entry %x: %w", k, err)
			}
			if e.State == DeliveryPending || e.State == DeliveryWaitingSecret || !e.CreatedAt.Before(t) {
				return nil
			}
			list = append(list, dead{btoi(k), e.ID, e.Team})
			return nil
		})
		if err != nil {
			return err
		}
		for _, x := range list {
			if err := ob.Delete(itob(x.seq)); err != nil {
				return err
			}
			if err := dl.Delete(idKey(x.id)); err != nil {
				return err
			}
			if err := dl.Delete(teamKey(x.team, x.seq)); err != nil {
				return err
			}
			prefix := append(append([]byte{pfxAttempt}, x.id...), 0)
			c := dl.Cursor()
			for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Seek(prefix) {
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

// Webhook signing keys.

// WebhookSecretPrefix starts every signing secret (Standard Webhooks).
const WebhookSecretPrefix = "whsec_"

// webhookKeyBytes is the length of a signing key (24..64 per the spec).
const webhookKeyBytes = 32

type sealedKey struct {
	Sealed    []byte     `json:"sealed"` // nonce ‖ AES-GCM ciphertext
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"` // previous keys only
}

type webhookSecretRecord struct {
	Current  sealedKey  `json:"current"`
	Previous *sealedKey `json:"previous,omitempty"`
}

func (d *DB) secretAEAD() (cipher.AEAD, error) {
	if len(d.installKey) == 0 {
		return nil, fmt.Errorf("no install key")
	}
	key := make([]byte, 32)
	if _, err := io.ReadFull(hkdf.New(sha256.New, d.installKey, nil, []byte("rootcause/webhook-signing-key/v1")), key); err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

func (d *DB) seal(team string, plain []byte) ([]byte, error) {
	aead, err := d.secretAEAD()
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return aead.Seal(nonce, nonce, plain, []byte("team:"+team)), nil
}

func (d *DB) open(team string, sealed []byte) ([]byte, error) {
	aead, err := d.secretAEAD()
	if err != nil {
		return nil, err
	}
	if len(sealed) < aead.NonceSize() {
		return nil, fmt.Errorf("sealed webhook key too short")
	}
	n := aead.NonceSize()
	return aead.Open(nil, sealed[:n], sealed[n:], []byte("team:"+team))
}

// CreateWebhookSecret creates a team's signing secret, or rotates it: the
// old key stays valid (both signatures are sent) for overlap, which may be
// 0. It returns the new secret; it is never shown again.
func (d *DB) CreateWebhookSecret(ctx context.Context, team string, overlap time.Duration, createOnly bool) (*WebhookSecret, error) {
	if overlap < 0 {
		return nil, Errorf(EINVALID, "overlap must not be negative")
	}
	raw := make([]byte, webhookKeyBytes)
	if _, err := rand.Read(raw); err != nil {
		return nil, fmt.Errorf("creating webhook secret: %w", err)
	}
	sealed, err := d.seal(team, raw)
	if err != nil {
		return nil, &Error{Code: EINTERNAL, Err: err}
	}
	now := d.now().UTC()
	out := &WebhookSecret{Team: team, Secret: WebhookSecretPrefix + base64.StdEncoding.EncodeToString(raw), CreatedAt: now}
	err = d.update(ctx, func(tx *bolt.Tx) error {
		var n Node
		ok, err := getJSON(tx.Bucket(bucketNodes), []byte(team), &n)
		if err != nil {
			return err
		}
		if !ok {
			return Errorf(ENOTFOUND, "team %q not found", truncName(team))
		}
		if n.Kind != KindTeam {
			return Errorf(EINVALID, "%q is a %s, not a team; webhook secrets belong to teams", n.Name, n.Kind)
		}
		b := tx.Bucket(bucketWebhookSecrets)
		var rec webhookSecretRecord
		exists, err := getJSON(b, []byte(team), &rec)
		if err != nil {
			return err
		}
		if exists && createOnly {
			return Errorf(ECONFLICT, "team %s already has a webhook signing secret; rotate it instead", team)
		}
		next := webhookSecretRecord{Current: sealedKey{Sealed: sealed, CreatedAt: now}}
		if exists && overlap > 0 {
			exp := now.Add(overlap)
			prev := rec.Current
			prev.ExpiresAt = &exp
			next.Previous = &prev
			out.PreviousExpiresAt = &exp
		}
		if err := putJSON(b, []byte(team), next); err != nil {
			return err
		}
		return requeueWaitingTx(tx, team, now)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// WebhookSecretInfo describes a team's secret without revealing it.
func (d *DB) WebhookSecretInfo(ctx context.Context, team string) (*WebhookSecret, error) {
	var out *WebhookSecret
	err := d.view(ctx, func(tx *bolt.Tx) error {
		var rec webhookSecretRecord
		ok, err := getJSON(tx.Bucket(bucketWebhookSecrets), []byte(team), &rec)
		if err != nil {
			return err
		}
		if !ok {
			return Errorf(ENOTFOUND, "team %q has no webhook signing secret", truncName(team))
		}
		out = &WebhookSecret{Team: team, CreatedAt: rec.Current.CreatedAt}
		if rec.Previous != nil && rec.Previous.ExpiresAt != nil && rec.Previous.ExpiresAt.After(d.now()) {
			out.PreviousExpiresAt = rec.Previous.ExpiresAt
		}
		return nil
	})
	return out, err
}

// WebhookSigningSecrets returns the team's secrets to sign with now: the
// current one first, then the previous one while its overlap lasts.
func (d *DB) WebhookSigningSecrets(ctx context.Context, team string) ([]string, error) {
	var rec webhookSecretRecord
	err := d.view(ctx, func(tx *bolt.Tx) error {
		ok, err := getJSON(tx.Bucket(bucketWebhookSecrets), []byte(team), &rec)
		if err != nil {
			return err
		}
		if !ok {
			return Errorf(ENOTFOUND, "team %q has no webhook signing secret", truncName(team))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	keys := []sealedKey{rec.Current}
	if rec.Previous != nil && rec.Previous.ExpiresAt != nil && rec.Previous.ExpiresAt.After(d.now()) {
		keys = append(keys, *rec.Previous)
	}
	var out []string
	for _, k := range keys {
		raw, err := d.open(team, k.Sealed)
		if err != nil {
			return nil, &Error{Code: EINTERNAL, Err: fmt.Errorf("opening the webhook signing key of %s: %w", team, err)}
		}
		out = append(out, WebhookSecretPrefix+base64.StdEncoding.EncodeToString(raw))
	}
	return out, nil
}

func truncName(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return strings.ToValidUTF8(s, "?")
}
