package db

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"sort"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/rootcause/rootcause/mergeconf"
)

// Change requests (contract section 2, "Approval") are stored by id in
// bucketChangeRequests, with the index node ‖ 0x00 ‖ id in
// bucketChangeRequestsByNode. A request is pending_approval until it is
// applied (approved), rejected, expired (7 days without a decision) or
// closed as conflict (the node's version moved before approval). Each
// transition appends an audit entry to the node's history: "submitted",
// "rejected", "expired" and "conflict" are notes that keep the node's
// version; an approval appends the "applied" entry of the new version.
//
// Expiry is evaluated lazily: reads show a pending request past its
// expires_at as expired, and Approve, Reject and ExpireChangeRequests (the
// periodic sweep) store the transition.

// Change request statuses.
const (
	StatusPendingApproval = "pending_approval"
	StatusApplied         = "applied"
	StatusRejected        = "rejected"
	StatusExpired         = "expired"
	StatusConflict        = "conflict"
)

// ChangeRequestTTL is how long a change request waits for a decision.
const ChangeRequestTTL = 7 * 24 * time.Hour

// maxReasonLen bounds a rejection reason and a request message.
const maxReasonLen = 2000

// ChangeRequest is a config change waiting for approval (spec 2.9).
type ChangeRequest struct {
	ID               string                      `json:"change_request_id"`
	Node             string                      `json:"node"`
	Status           string                      `json:"status"`
	Approvers        []string                    `json:"approvers"`
	Changes          map[string]mergeconf.Change `json:"changes"`
	Patch            map[string]any              `json:"patch"`
	BaseVersion      int64                       `json:"base_version"`
	Message          string                      `json:"message"`
	RequestedBy      string                      `json:"requested_by"`
	RequestedByID    string                      `json:"requested_by_id"`
	RequestedByEmail string                      `json:"requested_by_email,omitempty"`
	CreatedAt        time.Time                   `json:"created_at"`
	ExpiresAt        time.Time                   `json:"expires_at"`
	DecidedBy        string                      `json:"decided_by,omitempty"`
	DecidedAt        *time.Time                  `json:"decided_at,omitempty"`
	Reason           string                      `json:"reason,omitempty"`
	AppliedVersion   int64                       `json:"applied_version,omitempty"`
}

// ChangeRequestInput describes a change to submit for approval.
type ChangeRequestInput struct {
	Node    string
	Patch   map[string]any
	Message string
	By      Actor
}

// ChangeRequestFilter selects change requests; zero fields match all.
type ChangeRequestFilter struct {
	Node   string
	Status string
}

func crIndexKey(node, id string) []byte {
	k := make([]byte, 0, len(node)+1+len(id))
	k = append(k, node...)
	k = append(k, 0)
	return append(k, id...)
}

func newChangeRequestID() (string, error) {
	raw := make([]byte, 15)
	if _, err := rand.Read(raw); err != nil {
		return "", err
	}
	return "cr_" + strings.ToLower(idEncoding.EncodeToString(raw)), nil
}

func crNotFound(id string) error {
	return Errorf(ENOTFOUND, "change request %s not found", quoteShort(id))
}

func getCR(tx *bolt.Tx, id string) (*ChangeRequest, error) {
	buf := tx.Bucket(bucketChangeRequests).Get([]byte(id))
	if buf == nil {
		return nil, crNotFound(id)
	}
	var cr ChangeRequest
	if err := decodeNumbers(buf, &cr); err != nil {
		return nil, &Error{Code: EINTERNAL, Err: fmt.Errorf("decoding change request %s: %w", id, err)}
	}
	return &cr, nil
}

func putCR(tx *bolt.Tx, cr *ChangeRequest) error {
	return putJSON(tx.Bucket(bucketChangeRequests), []byte(cr.ID), cr)
}

// orgApprovers returns the approvers list of the org root's own document.
func orgApprovers(root map[string]any) []string {
	out := []string{}
	list, _ := root["approvers"].([]any)
	for _, v := range list {
		if s, ok := v.(string); ok && s != "" {
			out = append(out, s)
		}
	}
	return out
}

// CreateChangeRequest validates a patch (check runs inside the
// transaction, on the node's current lineage) and stores it as a pending
// change request with the org root's approvers and the node's current
// version as its base. Nothing is applied. An empty diff is EINVALID.
func (d *DB) CreateChangeRequest(ctx context.Context, in ChangeRequestInput, check ConfigCheck) (*ChangeRequest, error) {
	if len(in.Message) > maxReasonLen {
		return nil, &Error{Code: EINVALID, Field: "message", Message: fmt.Sprintf("message must be at most %d bytes", maxReasonLen)}
	}
	id, err := newChangeRequestID()
	if err != nil {
		return nil, &Error{Code: EINTERNAL, Err: err}
	}
	var cr *ChangeRequest
	err = d.update(ctx, func(tx *bolt.Tx) error {
		nodes, err := lineageTx(tx, in.Node)
		if err != nil {
			return err
		}
		docs := make([]map[string]any, len(nodes))
		for i, n := range nodes {
			if docs[i], err = ownDoc(tx, n.Name); err != nil {
				return err
			}
		}
		old := docs[len(docs)-1]
		next := mergeconf.MergePatch(old, in.Patch)
		if check != nil {
			if err := check(docs, next); err != nil {
				return err
			}
		}
		diff := mergeconf.Diff(old, next)
		if len(diff) == 0 {
			return Errorf(EINVALID, "the change request changes nothing")
		}
		now := d.now().UTC()
		cr = &ChangeRequest{
			ID:               id,
			Node:             in.Node,
			Status:           StatusPendingApproval,
			Approvers:        orgApprovers(docs[0]),
			Changes:          diff,
			Patch:            in.Patch,
			BaseVersion:      nodes[len(nodes)-1].Version,
			Message:          in.Message,
			RequestedBy:      in.By.ChangedBy(),
			RequestedByID:    in.By.ID,
			RequestedByEmail: in.By.Email,
			CreatedAt:        now,
			ExpiresAt:        now.Add(ChangeRequestTTL),
		}
		if err := putCR(tx, cr); err != nil {
			return err
		}
		if err := tx.Bucket(bucketChangeRequestsByNode).Put(crIndexKey(in.Node, id), nil); err != nil {
			return err
		}
		return appendAudit(tx, in.Node, &AuditEntry{
			Version: cr.BaseVersion, Event: EventSubmitted, ChangedAt: now, ChangedBy: cr.RequestedBy,
			Diff: map[string]mergeconf.Change{}, ChangeRequestID: id, RequestedBy: cr.RequestedBy, Changes: diff,
		})
	})
	if err != nil {
		return nil, err
	}
	return cr, nil
}

// expiredAt reports whether a pending cr has expired at now.
func (cr *ChangeRequest) expiredAt(now time.Time) bool {
	return cr.Status == StatusPendingApproval && !now.Before(cr.ExpiresAt)
}

// view returns cr as seen at now: a pending request past its expiry reads
// as expired.
func (cr *ChangeRequest) view(now time.Time) *ChangeRequest {
	if cr.expiredAt(now) {
		c := *cr
		c.Status = StatusExpired
		exp := c.ExpiresAt
		c.DecidedAt = &exp
		return &c
	}
	return cr
}

// FindChangeRequest returns the change request id.
func (d *DB) FindChangeRequest(ctx context.Context, id string) (*ChangeRequest, error) {
	var cr *ChangeRequest
	err := d.view(ctx, func(tx *bolt.Tx) error {
		var err error
		cr, err = getCR(tx, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	return cr.view(d.now()), nil
}

// ListChangeRequests returns the change requests matching f, oldest first.
// Status is compared after lazy expiry, so a pending request past its
// expiry is listed as expired.
func (d *DB) ListChangeRequests(ctx context.Context, f ChangeRequestFilter) ([]*ChangeRequest, error) {
	now := d.now()
	out := []*ChangeRequest{}
	err := d.view(ctx, func(tx *bolt.Tx) error {
		add := func(v []byte) error {
			var cr ChangeRequest
			if err := decodeNumbers(v, &cr); err != nil {
				return &Error{Code: EINTERNAL, Err: fmt.Errorf("decoding change request: %w", err)}
			}
			c := cr.view(now)
			if f.Status == "" || c.Status == f.Status {
				out = append(out, c)
			}
			return nil
		}
		if f.Node == "" {
			return tx.Bucket(bucketChangeRequests).ForEach(func(_, v []byte) error { return add(v) })
		}
		if _, err := findNode(tx, f.Node); err != nil {
			return err
		}
		prefix := crIndexKey(f.Node, "")
		crs := tx.Bucket(bucketChangeRequests)
		c := tx.Bucket(bucketChangeRequestsByNode).Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			v := crs.Get(k[len(prefix):])
			if v == nil {
				continue
			}
			if err := add(v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// closeCR stores a final non-applied status and its audit note.
func (d *DB) closeCR(tx *bolt.Tx, cr *ChangeRequest, status, by, reason string, at time.Time) error {
	cr.Status = status
	cr.DecidedBy = by
	cr.DecidedAt = &at
	cr.Reason = reason
	if err := putCR(tx, cr); err != nil {
		return err
	}
	n, err := findNode(tx, cr.Node)
	if err != nil {
		return &Error{Code: EINTERNAL, Err: err}
	}
	return appendAudit(tx, cr.Node, &AuditEntry{
		Version: n.Version, Event: status, ChangedAt: at, ChangedBy: by,
		Diff: map[string]mergeconf.Change{}, ChangeRequestID: cr.ID, RequestedBy: cr.RequestedBy,
		Changes: cr.Changes, Reason: reason,
	})
}

// expireIfDue stores the expiry of a pending request past its expiry and
// reports whether it did.
func (d *DB) expireIfDue(tx *bolt.Tx, cr *ChangeRequest, now time.Time) (bool, error) {
	if !cr.expiredAt(now) {
		return false, nil
	}
	return true, d.closeCR(tx, cr, StatusExpired, "system (expired after 7 days)", "not decided within 7 days", cr.ExpiresAt)
}

// ApproveChangeRequest applies a pending change request; see
// ConfigService. Expiry and conflict are stored even though an error is
// returned.
func (d *DB) ApproveChangeRequest(ctx context.Context, id string, by Actor, check ConfigCheck) (*ChangeRequest, error) {
	defer d.configGen.Add(1)
	var (
		out    *ChangeRequest
		result error // returned after a committed transition
	)
	err := d.update(ctx, func(tx *bolt.Tx) error {
		cr, err := getCR(tx, id)
		if err != nil {
			return err
		}
		now := d.now().UTC()
		if expired, err := d.expireIfDue(tx, cr, now); err != nil {
			return err
		} else if expired {
			out, result = cr, Errorf(EINVALIDSTATE, "change request %s expired on %s", id, cr.ExpiresAt.Format(time.RFC3339))
			return nil
		}
		if cr.Status != StatusPendingApproval {
			return Errorf(EINVALIDSTATE, "change request %s is %s, not pending_approval", id, cr.Status)
		}
		if by.ID != "" && by.ID == cr.RequestedByID || by.Email != "" && strings.EqualFold(by.Email, cr.RequestedByEmail) {
			return Errorf(EFORBIDDEN, "nobody can approve their own change request")
		}
		n, err := findNode(tx, cr.Node)
		if err != nil {
			return &Error{Code: EINTERNAL, Err: err}
		}
		if n.Version != cr.BaseVersion {
			reason := fmt.Sprintf("the config of %s moved from version %d to %d since the request was made", cr.Node, cr.BaseVersion, n.Version)
			if err := d.closeCR(tx, cr, StatusConflict, by.ChangedBy(), reason, now); err != nil {
				return err
			}
			out, result = cr, Errorf(ECONFLICT, "change request %s conflicts: %s; submit it again", id, reason)
			return nil
		}
		change, err := d.applyPatchTx(tx, cr.Node, cr.Patch, check, &AuditEntry{
			ChangedBy: by.ChangedBy(), ChangeRequestID: cr.ID, RequestedBy: cr.RequestedBy,
		})
		if err != nil {
			return err
		}
		cr.Status = StatusApplied
		cr.DecidedBy = by.ChangedBy()
		cr.DecidedAt = &now
		cr.AppliedVersion = change.Version
		if err := putCR(tx, cr); err != nil {
			return err
		}
		out = cr
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, result
}

// RejectChangeRequest closes a pending change request without applying it.
func (d *DB) RejectChangeRequest(ctx context.Context, id string, by Actor, reason string) (*ChangeRequest, error) {
	if len(reason) > maxReasonLen {
		return nil, &Error{Code: EINVALID, Field: "reason", Message: fmt.Sprintf("reason must be at most %d bytes", maxReasonLen)}
	}
	var (
		out    *ChangeRequest
		result error
	)
	err := d.update(ctx, func(tx *bolt.Tx) error {
		cr, err := getCR(tx, id)
		if err != nil {
			return err
		}
		now := d.now().UTC()
		if expired, err := d.expireIfDue(tx, cr, now); err != nil {
			return err
		} else if expired {
			out, result = cr, Errorf(EINVALIDSTATE, "change request %s expired on %s", id, cr.ExpiresAt.Format(time.RFC3339))
			return nil
		}
		if cr.Status != StatusPendingApproval {
			return Errorf(EINVALIDSTATE, "change request %s is %s, not pending_approval", id, cr.Status)
		}
		if err := d.closeCR(tx, cr, StatusRejected, by.ChangedBy(), reason, now); err != nil {
			return err
		}
		out = cr
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, result
}

// ExpireChangeRequests stores the expiry of every pending request past its
// expires_at, with its audit note, and returns how many expired.
func (d *DB) ExpireChangeRequests(ctx context.Context) (int, error) {
	n := 0
	err := d.update(ctx, func(tx *bolt.Tx) error {
		now := d.now().UTC()
		var due []*ChangeRequest
		err := tx.Bucket(bucketChangeRequests).ForEach(func(_, v []byte) error {
			var cr ChangeRequest
			if err := decodeNumbers(v, &cr); err != nil {
				return &Error{Code: EINTERNAL, Err: fmt.Errorf("decoding change request: %w", err)}
			}
			if cr.expiredAt(now) {
				due = append(due, &cr)
			}
			return nil
		})
		if err != nil {
			return err
		}
		sort.Slice(due, func(i, j int) bool { return due[i].CreatedAt.Before(due[j].CreatedAt) })
		for _, cr := range due {
			if _, err := d.expireIfDue(tx, cr, now); err != nil {
				return err
			}
		}
		n = len(due)
		return nil
	})
	return n, err
}
