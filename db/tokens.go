package db

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"encoding/base64"
	"hash"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	bolt "go.etcd.io/bbolt"
)

var _ TokenService = (*DB)(nil)

const (
	// TokenIDPrefix starts every token id, so a leaked team token is easy
	// to recognise (and to tell apart from a JWT).
	TokenIDPrefix = "rct_"
	// AdminTokenPrefix is the id part of every admin token.
	AdminTokenPrefix = "admin"

	tokenIDRandomLen = 16 // base32 characters after the prefix (80 bits)
	secretBytes      = 32 // 256-bit secrets
	maxSecretLen     = 128
	maxTokenNameLen  = 100
)

var (
	idEncoding     = base32.StdEncoding.WithPadding(base32.NoPadding)
	secretEncoding = base64.RawURLEncoding
)

// tokenRecord is the stored form of a token. Hash is HMAC-SHA256 of the
// secret under the install key; the secret itself is never stored.
type tokenRecord struct {
	ID          string     `json:"token_id"`
	Kind        string     `json:"kind"`
	Team        string     `json:"team,omitempty"`
	Name        string     `json:"name,omitempty"`
	Permissions []string   `json:"permissions"`
	Hash        []byte     `json:"hash"`
	CreatedAt   time.Time  `json:"created_at"`
	ExpiresAt   *time.Time `json:"expires_at,omitempty"`
	LastUsedAt  *time.Time `json:"last_used_at,omitempty"`
	RevokedAt   *time.Time `json:"revoked_at,omitempty"`
}

func (r *tokenRecord) token() *Token { return &r.copyOut().tok }

// copyOut returns a copy of r as a Token, in one allocation.
func (r *tokenRecord) copyOut() *tokenCopy {
	c := &tokenCopy{}
	t := &c.tok
	*t = Token{ID: r.ID, Kind: r.Kind, Team: r.Team, Name: r.Name, CreatedAt: r.CreatedAt}
	switch n := len(r.Permissions); {
	case n == 0: // nil, as before
	case n <= len(c.perms):
		copy(c.perms[:], r.Permissions)
		t.Permissions = c.perms[:n:n]
	default:
		t.Permissions = append([]string(nil), r.Permissions...)
	}
	if r.ExpiresAt != nil {
		c.expires = *r.ExpiresAt
		t.ExpiresAt = &c.expires
	}
	if r.LastUsedAt != nil {
		c.lastUsed = *r.LastUsedAt
		t.LastUsedAt = &c.lastUsed
	}
	if r.RevokedAt != nil {
		c.revoked = *r.RevokedAt
		t.RevokedAt = &c.revoked
	}
	if len(r.Hash) == len(c.hash) {
		copy(c.hash[:], r.Hash)
		t.Hash = c.hash[:]
	} else {
		t.Hash = cloneBytes(r.Hash)
	}
	return c
}

// tokenCopy is a Token returned to a caller together with the storage its
// slices and time pointers refer to, so that Authenticate's answer is one
// allocation and still shares nothing with the cached record: the caller
// may modify it freely.
type tokenCopy struct {
	tok                        Token
	perms                      [4]string // every issued token has at most four
	expires, lastUsed, revoked time.Time
	hash                       [sha256.Size]byte
}

// HasPermission reports whether the token grants perm.
func (t *Token) HasPermission(perm string) bool {
	for _, p := range t.Permissions {
		if p == perm {
			return true
		}
	}
	return false
}

// errUnauthorized is the one answer for every token that does not match a
// live token, so callers cannot tell which part was wrong.
func errUnauthorized() error {
	return &Error{Code: EUNAUTHORIZED, Message: "invalid or expired token"}
}

// hashSecret returns HMAC-SHA256(install key, secret). The keyed HMAC
// states are pooled (Reset restores the keyed state), which saves setting
// up the key on every request, and each carries the buffers the secret and
// the sum pass through, so hashing allocates nothing.
func (d *DB) hashSecret(secret string) [sha256.Size]byte {
	ac := d.authCache()
	m, _ := ac.macs.Get().(*macState)
	if m == nil {
		m = &macState{mac: hmac.New(sha256.New, d.installKey)}
	}
	m.in = append(m.in[:0], secret...)
	m.mac.Write(m.in)
	clear(m.in) // no copy of the secret stays in the pool
	var sum [sha256.Size]byte
	copy(sum[:], m.mac.Sum(m.out[:0]))
	m.mac.Reset()
	ac.macs.Put(m)
	return sum
}

// macState is a pooled keyed HMAC with its input and output buffers.
type macState struct {
	mac hash.Hash
	in  []byte // the secret (at most maxSecretLen bytes in Authenticate)
	out [sha256.Size]byte
}

// IssueToken creates a token and returns the full token string (shown once)
// and its metadata.
//
// EINVALID for a bad kind, name or TTL, or a team that is not a team node;
// ENOTFOUND for an unknown team.
func (d *DB) IssueToken(ctx context.Context, req IssueTokenRequest) (string, *Token, error) {
	if d.installKey == nil {
		return "", nil, &Error{Code: EINTERNAL, Message: "database has no install key (opened read-only?)"}
	}
	if req.TTL < 0 {
		return "", nil, &Error{Code: EINVALID, Field: "ttl", Message: "ttl must not be negative"}
	}
	if len(req.Name) > maxTokenNameLen {
		return "", nil, &Error{Code: EINVALID, Field: "name", Message: "name must be at most 100 characters"}
	}
	for _, r := range req.Name {
		if !unicode.IsPrint(r) {
			return "", nil, &Error{Code: EINVALID, Field: "name", Message: "name must be printable text"}
		}
	}
	var perms []string
	switch req.Kind {
	case TokenAdmin:
		if req.Team != "" {
			return "", nil, &Error{Code: EINVALID, Field: "team", Message: "an admin token has no team"}
		}
		perms = []string{PermAdminRead, PermAdminWrite, PermTeamRead, PermTeamWrite}
	case TokenTeam:
		if req.Team == "" {
			return "", nil, &Error{Code: EINVALID, Field: "team", Message: "a team token needs a team"}
		}
		perms = []string{PermTeamRead}
		if req.Write {
			perms = append(perms, PermTeamWrite)
		}
	default:
		return "", nil, &Error{Code: EINVALID, Field: "kind", Message: "kind must be team or admin, not " + quoteShort(req.Kind)}
	}

	raw := make([]byte, secretBytes)
	if _, err := rand.Read(raw); err != nil {
		return "", nil, &Error{Code: EINTERNAL, Err: err}
	}
	secret := secretEncoding.EncodeToString(raw)
	now := d.now().UTC()
	rec := &tokenRecord{
		Kind:        req.Kind,
		Team:        req.Team,
		Name:        req.Name,
		Permissions: perms,
		CreatedAt:   now,
	}
	sum := d.hashSecret(secret)
	rec.Hash = sum[:]
	if req.TTL > 0 {
		exp := now.Add(req.TTL)
		rec.ExpiresAt = &exp
	}
	err := d.update(ctx, func(tx *bolt.Tx) error {
		if req.Kind == TokenTeam {
			n, err := findNode(tx, req.Team)
			if err != nil {
				return &Error{Code: ENOTFOUND, Field: "team", Message: "team " + quoteShort(req.Team) + " not found"}
			}
			if n.Kind != KindTeam {
				return &Error{Code: EINVALID, Field: "team", Message: quoteShort(req.Team) + " is a " + n.Kind + ", not a team"}
			}
		}
		tokens := tx.Bucket(bucketTokens)
		for {
			id, err := newTokenID()
			if err != nil {
				return err
			}
			if tokens.Get([]byte(id)) == nil {
				rec.ID = id
				break
			}
		}
		if err := putJSON(tokens, []byte(rec.ID), rec); err != nil {
			return err
		}
		return tx.Bucket(bucketTokensByHash).Put(rec.Hash, []byte(rec.ID))
	})
	if err != nil {
		return "", nil, err
	}
	prefix := rec.ID
	if req.Kind == TokenAdmin {
		prefix = AdminTokenPrefix
	}
	return prefix + "." + secret, rec.token(), nil
}

func newTokenID() (string, error) {
	raw := make([]byte, tokenIDRandomLen*5/8)
	if _, err := rand.Read(raw); err != nil {
		return "", err
	}
	return TokenIDPrefix + strings.ToLower(idEncoding.EncodeToString(raw)), nil
}

// validTokenID reports whether id has the form of a token id.
func validTokenID(id string) bool {
	if len(id) != len(TokenIDPrefix)+tokenIDRandomLen || !strings.HasPrefix(id, TokenIDPrefix) {
		return false
	}
	for _, c := range id[len(TokenIDPrefix):] {
		if !(c >= 'a' && c <= 'z' || c >= '2' && c <= '7') {
			return false
		}
	}
	return true
}

// Authenticate checks a bearer token ("<token_id>.<secret>" or
// "admin.<secret>"; a leading "Bearer " is tolerated) and returns its
// metadata, a copy the caller owns. It runs at most one read transaction
// and no write: the last-used time is recorded in memory, at most once per
// lastUsedNoteInterval per token, and written in batches (see
// FlushLastUsed).
func (d *DB) Authenticate(ctx context.Context, bearer string) (*Token, error) {
	rec, now, err := d.authenticate(ctx, bearer)
	if err != nil {
		return nil, err
	}
	c := rec.copyOut()
	c.lastUsed = now
	c.tok.LastUsedAt = &c.lastUsed
	return &c.tok, nil
}

// TokenIdentity is what a request's authentication needs of a token: who
// it is and what it may do.
type TokenIdentity struct {
	ID, Kind, Team, Name string
	Permissions          []string
}

// IdentityAuthenticator is implemented by a TokenService that can
// authenticate a bearer token into storage the caller provides.
type IdentityAuthenticator interface {
	// AuthenticateIdentity checks bearer exactly as Authenticate does
	// (same checks, same errors, the same use recorded) and on success
	// writes the token's identity into dst, its permissions appended to
	// dst.Permissions[:0]: a copy the caller owns, in the caller's
	// storage when it is large enough. On an error dst is left as it was.
	AuthenticateIdentity(ctx context.Context, bearer string, dst *TokenIdentity) error
}

var _ IdentityAuthenticator = (*DB)(nil)

// AuthenticateIdentity implements IdentityAuthenticator: Authenticate
// without the copy of the whole token, for the API's every request.
func (d *DB) AuthenticateIdentity(ctx context.Context, bearer string, dst *TokenIdentity) error {
	rec, _, err := d.authenticate(ctx, bearer)
	if err != nil {
		return err
	}
	*dst = TokenIdentity{ID: rec.ID, Kind: rec.Kind, Team: rec.Team, Name: rec.Name,
		Permissions: append(dst.Permissions[:0], rec.Permissions...)}
	return nil
}

// authenticate is Authenticate up to the copy: the token's record (the
// cache's, never to be modified) and the time of the use it recorded.
func (d *DB) authenticate(ctx context.Context, bearer string) (*tokenRecord, time.Time, error) {
	bearer = strings.TrimSpace(bearer)
	if len(bearer) > 7 && strings.EqualFold(bearer[:7], "bearer ") {
		bearer = strings.TrimSpace(bearer[7:])
	}
	id, secret, ok := strings.Cut(bearer, ".")
	if !ok || secret == "" || len(secret) > maxSecretLen || d.installKey == nil {
		return nil, time.Time{}, errUnauthorized()
	}
	if id != AdminTokenPrefix && !validTokenID(id) {
		return nil, time.Time{}, errUnauthorized()
	}
	hash := d.hashSecret(secret)
	now := d.now().UTC()
	if e := d.authCache().get(&hash, now); e != nil && !d.closing() {
		return d.authorize(id, &hash, e.rec, now, e)
	}
	if err := ctx.Err(); err != nil {
		return nil, time.Time{}, err
	}
	rec, e, err := d.readToken(ctx, id, hash, now)
	if err != nil {
		return nil, time.Time{}, err
	}
	return d.authorize(id, &hash, rec, now, e)
}

// readToken reads the record for a secret's hash that is not in the
// cache. Only a record whose secret checked out is cached, and only if no
// revocation happened since the read began (see RevokeToken); the cache
// entry is returned (nil when not cached).
func (d *DB) readToken(ctx context.Context, id string, hash [sha256.Size]byte, now time.Time) (*tokenRecord, *authEntry, error) {
	ac := d.authCache()
	gen := ac.generation()
	rec := &tokenRecord{}
	err := d.view(ctx, func(tx *bolt.Tx) error {
		key := id
		if id == AdminTokenPrefix {
			ref := tx.Bucket(bucketTokensByHash).Get(hash[:])
			if ref == nil {
				return errUnauthorized()
			}
			key = string(ref)
		}
		found, err := getJSON(tx.Bucket(bucketTokens), []byte(key), rec)
		if err != nil {
			return err
		}
		if !found {
			return errUnauthorized()
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	var e *authEntry
	if subtle.ConstantTimeCompare(rec.Hash, hash[:]) == 1 && rec.RevokedAt == nil {
		e = ac.put(hash, rec, gen, now)
	}
	return rec, e, nil
}

// authorize finishes Authenticate for the record found for the secret's
// hash: constant-time hash comparison, the id part matching the record,
// revocation, then expiry (token_expired only once the secret checked out).
// e is the record's cache entry, nil if it is not cached.
// It returns rec and now on success.
func (d *DB) authorize(id string, hash *[sha256.Size]byte, rec *tokenRecord, now time.Time, e *authEntry) (*tokenRecord, time.Time, error) {
	if subtle.ConstantTimeCompare(rec.Hash, hash[:]) != 1 {
		return nil, time.Time{}, errUnauthorized()
	}
	if id == AdminTokenPrefix {
		if rec.Kind != TokenAdmin {
			return nil, time.Time{}, errUnauthorized()
		}
	} else if rec.Kind == TokenAdmin || rec.ID != id {
		return nil, time.Time{}, errUnauthorized()
	}
	if rec.RevokedAt != nil {
		return nil, time.Time{}, errUnauthorized()
	}
	if rec.ExpiresAt != nil && !now.Before(*rec.ExpiresAt) {
		return nil, time.Time{}, &Error{Code: ETOKENEXPIRED, Message: "token has expired"}
	}
	if e == nil || e.note(now) {
		d.touch(rec.ID, now)
	}
	return rec, now, nil
}

// Authentication cache.
//
// Every API request authenticates, and reading the token record (a bbolt
// read transaction and a JSON decode) was about 40 % of an authenticated
// GET /auth/me. The cache maps the secret's keyed hash (HMAC under the
// install key: never the secret) to the decoded record of a token whose
// secret checked out. Each hit still compares the hash in constant time,
// checks that the id part names that record, and checks expiry against
// the clock, so token_expired is exact. RevokeToken empties the cache and
// bumps its generation after its transaction commits, and a record read
// before a revocation is never cached after it, so revocation is effective
// on the very next request in this process. Entries also expire after
// authCacheTTL: the file is locked by the running server, so no other
// process can revoke through it, but the TTL bounds staleness should that
// ever change (for example a restore swapping the file).
//
// An entry also remembers when it last noted a use of its token: a token
// used many times a second takes the lock of the last-used notes once per
// lastUsedNoteInterval, not on every request. The note is what ListTokens
// shows and FlushLastUsed writes (at most once a minute per token), so
// last_used_at is exact to within that interval.
const (
	authCacheTTL         = 10 * time.Second
	authCacheMax         = 10000 // entries; the cache is emptied when full
	lastUsedNoteInterval = time.Second
)

type authCache struct {
	macs    sync.Pool // of *macState: HMAC-SHA256 under the install key
	mu      sync.RWMutex
	gen     uint64
	entries map[[sha256.Size]byte]*authEntry
}

type authEntry struct {
	rec     *tokenRecord // never modified once cached
	expires time.Time
	noted   atomic.Int64 // Unix nanoseconds of the last use noted through this entry; 0 for none
}

// note reports whether a use at now is to be noted, and records it: the
// first use through the entry, the first after lastUsedNoteInterval, or
// one dated before the last noted (a clock set back).
func (e *authEntry) note(now time.Time) bool {
	n := now.UnixNano()
	last := e.noted.Load()
	if last != 0 && n >= last && n-last < int64(lastUsedNoteInterval) {
		return false
	}
	e.noted.Store(n)
	return true
}

// authCache returns d's cache of verified token records, created on first
// use.
func (d *DB) authCache() *authCache {
	d.authOnce.Do(func() {
		d.auth = &authCache{entries: map[[sha256.Size]byte]*authEntry{}}
	})
	return d.auth
}

// get returns the live entry for hash, or nil.
func (c *authCache) get(hash *[sha256.Size]byte, now time.Time) *authEntry {
	c.mu.RLock()
	e := c.entries[*hash]
	c.mu.RUnlock()
	if e == nil || !now.Before(e.expires) {
		return nil
	}
	return e
}

func (c *authCache) generation() uint64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.gen
}

// put caches rec unless the cache was invalidated since gen was read, and
// returns its entry (nil when not cached).
func (c *authCache) put(hash [sha256.Size]byte, rec *tokenRecord, gen uint64, now time.Time) *authEntry {
	e := &authEntry{rec: rec, expires: now.Add(authCacheTTL)}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return nil
	}
	if len(c.entries) >= authCacheMax {
		clear(c.entries)
	}
	c.entries[hash] = e
	return e
}

// invalidate empties the cache and moves its generation on.
func (c *authCache) invalidate() {
	c.mu.Lock()
	c.gen++
	clear(c.entries)
	c.mu.Unlock()
}

// touch records a use of token id in memory.
func (d *DB) touch(id string, now time.Time) {
	d.mu.Lock()
	d.lastUsed[id] = now
	d.mu.Unlock()
}

// flushLoop writes recorded last-used times every LastUsedFlush.
func (d *DB) flushLoop() {
	defer close(d.flushDone)
	t := time.NewTicker(d.opts.LastUsedFlush)
	defer t.Stop()
	for {
		select {
		case <-d.stopFlush:
			return
		case <-t.C:
			if err := d.FlushLastUsed(); err != nil {
				d.logf("flushing token last-used times", "error", err)
			}
		}
	}
}

// FlushLastUsed writes recorded token last-used times in one transaction.
// A token's time is written at most once per minute (plus once at Close),
// whatever its request rate.
func (d *DB) FlushLastUsed() error {
	d.mu.Lock()
	pending := make(map[string]time.Time, len(d.lastUsed))
	for id, t := range d.lastUsed {
		if w, ok := d.lastWritten[id]; ok && t.Sub(w) < time.Minute && !d.closing() {
			continue // written less than a minute ago; keep it pending
		}
		pending[id] = t
		delete(d.lastUsed, id)
	}
	d.mu.Unlock()
	if len(pending) == 0 {
		return nil
	}
	err := d.bolt.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketTokens)
		for id, t := range pending {
			var rec tokenRecord
			ok, err := getJSON(b, []byte(id), &rec)
			if err != nil {
				return err
			}
			if !ok || (rec.LastUsedAt != nil && !t.After(*rec.LastUsedAt)) {
				continue
			}
			t := t
			rec.LastUsedAt = &t
			if err := putJSON(b, []byte(id), &rec); err != nil {
				return err
			}
		}
		return nil
	})
	d.mu.Lock()
	defer d.mu.Unlock()
	if err != nil {
		// Put them back so a later flush retries.
		for id, t := range pending {
			if cur, ok := d.lastUsed[id]; !ok || t.After(cur) {
				d.lastUsed[id] = t
			}
		}
		return boltError(err)
	}
	for id, t := range pending {
		d.lastWritten[id] = t
	}
	return nil
}

// closing reports whether Close has begun (the flush loop is stopped);
// then every pending time is written regardless of the throttle.
func (d *DB) closing() bool {
	select {
	case <-d.stopFlush:
		return true
	default:
		return false
	}
}

// ListTokens returns every token (revoked and expired included), oldest
// first, with last-used times that are not yet written merged in. Hashes
// are not returned.
func (d *DB) ListTokens(ctx context.Context) ([]*Token, error) {
	var out []*Token
	err := d.view(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketTokens)
		return b.ForEach(func(k, _ []byte) error {
			var rec tokenRecord
			if _, err := getJSON(b, k, &rec); err != nil {
				return err
			}
			t := rec.token()
			t.Hash = nil
			out = append(out, t)
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	for _, t := range out {
		if lu, ok := d.lastUsed[t.ID]; ok && (t.LastUsedAt == nil || lu.After(*t.LastUsedAt)) {
			lu := lu
			t.LastUsedAt = &lu
		}
	}
	d.mu.Unlock()
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// RevokeToken revokes token id at once: the next Authenticate fails.
// Revoking a revoked token succeeds and keeps the first revocation time.
// ENOTFOUND for an unknown id.
func (d *DB) RevokeToken(ctx context.Context, id string) error {
	// Invalidate after the commit (and also on failure, which costs
	// nothing): a concurrent Authenticate that read the record before the
	// commit sees the generation move and does not cache it.
	defer d.authCache().invalidate()
	return d.update(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketTokens)
		var rec tokenRecord
		ok, err := getJSON(b, []byte(id), &rec)
		if err != nil {
			return err
		}
		if !ok {
			return Errorf(ENOTFOUND, "token %s not found", quoteShort(id))
		}
		if rec.RevokedAt != nil {
			return nil
		}
		now := d.now().UTC()
		rec.RevokedAt = &now
		return putJSON(b, []byte(id), &rec)
	})
}
