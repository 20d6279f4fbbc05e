package tools

// cloudwatchTools returns the cloudwatch tools. (Being built; see docs/architecture.md.)
func cloudwatchTools() []Tool { return nil }
