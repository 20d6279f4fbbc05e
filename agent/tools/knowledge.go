package tools

// knowledgeTools returns the knowledge tools. (Being built; see docs/architecture.md.)
func knowledgeTools() []Tool { return nil }
