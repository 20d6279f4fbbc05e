package analyst

import (
	"context"

	"github.com/rootcause/rootcause/agent/evidence"
)

// shownLogPods names ("namespace/pod") the pods whose logs a terminal
// transcript printed (kubectl logs): like a pod someone ran commands in,
// it is where they looked, and its log is read even when another replica
// of its workload is (the first replica listed may not be the one whose
// log holds the errors).
func (g *gatherer) shownLogPods() map[string]bool {
	if g.src == nil {
		return nil
	}
	r, ok := g.src.Kubernetes.(evidence.LoggedPodLister)
	if !ok {
		return nil
	}
	refs, err := r.LoggedPods(context.Background(), "")
	if err != nil {
		return nil
	}
	out := map[string]bool{}
	for _, ref := range refs {
		if ref.Shown {
			out[ref.Namespace+"/"+ref.Name] = true
		}
	}
	return out
}
