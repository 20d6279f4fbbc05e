package evidence

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Usage is one resource usage reading of a pod, a pod's container or a
// node, as `kubectl top` prints it from metrics.k8s.io.
type Usage struct {
	Kind      string            `json:"kind"` // Pod or Node
	Namespace string            `json:"namespace,omitempty"`
	Name      string            `json:"name"`
	Container string            `json:"container,omitempty"` // kubectl top pod --containers
	CPU       resource.Quantity `json:"cpu"`
	Memory    resource.Quantity `json:"memory"`
	// CPUPercent and MemoryPercent are a node's usage against its
	// allocatable, as kubectl top node prints them; -1 when not shown.
	CPUPercent    int       `json:"cpu_percent"`
	MemoryPercent int       `json:"memory_percent"`
	Time          time.Time `json:"time,omitzero"`    // when it was read (a bundle's captured_at); zero when unknown
	Source        string    `json:"source,omitempty"` // the file and line it was read from
}

// UsageReader is implemented by Kubernetes sources that hold resource
// usage readings (a bundle's `kubectl top pod|node` output). Usage lists
// the readings of kind ("Pod" or "Node"; empty: both) in namespace (empty:
// all; nodes have none) in namespace/name order; an empty list when none
// were taken.
type UsageReader interface {
	Usage(ctx context.Context, kind, namespace string) ([]Usage, error)
}
