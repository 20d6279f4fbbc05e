package capture

import (
	"github.com/rootcause/rootcause/agent/evidence/live"
	"github.com/rootcause/rootcause/agent/evidence/otlpjson"
)

// The trace hooks: --traces URL opens Jaeger (its api/v3) or Tempo at the
// URL through the guard, and the window's spans are written as OTLP/JSON
// lines, the form of a bundle's traces/.
func init() {
	OpenTraces = live.OpenTraces
	DefaultTraceWriter = otlpjson.Export
}
