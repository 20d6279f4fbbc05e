package bundle

import "github.com/rootcause/rootcause/agent/evidence"

// logs returns the bundle's Logs source, or nil when the bundle has none.
// (Being built; see docs/architecture.md.)
func (b *Bundle) logs() evidence.Logs { return nil }
