// Package db owns rootcause's domain vocabulary (nodes, tokens, configs,
// investigations, deliveries, the Error type) and its storage: a bbolt file
// behind small service interfaces that a replicated store could implement.
package db

import (
	"context"
	"time"
)

// Node kinds of the organization tree.
const (
	KindOrg   = "org"
	KindGroup = "group"
	KindTeam  = "team"
)

// Node is a level of the organization tree. Names are unique in the org;
// a team's name is its team_node_id.
type Node struct {
	Name      string    `json:"name"`
	Parent    string    `json:"parent,omitempty"` // empty for the org root
	Kind      string    `json:"kind"`
	Version   int64     `json:"version"` // config version of this node
	CreatedAt time.Time `json:"created_at"`
}

// Permissions.
const (
	PermTeamRead   = "team:read"
	PermTeamWrite  = "team:write"
	PermAdminRead  = "admin:read"
	PermAdminWrite = "admin:write"
)

// Token kinds.
const (
	TokenTeam  = "team"
	TokenAdmin = "admin"
)

// Token is an API token's metadata. The secret is never stored: only
// Hash, a keyed hash (HMAC-SHA256 with the per-install key) of it.
type Token struct {
	ID          string     `json:"token_id"` // the public accessor
	Kind        string     `json:"kind"`     // team or admin
	Team        string     `json:"team,omitempty"`
	Name        string     `json:"name,omitempty"`
	Permissions []string   `json:"permissions"`
	CreatedAt   time.Time  `json:"created_at"`
	ExpiresAt   *time.Time `json:"expires_at,omitempty"`
	LastUsedAt  *time.Time `json:"last_used_at,omitempty"`
	RevokedAt   *time.Time `json:"revoked_at,omitempty"`
	Hash        []byte     `json:"-"`
}

// IssueTokenRequest describes a token to create.
type IssueTokenRequest struct {
	Kind  string        // team or admin
	Team  string        // for team tokens: an existing team node
	Write bool          // team tokens: grant team:write (admin tokens always have admin:write)
	Name  string        // label
	TTL   time.Duration // 0: no expiry
}

// NodeService manages the organization tree.
//
// CreateNode returns EINVALID for a bad name or kind, ENOTFOUND for an
// unknown parent, ECONFLICT for a duplicate name, and EINVALID when the
// kind does not fit under the parent (teams under the org or a group,
// groups under the org or a group; nothing under a team).
type NodeService interface {
	CreateNode(ctx context.Context, n Node) (*Node, error)
	FindNode(ctx context.Context, name string) (*Node, error) // ENOTFOUND
	ListNodes(ctx context.Context) ([]*Node, error)           // root first, then by name
	// Lineage returns the path from the org root to name, root first.
	Lineage(ctx context.Context, name string) ([]*Node, error)
	OrgName(ctx context.Context) (string, error)
}

// TokenService issues, checks and revokes tokens.
//
// Authenticate returns EUNAUTHORIZED for anything that does not match a
// live token (malformed, unknown id, wrong secret, revoked) and
// ETOKENEXPIRED only when the secret matched an expired token. It compares
// in constant time and records the last-used time. The *Token it returns
// is the caller's: it shares nothing with the service's own state.
type TokenService interface {
	IssueToken(ctx context.Context, req IssueTokenRequest) (secret string, tok *Token, err error)
	Authenticate(ctx context.Context, bearer string) (*Token, error)
	ListTokens(ctx context.Context) ([]*Token, error)
	RevokeToken(ctx context.Context, id string) error // ENOTFOUND
}
