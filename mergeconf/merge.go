// Package mergeconf holds the pure functions over configuration documents:
// the RFC 7396 JSON Merge Patch that both updates a node's own overrides and
// stacks the levels into the effective config (org root, then groups, then
// the team), dotted-path diffs for audit entries and change requests, and
// validation against the config schema (schema.json, served at
// /api/v1/config/schema).
//
// Documents are map[string]any as encoding/json decodes them with
// UseNumber: numbers are json.Number, so integers such as timeout keep their
// exact form and 1.0 can be told apart from 1. Use Decode to read one. The
// functions also accept float64 and Go integer types for numbers, so
// documents built in code work too. Nothing here imports storage, HTTP or
// the agent runtime.
package mergeconf

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"reflect"
)

// Decode parses data as one JSON object, numbers as json.Number. It rejects
// anything but a single object (null, arrays, trailing data).
func Decode(data []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("decoding config: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("decoding config: unexpected data after the object")
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("decoding config: must be a JSON object")
	}
	return m, nil
}

// MergePatch applies patch to target per RFC 7396 and returns the result:
// objects merge recursively, arrays and scalars replace, and a null member
// removes the key. Neither argument is modified and the result shares no
// maps or slices with them, so it may be cached or changed freely. A nil
// target is an empty object.
func MergePatch(target, patch map[string]any) map[string]any {
	out := make(map[string]any, len(target)+len(patch))
	for k, v := range target {
		out[k] = Clone(v)
	}
	for k, pv := range patch {
		if pv == nil {
			delete(out, k)
			continue
		}
		if pm, ok := pv.(map[string]any); ok {
			tm, _ := out[k].(map[string]any) // a non-object target becomes {}
			out[k] = mergeInto(tm, pm)
			continue
		}
		out[k] = Clone(pv)
	}
	return out
}

// mergeInto merges patch into t, which is already a private copy (or nil).
func mergeInto(t, patch map[string]any) map[string]any {
	if t == nil {
		t = make(map[string]any, len(patch))
	}
	for k, pv := range patch {
		if pv == nil {
			delete(t, k)
			continue
		}
		if pm, ok := pv.(map[string]any); ok {
			tm, _ := t[k].(map[string]any)
			t[k] = mergeInto(tm, pm)
			continue
		}
		t[k] = Clone(pv)
	}
	return t
}

// Effective merges the levels in order, root first: each level's document
// is a merge patch over the result of the levels above it. Stored level
// documents hold no nulls (a null in a PUT removes the key from that
// level's overrides, so the inherited value shows again); a null that is
// there anyway removes the key, as in MergePatch.
func Effective(levels ...map[string]any) map[string]any {
	out := map[string]any{}
	for _, l := range levels {
		out = mergeInto(out, l)
	}
	return out
}

// Clone returns a deep copy of a JSON value (objects and arrays are copied;
// scalars are immutable).
func Clone(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = Clone(e)
		}
		return m
	case []any:
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = Clone(e)
		}
		return s
	case []string: // built in code; keep it a JSON array
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = e
		}
		return s
	default:
		return v
	}
}

// Equal reports whether two JSON values are equal. Numbers compare by value
// whatever their Go type (json.Number "30", float64 30, int 30).
func Equal(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !Equal(xv, yv) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok {
			if ys, isStrs := b.([]string); isStrs {
				y = Clone(ys).([]any)
			} else {
				return false
			}
		}
		if len(x) != len(y) {
			return false
		}
		for i := range x {
			if !Equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case []string:
		return Equal(Clone(x), b)
	}
	if na, ok := number(a); ok {
		nb, ok := number(b)
		return ok && na.Cmp(nb) == 0
	}
	if _, ok := number(b); ok {
		return false
	}
	return reflect.DeepEqual(a, b)
}

// number returns v as an exact rational when v is a JSON number.
func number(v any) (*big.Rat, bool) {
	r := new(big.Rat)
	switch x := v.(type) {
	case json.Number:
		if _, ok := r.SetString(string(x)); !ok {
			return nil, false
		}
	case float64:
		if r.SetFloat64(x) == nil {
			return nil, false
		}
	case float32:
		if r.SetFloat64(float64(x)) == nil {
			return nil, false
		}
	case int:
		r.SetInt64(int64(x))
	case int64:
		r.SetInt64(x)
	case int32:
		r.SetInt64(int64(x))
	case uint64:
		r.SetUint64(x)
	default:
		return nil, false
	}
	return r, true
}
