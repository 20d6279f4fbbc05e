package db

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"

	bolt "go.etcd.io/bbolt"
)

var _ NodeService = (*DB)(nil)

// nameRE is the form of node names: lower case letters, digits, '-' and
// '_', starting with a letter or digit, at most 63 characters.
var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

// ValidateName returns EINVALID unless name is a valid node name.
func ValidateName(name string) error {
	if name == "" {
		return &Error{Code: EINVALID, Field: "name", Message: "name is required"}
	}
	if !nameRE.MatchString(name) {
		return &Error{Code: EINVALID, Field: "name", Message: "invalid name " + quoteShort(name) +
			": use 1 to 63 lower-case letters, digits, '-' or '_', starting with a letter or digit"}
	}
	return nil
}

// quoteShort quotes s for an error message, cutting long input.
func quoteShort(s string) string {
	if len(s) > 70 {
		s = s[:70] + "..."
	}
	return `"` + s + `"`
}

// EnsureOrg creates the org root node name when the tree is empty and
// returns the org root. When an org already exists it is returned as is,
// whatever name is passed.
func (d *DB) EnsureOrg(ctx context.Context, name string) (*Node, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	var out *Node
	err := d.update(ctx, func(tx *bolt.Tx) error {
		meta, nodes := tx.Bucket(bucketMeta), tx.Bucket(bucketNodes)
		if org := meta.Get(metaOrg); org != nil {
			var n Node
			if _, err := getJSON(nodes, org, &n); err != nil {
				return err
			}
			out = &n
			return nil
		}
		n := Node{Name: name, Kind: KindOrg, CreatedAt: d.now().UTC()}
		if err := putJSON(nodes, []byte(name), n); err != nil {
			return err
		}
		out = &n
		return meta.Put(metaOrg, []byte(name))
	})
	return out, err
}

// CreateNode adds a group or team under an existing org or group node.
func (d *DB) CreateNode(ctx context.Context, n Node) (*Node, error) {
	if err := ValidateName(n.Name); err != nil {
		return nil, err
	}
	if n.Kind != KindGroup && n.Kind != KindTeam {
		return nil, &Error{Code: EINVALID, Field: "kind", Message: "kind must be group or team, not " + quoteShort(n.Kind)}
	}
	if n.Parent == "" {
		return nil, &Error{Code: EINVALID, Field: "parent", Message: "parent is required"}
	}
	out := &Node{Name: n.Name, Parent: n.Parent, Kind: n.Kind}
	err := d.update(ctx, func(tx *bolt.Tx) error {
		nodes := tx.Bucket(bucketNodes)
		if nodes.Get([]byte(n.Name)) != nil {
			return Errorf(ECONFLICT, "node %q already exists", n.Name)
		}
		var parent Node
		ok, err := getJSON(nodes, []byte(n.Parent), &parent)
		if err != nil {
			return err
		}
		if !ok {
			return &Error{Code: ENOTFOUND, Field: "parent", Message: "parent node " + quoteShort(n.Parent) + " not found"}
		}
		if parent.Kind == KindTeam {
			return &Error{Code: EINVALID, Field: "parent", Message: "parent " + quoteShort(n.Parent) + " is a team; nothing can be created under a team"}
		}
		out.CreatedAt = d.now().UTC()
		return putJSON(nodes, []byte(n.Name), out)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// FindNode returns the node name; ENOTFOUND when it does not exist.
func (d *DB) FindNode(ctx context.Context, name string) (*Node, error) {
	var n *Node
	err := d.view(ctx, func(tx *bolt.Tx) error {
		var err error
		n, err = findNode(tx, name)
		return err
	})
	return n, err
}

func findNode(tx *bolt.Tx, name string) (*Node, error) {
	var n Node
	ok, err := getJSON(tx.Bucket(bucketNodes), []byte(name), &n)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, Errorf(ENOTFOUND, "node %s not found", quoteShort(name))
	}
	return &n, nil
}

// ListNodes returns every node: the org root first, then by name.
func (d *DB) ListNodes(ctx context.Context) ([]*Node, error) {
	var out []*Node
	err := d.view(ctx, func(tx *bolt.Tx) error {
		return tx.Bucket(bucketNodes).ForEach(func(k, v []byte) error {
			var n Node
			if err := json.Unmarshal(v, &n); err != nil {
				return fmt.Errorf("decoding node %s: %w", k, err)
			}
			out = append(out, &n)
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	// Keys are already in name order; move the root to the front.
	sort.SliceStable(out, func(i, j int) bool {
		return out[i].Kind == KindOrg && out[j].Kind != KindOrg
	})
	return out, nil
}

// Lineage returns the path from the org root to name, root first.
func (d *DB) Lineage(ctx context.Context, name string) ([]*Node, error) {
	var out []*Node
	err := d.view(ctx, func(tx *bolt.Tx) error {
		seen := map[string]bool{}
		for cur := name; ; {
			n, err := findNode(tx, cur)
			if err != nil {
				if cur != name {
					return &Error{Code: EINTERNAL, Err: err}
				}
				return err
			}
			out = append(out, n)
			seen[cur] = true
			if n.Parent == "" {
				break
			}
			if seen[n.Parent] {
				return &Error{Code: EINTERNAL, Message: "organization tree has a cycle at " + quoteShort(n.Parent)}
			}
			cur = n.Parent
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}

// OrgName returns the org root's name; ENOTFOUND before EnsureOrg.
func (d *DB) OrgName(ctx context.Context) (string, error) {
	var name string
	err := d.view(ctx, func(tx *bolt.Tx) error {
		org := tx.Bucket(bucketMeta).Get(metaOrg)
		if org == nil {
			return Errorf(ENOTFOUND, "the organization has not been created yet")
		}
		name = string(org)
		return nil
	})
	return name, err
}
