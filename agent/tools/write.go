package tools

// writeTools returns the write tools. (Being built; see docs/architecture.md.)
func writeTools() []Tool { return nil }
