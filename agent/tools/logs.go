package tools

// logTools returns the logs tools. (Being built; see docs/architecture.md.)
func logTools() []Tool { return nil }
