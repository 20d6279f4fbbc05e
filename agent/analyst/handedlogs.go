package analyst

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// Logs handed over without their pods: a capture often holds the logs of
// the pods someone looked at (the service's own, a broker's in its
// namespace, the operator or control plane that serves it: an autoscaler's
// scaler, a mesh's control plane) while no listing shows those pods. They
// were collected because they matter: their lines are read like the
// listed pods' (after them, within the same bound), so a cause that only
// the broker's, the scaler's or the proxy's own log shows is seen.

// handedOverPods names the pods whose logs the source holds apart from
// any listing (evidence.LoggedPodLister), not among listed, the service's
// namespace first, at most max.
func (g *gatherer) handedOverPods(ctx context.Context, listed []*corev1.Pod, max int) []*corev1.Pod {
	r, ok := g.src.Kubernetes.(evidence.LoggedPodLister)
	if !ok || max <= 0 {
		return nil
	}
	refs, err := r.LoggedPods(ctx, "")
	if err != nil {
		return nil
	}
	have := map[string]bool{}
	for _, p := range listed {
		have[p.Namespace+"/"+p.Name] = true
	}
	for i := range g.k8s.Pods {
		p := &g.k8s.Pods[i]
		have[p.Namespace+"/"+p.Name] = true
		have["/"+p.Name] = true
	}
	var own, other []*corev1.Pod
	for _, ref := range refs {
		if have[ref.Namespace+"/"+ref.Name] || have["/"+ref.Name] {
			continue
		}
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ref.Namespace, Name: ref.Name}}
		if g.sc.Namespace == "" || ref.Namespace == g.sc.Namespace {
			own = append(own, p)
		} else {
			other = append(other, p)
		}
	}
	out := append(own, other...)
	if len(out) > max {
		out = out[:max]
	}
	return out
}
