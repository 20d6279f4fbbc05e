// Package logfiles is the live Logs backend over files on the host: the
// admin-only globs of tools.logs.paths. It scans them with the same
// semantics as a bundle's logs/ (bundle.ScanLog): one event a line, each
// starting with an RFC 3339 timestamp, continuation lines inheriting the
// previous time, bounded memory whatever the size. Rotated files next to a
// log (app.log.1, app.log.2.gz, ...) are read first, oldest first, so a
// source reads in time order across rotation; .gz files are decompressed
// as a stream.
package logfiles

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/bundle"
	"github.com/rootcause/rootcause/secretref"
)

// MaxRotated is the number of rotated generations read per log.
const MaxRotated = 9

// New returns the Logs of tools.logs settings {enabled, paths}, or a nil
// interface when logs are disabled or no path is set. tokens and res are
// unused (host logs need no credentials) and accepted for a uniform
// constructor signature.
func New(ctx context.Context, settings map[string]any, tokens map[string]string, res secretref.Resolver) (evidence.Logs, error) {
	if settings == nil {
		return nil, nil
	}
	if en, ok := settings["enabled"].(bool); ok && !en {
		return nil, nil
	}
	var globs []string
	switch v := settings["paths"].(type) {
	case nil:
	case []string:
		globs = v
	case []any:
		for i, p := range v {
			s, ok := p.(string)
			if !ok {
				return nil, fmt.Errorf("tools.logs.paths[%d]: want a string", i)
			}
			globs = append(globs, s)
		}
	default:
		return nil, fmt.Errorf("tools.logs.paths: want a list of paths or globs")
	}
	for _, g := range globs {
		if !filepath.IsAbs(g) {
			return nil, fmt.Errorf("tools.logs.paths: %q must be an absolute path", g)
		}
		if _, err := filepath.Match(g, "/"); err != nil {
			return nil, fmt.Errorf("tools.logs.paths: %q: %v", g, err)
		}
	}
	if len(globs) == 0 {
		return nil, nil
	}
	return &Files{Globs: globs}, nil
}

// Files reads logs matching Globs. Globs are expanded at each call, so
// files that appear later are seen.
type Files struct {
	Globs []string
}

// source is one log: its current file and rotated generations.
type source struct {
	name  string
	files []string // oldest first
}

func (f *Files) sources() (map[string]*source, error) {
	paths := map[string]bool{}
	for _, g := range f.Globs {
		m, err := filepath.Glob(g)
		if err != nil {
			return nil, evidence.Errorf("logs", evidence.CodeInvalid, "glob %q: %v", g, err)
		}
		for _, p := range m {
			if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && rotation(p) < 0 {
				paths[p] = true
			}
		}
	}
	// Name a source by its base name without .log; on a clash, by full path.
	byBase := map[string][]string{}
	for p := range paths {
		byBase[strings.TrimSuffix(filepath.Base(p), ".log")] = append(byBase[strings.TrimSuffix(filepath.Base(p), ".log")], p)
	}
	out := map[string]*source{}
	for base, ps := range byBase {
		for _, p := range ps {
			name := base
			if len(ps) > 1 {
				name = p
			}
			out[name] = &source{name: name, files: withRotated(p)}
		}
	}
	return out, nil
}

// rotation returns N for a rotated file "x.N" or "x.N.gz", else -1.
func rotation(p string) int {
	s := strings.TrimSuffix(p, ".gz")
	i := strings.LastIndexByte(s, '.')
	if i < 0 {
		return -1
	}
	n, err := strconv.Atoi(s[i+1:])
	if err != nil || n < 1 || n > 1000 {
		return -1
	}
	return n
}

func withRotated(p string) []string {
	var files []string
	for n := MaxRotated; n >= 1; n-- {
		for _, cand := range []string{fmt.Sprintf("%s.%d", p, n), fmt.Sprintf("%s.%d.gz", p, n)} {
			if st, err := os.Stat(cand); err == nil && st.Mode().IsRegular() {
				files = append(files, cand)
				break
			}
		}
	}
	return append(files, p)
}

// Sources lists the log source names, sorted.
func (f *Files) Sources(ctx context.Context) ([]string, error) {
	m, err := f.sources()
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(m))
	for n := range m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}

// Scan streams matching lines of q.Source (empty: every source).
func (f *Files) Scan(ctx context.Context, q evidence.LogQuery, fn func(evidence.LogLine) error) error {
	m, err := bundle.NewLogMatcher("logs", q)
	if err != nil {
		return err
	}
	srcs, err := f.sources()
	if err != nil {
		return err
	}
	var names []string
	if q.Source != "" {
		if _, ok := srcs[q.Source]; !ok {
			return evidence.Errorf("logs", evidence.CodeNotFound, "no log source %q (list_log_sources lists them)", q.Source)
		}
		names = []string{q.Source}
	} else {
		for n := range srcs {
			names = append(names, n)
		}
		sort.Strings(names)
	}
	for _, n := range names {
		for _, p := range srcs[n].files {
			err := scanFile(ctx, p, n, m, fn)
			if errors.Is(err, evidence.ErrStop) {
				return nil
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

func scanFile(ctx context.Context, p, name string, m *bundle.LogMatcher, fn func(evidence.LogLine) error) error {
	fh, err := os.Open(p)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil // rotated away between listing and reading
		}
		return &evidence.Error{Source: "logs", Code: evidence.CodeUnavailable, File: p, Err: err}
	}
	defer fh.Close()
	var r io.Reader = fh
	if strings.HasSuffix(p, ".gz") {
		gz, err := gzip.NewReader(fh)
		if err != nil {
			return &evidence.Error{Source: "logs", Code: evidence.CodeMalformed, File: p, Err: err}
		}
		defer gz.Close()
		r = gz
	}
	err = bundle.ScanLog(ctx, r, name, m, fn)
	var ee *evidence.Error
	if err != nil && !errors.Is(err, evidence.ErrStop) && !errors.As(err, &ee) && ctx.Err() == nil {
		return &evidence.Error{Source: "logs", Code: evidence.CodeUnavailable, File: p, Err: err}
	}
	return err
}
