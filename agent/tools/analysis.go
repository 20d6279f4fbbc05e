package tools

// analysisTools returns the analysis tools. (Being built; see docs/architecture.md.)
func analysisTools() []Tool { return nil }
