package bundle

import "github.com/rootcause/rootcause/agent/evidence"

// code returns the bundle's Code source, or nil when the bundle has none.
// (Being built; see docs/architecture.md.)
func (b *Bundle) code() evidence.Code { return nil }
