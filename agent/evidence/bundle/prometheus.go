package bundle

import "github.com/rootcause/rootcause/agent/evidence"

// metrics returns the bundle's Metrics source, or nil when the bundle has none.
// (Being built; see docs/architecture.md.)
func (b *Bundle) metrics() evidence.Metrics { return nil }
