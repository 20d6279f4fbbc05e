package analyst

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Who holds a namespace ResourceQuota that refuses a workload's new pods:
// in a namespace several teams share, another workload's running pods
// (a batch Job's parallel pods, a backfill, a scaled-out deployment) take
// the room the refused workload's rollout or scale-up needs. Its pods are
// counted in the namespace's pod list and their request of the refused
// resource read from their spec or their Job's or Deployment's template;
// the workload whose pods hold at least half of what the quota counts as
// used (or, requests unknown, at least half of the namespace's running
// pods and twice any other's) is named, and it is what to scale down,
// suspend or move.

// quotaHolder annotates a quota refusal with the workload holding most of
// the quota's refused resource in its namespace.
func quotaHolder(ev *Gathered, f *Finding) {
	ns := f.Namespace
	res := strings.TrimPrefix(strings.TrimPrefix(f.fact("quota_resource"), "requests."), "limits.")
	limits := strings.HasPrefix(f.fact("quota_resource"), "limits.")
	type group struct {
		name string
		pods int
		req  resource.Quantity
		have bool
	}
	groups := map[string]*group{}
	total := 0
	for i := range ev.K8s.Pods {
		p := &ev.K8s.Pods[i]
		if ns != "" && p.Namespace != "" && p.Namespace != ns {
			continue
		}
		if p.Status.Phase != corev1.PodRunning && p.Status.Phase != corev1.PodPending || p.DeletionTimestamp != nil {
			continue
		}
		w := ownerByPrefix(ev, p)
		if w == "" {
			continue
		}
		total++
		g := groups[w]
		if g == nil {
			g = &group{name: w}
			groups[w] = g
		}
		g.pods++
		if q, ok := podResource(p.Spec.Containers, res, limits); ok {
			g.req.Add(q)
			g.have = true
		} else if q, ok := templateResource(ev, ns, w, res, limits); ok {
			g.req.Add(q)
			g.have = true
		}
	}
	var gs []*group
	for _, g := range groups {
		if !sameWorkloadName(g.name, f.Subject) {
			gs = append(gs, g)
		}
	}
	if len(gs) == 0 {
		return
	}
	sort.Slice(gs, func(i, j int) bool {
		if c := gs[i].req.Cmp(gs[j].req); c != 0 {
			return c > 0
		}
		if gs[i].pods != gs[j].pods {
			return gs[i].pods > gs[j].pods
		}
		return gs[i].name < gs[j].name
	})
	top := gs[0]
	used, err := resource.ParseQuantity(f.fact("quota_used"))
	switch {
	case top.have && err == nil && used.Value() > 0:
		// Its pods hold at least half of what the quota counts.
		if top.req.Value()*2 < used.Value() {
			return
		}
	default:
		// Requests unknown: most of the namespace's pods, twice any other's.
		if top.pods*2 < total || len(gs) > 1 && gs[1].pods*2 > top.pods || top.pods < 3 {
			return
		}
	}
	f.setFact("holder", top.name)
	f.setFact("holder_pods", fmt.Sprint(top.pods))
	ev2 := fmt.Sprintf("pods of namespace %s: %s runs %d of %d", orWord(ns, "the namespace"), top.name, top.pods, total)
	if top.have {
		f.setFact("holder_request", top.req.String())
		ev2 += fmt.Sprintf(", requesting %s of %s in all", top.req.String(), f.fact("quota_resource"))
	}
	f.Evidence = append(f.Evidence, ev2)
	f.setFact("affected", appendAffected(f.fact("affected"), top.name))
	f.Related = appendNew(f.Related, top.name)
}

// podResource sums the containers' request (or limit) of a resource.
func podResource(cs []corev1.Container, res string, limits bool) (resource.Quantity, bool) {
	var sum resource.Quantity
	found := false
	for _, c := range cs {
		l := c.Resources.Requests
		if limits {
			l = c.Resources.Limits
		}
		if q, ok := l[corev1.ResourceName(res)]; ok {
			sum.Add(q)
			found = true
		}
	}
	return sum, found
}

// templateResource is one pod's request of a resource read from the
// template of the Job or Deployment of that name.
func templateResource(ev *Gathered, ns, w, res string, limits bool) (resource.Quantity, bool) {
	for _, j := range ev.K8s.Jobs {
		if j.Name == w && (ns == "" || j.Namespace == "" || j.Namespace == ns) {
			return podResource(j.Spec.Template.Spec.Containers, res, limits)
		}
	}
	for _, d := range ev.K8s.Deployments {
		if d.Name == w && (ns == "" || d.Namespace == "" || d.Namespace == ns) {
			return podResource(d.Spec.Template.Spec.Containers, res, limits)
		}
	}
	return resource.Quantity{}, false
}

// ownerByPrefix names a pod's workload: the Job or Deployment of its
// namespace whose name its name continues ("backfill-2dkqz" of Job
// backfill), else its owner or name without the suffix.
func ownerByPrefix(ev *Gathered, p *corev1.Pod) string {
	best := ""
	try := func(name, ns string) {
		if (ns == "" || p.Namespace == "" || ns == p.Namespace) && strings.HasPrefix(p.Name, name+"-") && len(name) > len(best) {
			best = name
		}
	}
	for _, j := range ev.K8s.Jobs {
		try(j.Name, j.Namespace)
	}
	for _, d := range ev.K8s.Deployments {
		try(d.Name, d.Namespace)
	}
	if best != "" {
		return best
	}
	return podWorkload(p)
}
