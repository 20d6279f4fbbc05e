package tools

// codeTools returns the code tools. (Being built; see docs/architecture.md.)
func codeTools() []Tool { return nil }
