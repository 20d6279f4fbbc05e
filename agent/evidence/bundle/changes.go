package bundle

import "github.com/rootcause/rootcause/agent/evidence"

// changes returns the bundle's Changes source, or nil when the bundle has none.
// (Being built; see docs/architecture.md.)
func (b *Bundle) changes() evidence.Changes { return nil }
