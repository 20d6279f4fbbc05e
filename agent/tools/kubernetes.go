package tools

// kubernetesTools returns the kubernetes tools. (Being built; see docs/architecture.md.)
func kubernetesTools() []Tool { return nil }
