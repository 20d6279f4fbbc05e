package bundle

import "github.com/rootcause/rootcause/agent/evidence"

// cloudwatch returns the bundle's CloudWatch source, or nil when the bundle has none.
// (Being built; see docs/architecture.md.)
func (b *Bundle) cloudwatch() evidence.CloudWatch { return nil }
