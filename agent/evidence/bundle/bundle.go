// Package bundle reads incident bundles (contract section 5): directories of
// evidence captured from real systems, served through the evidence
// interfaces so that investigations run on them exactly as on live systems.
// A bundle is read through an fs.FS, so bundles embedded in the binary (the
// demo) and on disk are handled alike.
package bundle

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// Bundle is an opened incident bundle.
type Bundle struct {
	FS          fs.FS
	Name        string    // for messages: the directory path
	CapturedAt  time.Time // zero when bundle.json is absent
	Description string
}

// Meta is bundle.json.
type Meta struct {
	CapturedAt  string `json:"captured_at"`
	Description string `json:"description"`
}

// OpenDir opens the bundle in directory dir.
func OpenDir(dir string) (*Bundle, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("opening bundle: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("opening bundle: %s is not a directory", dir)
	}
	return Open(os.DirFS(dir), dir)
}

// Open opens the bundle rooted at fsys; name is used in messages.
func Open(fsys fs.FS, name string) (*Bundle, error) {
	b := &Bundle{FS: fsys, Name: name}
	data, err := fs.ReadFile(fsys, "bundle.json")
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("bundle %s: reading bundle.json: %w", name, err)
	default:
		var m Meta
		if err := json.Unmarshal(data, &m); err != nil {
			return nil, fmt.Errorf("bundle %s: bundle.json: %w", name, err)
		}
		if m.CapturedAt != "" {
			t, err := time.Parse(time.RFC3339, m.CapturedAt)
			if err != nil {
				return nil, fmt.Errorf("bundle %s: bundle.json: captured_at: %w", name, err)
			}
			b.CapturedAt = t.UTC()
		}
		b.Description = m.Description
	}
	return b, nil
}

// Sources returns the evidence sources of the bundle with the clock set to
// now (a scenario's now), or to captured_at when now is zero, or to the
// latest evidence when neither is known. Parts the bundle lacks are nil.
func (b *Bundle) Sources(now time.Time) *evidence.Sources {
	if now.IsZero() {
		now = b.CapturedAt
	}
	s := &evidence.Sources{}
	var kb *kubeBundle
	if k := b.kubernetes(); k != nil {
		s.Kubernetes = k
		kb, _ = k.(*kubeBundle)
	}
	if m := b.metrics(); m != nil {
		s.Metrics = m
	}
	if l := b.logs(); l != nil {
		s.Logs = l
	}
	if c := b.changes(kb); c != nil {
		s.Changes = c
	}
	if c := b.cloudwatch(); c != nil {
		s.CloudWatch = c
	}
	if c := b.code(); c != nil {
		s.Code = c
	}
	if k := b.knowledge(); k != nil {
		s.Knowledge = k
	}
	if t := b.traces(); t != nil {
		s.Traces = t
	}
	if a := b.alerts(); a != nil {
		s.Alerts = a
	}
	if now.IsZero() {
		now = time.Now().UTC()
	}
	s.Now = func() time.Time { return now }
	return s
}

func exists(fsys fs.FS, name string) bool {
	_, err := fs.Stat(fsys, name)
	return err == nil
}
