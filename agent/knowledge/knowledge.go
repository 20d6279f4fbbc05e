// Package knowledge is the team's searchable knowledge: Markdown runbooks
// split into sections at their headings, indexed for BM25 ranking (k1 1.2,
// b 0.75) over lower-case word tokens with light suffix stemming. It backs
// evidence.Knowledge for bundles (runbooks/) and live teams
// (knowledge_source: local runbook folders and GitHub repositories).
package knowledge

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path"
	"sort"
	"strings"
	"unicode"

	"github.com/rootcause/rootcause/agent/evidence"
)

// BM25 parameters.
const (
	K1 = 1.2
	B  = 0.75
)

// Limits of what is indexed.
const (
	MaxDocBytes  = 1 << 20 // larger documents are skipped
	MaxDocs      = 5000    // documents read from one source
	MaxTextChars = 2000    // passage text returned per hit
	DefaultLimit = 5
	MaxLimit     = 50
)

// Section is one indexed passage: a heading and the text under it.
type Section struct {
	Title    string // document title › heading
	Location string // path#heading-slug
	Text     string
	terms    map[string]int
	length   int
}

// Index is a BM25 index of sections. Build it with Add; it is safe for
// concurrent Search once built.
type Index struct {
	sections []*Section
	df       map[string]int
	totalLen int
}

// NewIndex returns an empty index.
func NewIndex() *Index { return &Index{df: map[string]int{}} }

// Len returns the number of sections indexed.
func (ix *Index) Len() int { return len(ix.sections) }

// AddMarkdown splits a Markdown document at its headings (ATX "#" headings,
// outside fenced code) and indexes each section. location is the document's
// path or URL; each section's Location is location#slug.
func (ix *Index) AddMarkdown(location, text string) {
	for _, s := range SplitMarkdown(location, text) {
		ix.add(s)
	}
}

func (ix *Index) add(s *Section) {
	toks := Tokenize(s.Title + "\n" + s.Text)
	if len(toks) == 0 {
		return
	}
	s.terms = map[string]int{}
	for _, t := range toks {
		s.terms[t]++
	}
	s.length = len(toks)
	for t := range s.terms {
		ix.df[t]++
	}
	ix.totalLen += s.length
	ix.sections = append(ix.sections, s)
}

// SplitMarkdown splits text into sections at headings. Text before the
// first heading is a section titled by the document's file name.
func SplitMarkdown(location, text string) []*Section {
	docTitle := strings.TrimSuffix(path.Base(location), path.Ext(location))
	var (
		out     []*Section
		title   = docTitle
		slug    = ""
		body    strings.Builder
		inFence bool
		h1      string
	)
	flush := func() {
		t := strings.TrimSpace(body.String())
		if t != "" || slug != "" {
			loc := location
			if slug != "" {
				loc += "#" + slug
			}
			out = append(out, &Section{Title: title, Location: loc, Text: t})
		}
		body.Reset()
	}
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			inFence = !inFence
		}
		if !inFence && strings.HasPrefix(line, "#") {
			level := len(line) - len(strings.TrimLeft(line, "#"))
			rest := line[level:]
			if level <= 6 && (rest == "" || rest[0] == ' ' || rest[0] == '\t') {
				flush()
				heading := strings.TrimSpace(strings.TrimRight(strings.TrimSpace(rest), "#"))
				slug = Slug(heading)
				if level == 1 {
					h1 = heading
					title = heading
				} else if h1 != "" {
					title = h1 + " › " + heading
				} else {
					title = docTitle + " › " + heading
				}
				continue
			}
		}
		body.WriteString(line)
		body.WriteByte('\n')
	}
	flush()
	return out
}

// Slug makes a GitHub-style heading anchor: lower case, spaces to hyphens,
// punctuation dropped.
func Slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '-':
			b.WriteRune(r)
		case r == ' ' || r == '\t':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// Tokenize splits text into lower-case word tokens, drops stop words and
// applies light stemming.
func Tokenize(text string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		if len(w) < 2 || stopWords[w] {
			continue
		}
		out = append(out, Stem(w))
	}
	return out
}

var stopWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields("a an and are as at be but by for from has have if in into is it its of on or that the their then there these this to was were will with when what which how do does not no can you your we our") {
		stopWords[w] = true
	}
}

// Stem removes common English inflections (a light, conservative
// stemmer): "restarts" → "restart", "killed" → "kill", "limits" → "limit",
// "crashes" → "crash", "retries" → "retry".
func Stem(w string) string {
	n := len(w)
	switch {
	case n > 4 && strings.HasSuffix(w, "ies"):
		return w[:n-3] + "y"
	case n > 5 && (strings.HasSuffix(w, "sses") || strings.HasSuffix(w, "shes") || strings.HasSuffix(w, "ches") || strings.HasSuffix(w, "xes")):
		return w[:n-2]
	case n > 5 && strings.HasSuffix(w, "ing"):
		return w[:n-3]
	case n > 4 && strings.HasSuffix(w, "ed"):
		return w[:n-2]
	case n > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		return w[:n-1]
	}
	return w
}

// Search ranks sections by BM25 against query and returns up to limit
// passages with a positive score, best first.
func (ix *Index) Search(ctx context.Context, query string, limit int) ([]evidence.Passage, error) {
	if limit <= 0 {
		limit = DefaultLimit
	}
	limit = min(limit, MaxLimit)
	q := Tokenize(query)
	out := []evidence.Passage{}
	if len(q) == 0 || len(ix.sections) == 0 {
		return out, nil
	}
	n := float64(len(ix.sections))
	avg := float64(ix.totalLen) / n
	type hit struct {
		s     *Section
		score float64
	}
	var hits []hit
	for _, s := range ix.sections {
		score := 0.0
		for _, t := range q {
			tf := float64(s.terms[t])
			if tf == 0 {
				continue
			}
			df := float64(ix.df[t])
			idf := math.Log(1 + (n-df+0.5)/(df+0.5))
			score += idf * tf * (K1 + 1) / (tf + K1*(1-B+B*float64(s.length)/avg))
		}
		if score > 0 {
			hits = append(hits, hit{s, score})
		}
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].score > hits[j].score })
	for _, h := range hits[:min(limit, len(hits))] {
		text := h.s.Text
		if len(text) > MaxTextChars {
			text = strings.ToValidUTF8(text[:MaxTextChars], "") + " …"
		}
		out = append(out, evidence.Passage{Title: h.s.Title, Location: h.s.Location, Text: text, Score: math.Round(h.score*1000) / 1000})
	}
	return out, nil
}

// AddFS indexes every *.md file under root in fsys (recursively, skipping
// hidden directories, at most MaxDocs files of at most MaxDocBytes each).
// prefix is prepended to each file's path (relative to root) to form its
// location. It returns the number of documents read.
func (ix *Index) AddFS(fsys fs.FS, root, prefix string) (int, error) {
	n := 0
	err := fs.WalkDir(fsys, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root {
				return err
			}
			return nil
		}
		if d.IsDir() {
			if p != root && strings.HasPrefix(d.Name(), ".") {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !strings.EqualFold(path.Ext(p), ".md") {
			return nil
		}
		if n >= MaxDocs {
			return errFull
		}
		info, err := d.Info()
		if err != nil || info.Size() > MaxDocBytes {
			return nil
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return nil
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p, root), "/")
		if root == "." {
			rel = p
		}
		ix.AddMarkdown(prefix+rel, string(data))
		n++
		return nil
	})
	if errors.Is(err, errFull) {
		err = nil
	}
	if err != nil {
		return n, fmt.Errorf("reading runbooks in %s: %w", root, err)
	}
	return n, nil
}

var errFull = errors.New("too many documents")
