package bundle

import "github.com/rootcause/rootcause/agent/evidence"

// kubernetes returns the bundle's Kubernetes source, or nil when the bundle has none.
// (Being built; see docs/architecture.md.)
func (b *Bundle) kubernetes() evidence.Kubernetes { return nil }
