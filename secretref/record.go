package secretref

import (
	"context"
	"slices"
	"sync"
)

// Recorder is a Resolver that remembers the values it resolved, so that
// whatever used them can scrub them from error messages and output.
type Recorder struct {
	Resolver Resolver

	mu     sync.Mutex
	values []string
}

// Resolve resolves ref with the wrapped resolver and records the value.
func (r *Recorder) Resolve(ctx context.Context, ref string) (string, error) {
	v, err := r.Resolver.Resolve(ctx, ref)
	if err == nil && v != "" {
		r.mu.Lock()
		if !slices.Contains(r.values, v) {
			r.values = append(r.values, v)
		}
		r.mu.Unlock()
	}
	return v, err
}

// Values returns the values resolved so far.
func (r *Recorder) Values() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.values)
}
