package tools

// changeTools returns the changes tools. (Being built; see docs/architecture.md.)
func changeTools() []Tool { return nil }
