package mergeconf

import (
	"sort"
	"strings"
)

// Change is one changed leaf in a Diff: its value before and after. A side
// where the field is absent is nil (JSON null).
type Change struct {
	Old any `json:"old"`
	New any `json:"new"`
}

// Diff returns the changed leaves between two documents keyed by dotted path
// (agents.k8s_agent.timeout), the shape of an audit entry's diff and a
// change request's changes. Objects recurse; arrays and scalars are leaves,
// arrays compared whole. An object on one side facing an absent field on
// the other recurses, so each of its leaves is listed; an empty object there
// is itself a leaf. Keys are escaped as JoinPath does.
func Diff(old, new map[string]any) map[string]Change {
	out := map[string]Change{}
	diffInto(nil, old, new, func(path []string, c Change) { out[JoinPath(path...)] = c })
	return out
}

// ChangedFields returns the sorted paths of a diff.
func ChangedFields(diff map[string]Change) []string {
	out := make([]string, 0, len(diff))
	for p := range diff {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// diffInto walks two objects and calls emit for each changed leaf with its
// path as segments.
func diffInto(path []string, old, new map[string]any, emit func([]string, Change)) {
	keys := make(map[string]struct{}, len(old)+len(new))
	for k := range old {
		keys[k] = struct{}{}
	}
	for k := range new {
		keys[k] = struct{}{}
	}
	for k := range keys {
		ov, oin := old[k]
		nv, nin := new[k]
		p := append(path[:len(path):len(path)], k)
		om, oIsMap := ov.(map[string]any)
		nm, nIsMap := nv.(map[string]any)
		switch {
		case oIsMap && nIsMap:
			diffInto(p, om, nm, emit)
		case oIsMap && (!nin || nv == nil) && len(om) > 0:
			diffInto(p, om, nil, emit)
		case nIsMap && (!oin || ov == nil) && len(nm) > 0:
			diffInto(p, nil, nm, emit)
		case oin && nin && Equal(ov, nv):
		default:
			emit(p, Change{Old: Clone(ov), New: Clone(nv)})
		}
	}
}

// JoinPath joins keys into a dotted path. A key's backslashes are written
// as \\ and its dots as \. so that the path splits back unambiguously:
// JoinPath("tokens_vault_path", "api.example.com") is
// `tokens_vault_path.api\.example\.com`.
func JoinPath(keys ...string) string {
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte('.')
		}
		for _, c := range []byte(k) {
			if c == '.' || c == '\\' {
				b.WriteByte('\\')
			}
			b.WriteByte(c)
		}
	}
	return b.String()
}

// SplitPath splits a dotted path written by JoinPath back into keys.
func SplitPath(path string) []string {
	var keys []string
	var cur strings.Builder
	for i := 0; i < len(path); i++ {
		c := path[i]
		switch {
		case c == '\\' && i+1 < len(path):
			i++
			cur.WriteByte(path[i])
		case c == '.':
			keys = append(keys, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
	}
	return append(keys, cur.String())
}

// WalkChanges calls fn for each changed leaf between two documents with its
// path as segments, in no particular order (see Diff).
func WalkChanges(old, new map[string]any, fn func(keys []string, c Change)) {
	diffInto(nil, old, new, fn)
}
