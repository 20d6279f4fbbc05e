package bundle

import (
	"context"
	"sync"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/knowledge"
)

// knowledge returns the bundle's Knowledge source, or nil when the bundle
// has no runbooks/ directory. Every runbooks/**/*.md file is split into
// sections at its headings and ranked with BM25; a passage's Location is
// runbooks/<path>#<heading-slug>. The index is built on first use.
func (b *Bundle) knowledge() evidence.Knowledge {
	if !exists(b.FS, "runbooks") {
		return nil
	}
	return &bundleKnowledge{b: b}
}

type bundleKnowledge struct {
	b    *Bundle
	once sync.Once
	ix   *knowledge.Index
	err  error
}

func (k *bundleKnowledge) Search(ctx context.Context, query string, limit int) ([]evidence.Passage, error) {
	k.once.Do(func() {
		k.ix = knowledge.NewIndex()
		if _, err := k.ix.AddFS(k.b.FS, "runbooks", "runbooks/"); err != nil {
			k.err = &evidence.Error{Source: "knowledge", Code: evidence.CodeMalformed, File: "runbooks", Err: err}
		}
	})
	if k.err != nil {
		return nil, k.err
	}
	return k.ix.Search(ctx, query, limit)
}
