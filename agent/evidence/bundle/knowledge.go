package bundle

import "github.com/rootcause/rootcause/agent/evidence"

// knowledge returns the bundle's Knowledge source, or nil when the bundle has none.
// (Being built; see docs/architecture.md.)
func (b *Bundle) knowledge() evidence.Knowledge { return nil }
