package db

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/rootcause/rootcause/mergeconf"
)

// Configuration storage.
//
// Each node's own document (its overrides, never the merge) is stored as
// JSON in bucketConfigs under the node name; an absent key is {}. The
// node's config version is Node.Version in bucketNodes, bumped in the same
// write transaction that stores the document and appends the audit entry.
//
// The audit history lives in bucketConfigVersions keyed
// node ‖ 0x00 ‖ u64be seq, where seq is a per-node sequence of audit
// entries (the 0x00 separator cannot occur in a node name, so one node's
// prefix never matches another's). Applied changes (event "applied") carry
// the new version; notes about change requests (events "submitted",
// "rejected", "expired", "conflict") carry the node's unchanged version,
// so versions of applied entries are contiguous 1, 2, 3, ... while notes
// never bump them. Reading is a reverse prefix scan: newest first.

var _ ConfigService = (*DB)(nil)

// Audit events.
const (
	EventApplied   = "applied"   // a change was applied; Version is the new version
	EventSubmitted = "submitted" // a change request was created (nothing applied)
	EventRejected  = "rejected"  // a change request was rejected (nothing applied)
	EventExpired   = "expired"   // a change request expired (nothing applied)
	EventConflict  = "conflict"  // approval found a moved base (nothing applied)
)

// History limits.
const (
	DefaultHistoryLimit = 50
	MaxHistoryLimit     = 500
)

// Actor is who makes a change: a token (ID, Name) or an OIDC user (ID is
// the subject, Email set), or the local socket.
type Actor struct {
	ID    string
	Name  string
	Email string
	// Local marks the local socket's principal.
	Local bool
}

// ChangedBy is the audit entry's changed_by: the email of an OIDC user,
// "token:<id> (<name>)" for a token ("token:<id>" without a name), and
// "local (<name>)" for the local socket.
func (a Actor) ChangedBy() string {
	switch {
	case a.Email != "":
		return a.Email
	case a.Local:
		if a.Name != "" {
			return "local (" + a.Name + ")"
		}
		return "local"
	case a.Name != "":
		return "token:" + a.ID + " (" + a.Name + ")"
	default:
		return "token:" + a.ID
	}
}

// ConfigCheck validates a change inside the write transaction that applies
// it. lineage holds the own documents of the node's lineage as stored now,
// root first, the node's current own document last; newOwn is the node's
// own document after the patch. Any error aborts the change: an *Error is
// returned unchanged, any other error as EINTERNAL wrapping it. It must not block: it runs while holding bbolt's
// single writer lock.
type ConfigCheck func(lineage []map[string]any, newOwn map[string]any) error

// NodeConfig is a node of a lineage with its config version and (when
// asked for) its own document.
type NodeConfig struct {
	Name    string         `json:"name"`
	Kind    string         `json:"kind"`
	Version int64          `json:"version"`
	Own     map[string]any `json:"config,omitempty"`
}

// ConfigChange is the outcome of a patch. Version is the node's version
// after it (unchanged when Diff is empty: nothing was written).
type ConfigChange struct {
	Version       int64
	Diff          map[string]mergeconf.Change
	ChangedFields []string
	Own           map[string]any // the node's own document after the change
}

// AuditEntry is one entry of a node's config history (spec 2.8), plus
// rootcause's fields: event, and for change requests the request id, the
// requester, the proposed changes (notes only) and the reason.
type AuditEntry struct {
	Version         int64                       `json:"version"`
	Event           string                      `json:"event"`
	ChangedAt       time.Time                   `json:"changed_at"`
	ChangedBy       string                      `json:"changed_by"`
	Diff            map[string]mergeconf.Change `json:"diff"`
	FullConfig      json.RawMessage             `json:"full_config,omitempty"`
	ChangeRequestID string                      `json:"change_request_id,omitempty"`
	RequestedBy     string                      `json:"requested_by,omitempty"`
	Changes         map[string]mergeconf.Change `json:"changes,omitempty"`
	Reason          string                      `json:"reason,omitempty"`
}

// HistoryOptions select audit entries.
type HistoryOptions struct {
	Limit       int  // 0: DefaultHistoryLimit; at most MaxHistoryLimit
	IncludeFull bool // keep full_config on applied entries
}

// ConfigService stores node configuration documents, their versions and
// audit history, and change requests awaiting approval.
//
// Every method returns ENOTFOUND for an unknown node or change request.
//
//   - ConfigLineage returns the lineage of node, root first, with versions,
//     read in one transaction; withDocs also loads each own document.
//   - PatchNodeConfig applies an RFC 7396 merge patch to node's own document
//     in one write transaction: check (whose errors pass through) runs
//     inside it; an empty diff writes nothing and returns the current
//     version; otherwise the version is bumped, the document stored and an
//     "applied" audit entry appended.
//   - ConfigHistory returns audit entries newest first (EINVALID for a
//     limit outside 1..MaxHistoryLimit).
//   - CreateChangeRequest validates like PatchNodeConfig and stores a
//     pending request instead of applying it (EINVALID for an empty diff).
//   - ApproveChangeRequest applies a pending request: EINVALIDSTATE when it
//     is not pending (or has just expired), EFORBIDDEN for its own
//     requester, ECONFLICT when the node's version moved since the request
//     was made (the request is closed as "conflict").
//   - RejectChangeRequest closes a pending request (EINVALIDSTATE otherwise).
type ConfigService interface {
	ConfigLineage(ctx context.Context, node string, withDocs bool) ([]NodeConfig, error)
	// ConfigGeneration changes after every write that may change a config
	// version (it is read before, and bumped after, each transaction), so a
	// cache filled after reading generation g is current while it is g.
	ConfigGeneration() uint64
	PatchNodeConfig(ctx context.Context, node string, patch map[string]any, by Actor, check ConfigCheck) (*ConfigChange, error)
	ConfigHistory(ctx context.Context, node string, opts HistoryOptions) ([]*AuditEntry, error)

	CreateChangeRequest(ctx context.Context, req ChangeRequestInput, check ConfigCheck) (*ChangeRequest, error)
	FindChangeRequest(ctx context.Context, id string) (*ChangeRequest, error)
	ListChangeRequests(ctx context.Context, f ChangeRequestFilter) ([]*ChangeRequest, error)
	ApproveChangeRequest(ctx context.Context, id string, by Actor, check ConfigCheck) (*ChangeRequest, error)
	RejectChangeRequest(ctx context.Context, id string, by Actor, reason string) (*ChangeRequest, error)
	ExpireChangeRequests(ctx context.Context) (int, error)
}

// auditPrefix is node ‖ 0x00, the key prefix of node's audit entries.
func auditPrefix(node string) []byte {
	p := make([]byte, 0, len(node)+9) // room for the u64be suffix
	p = append(p, node...)
	return append(p, 0)
}

// lastAuditSeq returns the sequence of node's newest audit entry (0: none).
func lastAuditSeq(b *bolt.Bucket, node string) uint64 {
	prefix := auditPrefix(node)
	end := append([]byte(node), 1)
	c := b.Cursor()
	k, _ := c.Seek(end)
	if k == nil {
		k, _ = c.Last()
	} else {
		k, _ = c.Prev()
	}
	if k == nil || !bytes.HasPrefix(k, prefix) || len(k) != len(prefix)+8 {
		return 0
	}
	return btoi(k[len(prefix):])
}

// appendAudit stores e as node's next audit entry.
func appendAudit(tx *bolt.Tx, node string, e *AuditEntry) error {
	b := tx.Bucket(bucketConfigVersions)
	seq := lastAuditSeq(b, node) + 1
	return putJSON(b, append(auditPrefix(node), itob(seq)...), e)
}

// decodeNumbers decodes JSON with numbers as json.Number, as mergeconf
// expects, so integers keep their exact form.
func decodeNumbers(buf []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(buf))
	dec.UseNumber()
	return dec.Decode(v)
}

// ownDoc returns node's own document ({} when absent).
func ownDoc(tx *bolt.Tx, node string) (map[string]any, error) {
	buf := tx.Bucket(bucketConfigs).Get([]byte(node))
	if buf == nil {
		return map[string]any{}, nil
	}
	doc, err := mergeconf.Decode(buf)
	if err != nil {
		return nil, &Error{Code: EINTERNAL, Err: fmt.Errorf("config of node %s: %w", node, err)}
	}
	return doc, nil
}

// lineageTx returns the lineage of node, root first.
func lineageTx(tx *bolt.Tx, node string) ([]*Node, error) {
	var out []*Node
	seen := map[string]bool{}
	for cur := node; ; {
		n, err := findNode(tx, cur)
		if err != nil {
			if cur != node {
				return nil, &Error{Code: EINTERNAL, Err: err}
			}
			return nil, err
		}
		out = append(out, n)
		seen[cur] = true
		if n.Parent == "" {
			break
		}
		if seen[n.Parent] {
			return nil, &Error{Code: EINTERNAL, Message: "organization tree has a cycle at " + quoteShort(n.Parent)}
		}
		cur = n.Parent
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}

// ConfigLineage returns node's lineage, root first, with each node's
// version and, when withDocs, its own document, all from one transaction.
func (d *DB) ConfigLineage(ctx context.Context, node string, withDocs bool) ([]NodeConfig, error) {
	var out []NodeConfig
	err := d.view(ctx, func(tx *bolt.Tx) error {
		nodes, err := lineageTx(tx, node)
		if err != nil {
			return err
		}
		out = make([]NodeConfig, len(nodes))
		for i, n := range nodes {
			out[i] = NodeConfig{Name: n.Name, Kind: n.Kind, Version: n.Version}
			if withDocs {
				if out[i].Own, err = ownDoc(tx, n.Name); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// applyPatchTx runs a patch on node inside tx: it reads the lineage,
// merges, runs check and, when something changed, stores the document,
// bumps the version and appends an "applied" audit entry (entry's
// ChangedAt, Diff and Version are filled in here; the caller sets the rest;
// the new document is stored as the version's snapshot record).
func (d *DB) applyPatchTx(tx *bolt.Tx, node string, patch map[string]any, check ConfigCheck, entry *AuditEntry) (*ConfigChange, error) {
	nodes, err := lineageTx(tx, node)
	if err != nil {
		return nil, err
	}
	docs := make([]map[string]any, len(nodes))
	for i, n := range nodes {
		if docs[i], err = ownDoc(tx, n.Name); err != nil {
			return nil, err
		}
	}
	self := nodes[len(nodes)-1]
	old := docs[len(docs)-1]
	next := mergeconf.MergePatch(old, patch)
	if check != nil {
		if err := check(docs, next); err != nil {
			return nil, err
		}
	}
	diff := mergeconf.Diff(old, next)
	out := &ConfigChange{Version: self.Version, Diff: diff, ChangedFields: mergeconf.ChangedFields(diff), Own: next}
	if len(diff) == 0 {
		out.Own = old
		return out, nil
	}
	buf, err := json.Marshal(next)
	if err != nil {
		return nil, &Error{Code: EINTERNAL, Err: fmt.Errorf("encoding config: %w", err)}
	}
	// The document of the current version, before it is replaced: the base
	// of the new version's snapshot patch.
	prev := tx.Bucket(bucketConfigs).Get([]byte(node))
	if prev == nil {
		prev = []byte("{}") // an absent document is {}
	}
	if err := putSnapshot(tx, node, self.Version+1, prev, buf); err != nil {
		return nil, err
	}
	if err := pruneSnapshots(tx, node, self.Version+1, d.opts.ConfigHistoryKeep); err != nil {
		return nil, err
	}
	if err := tx.Bucket(bucketConfigs).Put([]byte(node), buf); err != nil {
		return nil, err
	}
	self.Version++
	if err := putJSON(tx.Bucket(bucketNodes), []byte(node), self); err != nil {
		return nil, err
	}
	entry.Version = self.Version
	entry.Event = EventApplied
	entry.ChangedAt = d.now().UTC()
	entry.Diff = diff
	entry.FullConfig = nil // stored as a snapshot record (confighistory.go)
	if err := appendAudit(tx, node, entry); err != nil {
		return nil, err
	}
	out.Version = self.Version
	return out, nil
}

// ConfigGeneration implements ConfigService: an in-process counter bumped
// after every config write transaction ends.
func (d *DB) ConfigGeneration() uint64 { return d.configGen.Load() }

// PatchNodeConfig applies patch to node's own document; see ConfigService.
func (d *DB) PatchNodeConfig(ctx context.Context, node string, patch map[string]any, by Actor, check ConfigCheck) (*ConfigChange, error) {
	defer d.configGen.Add(1)
	var out *ConfigChange
	err := d.update(ctx, func(tx *bolt.Tx) error {
		var err error
		out, err = d.applyPatchTx(tx, node, patch, check, &AuditEntry{ChangedBy: by.ChangedBy()})
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ConfigHistory returns node's audit entries newest first.
func (d *DB) ConfigHistory(ctx context.Context, node string, opts HistoryOptions) ([]*AuditEntry, error) {
	limit := opts.Limit
	if limit == 0 {
		limit = DefaultHistoryLimit
	}
	if limit < 1 || limit > MaxHistoryLimit {
		return nil, &Error{Code: EINVALID, Field: "limit", Message: fmt.Sprintf("limit must be between 1 and %d", MaxHistoryLimit)}
	}
	out := []*AuditEntry{}
	err := d.view(ctx, func(tx *bolt.Tx) error {
		if _, err := findNode(tx, node); err != nil {
			return err
		}
		prefix := auditPrefix(node)
		c := tx.Bucket(bucketConfigVersions).Cursor()
		k, v := c.Seek(append([]byte(node), 1))
		if k == nil {
			k, v = c.Last()
		} else {
			k, v = c.Prev()
		}
		for ; k != nil && bytes.HasPrefix(k, prefix) && len(out) < limit; k, v = c.Prev() {
			var e AuditEntry
			if err := decodeNumbers(v, &e); err != nil {
				return &Error{Code: EINTERNAL, Err: fmt.Errorf("decoding audit entry of %s: %w", node, err)}
			}
			if e.Diff == nil {
				e.Diff = map[string]mergeconf.Change{}
			}
			e.FullConfig = nil
			out = append(out, &e)
		}
		if !opts.IncludeFull {
			return nil
		}
		// Full documents only for applied entries, read from the snapshot
		// records in one forward pass over the versions asked for.
		lo, hi := int64(-1), int64(-1)
		for _, e := range out {
			if e.Event != EventApplied {
				continue
			}
			if lo < 0 || e.Version < lo {
				lo = e.Version
			}
			hi = max(hi, e.Version)
		}
		if lo < 0 {
			return nil
		}
		docs, err := configVersions(tx, node, lo, hi)
		if err != nil {
			return err
		}
		for _, e := range out {
			if e.Event == EventApplied {
				e.FullConfig = docs[e.Version]
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
