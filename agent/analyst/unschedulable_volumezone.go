package analyst

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// Pods refused because their volume is in another zone: a zonal volume
// (an EBS, a Persistent Disk, an Azure Disk) can attach only to nodes of
// its zone, and the PersistentVolume says so in its node affinity
// (topology.kubernetes.io/zone in [us-east-1c]). When none of the nodes
// the pod may run on (its node selector, its pool) is in that zone, the
// scheduler answers "volume node affinity conflict" and the cluster
// autoscaler will not help unless the pool spans the zone. The usual
// reason is a StorageClass with volumeBindingMode: Immediate: the volume
// is provisioned as soon as the claim is created, in a zone picked
// without regard to where the pod can run (WaitForFirstConsumer waits
// for the scheduler's choice). The chain runs pod → claim → volume → zone
// against the zones of the nodes the pod selects, and claim → class →
// binding mode.

// zoneLabels are the node and volume labels that name a zone.
var zoneLabels = []string{"topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone", "topology.ebs.csi.aws.com/zone", "topology.gke.io/zone", "topology.disk.csi.azure.com/zone"}

// volumeZoneOf returns the zones a volume's node affinity or labels
// confine it to.
func volumeZoneOf(pv *corev1.PersistentVolume) []string {
	var zones []string
	if na := pv.Spec.NodeAffinity; na != nil && na.Required != nil {
		for _, t := range na.Required.NodeSelectorTerms {
			for _, e := range t.MatchExpressions {
				// A custom-columns projection of the values keeps no key.
				if slices.Contains(zoneLabels, e.Key) && e.Operator == corev1.NodeSelectorOpIn || e.Key == "" && e.Operator == "" {
					for _, v := range e.Values {
						zones = appendNew(zones, v)
					}
				}
			}
		}
	}
	if len(zones) == 0 {
		for _, k := range zoneLabels {
			if v := pv.Labels[k]; v != "" {
				zones = appendNew(zones, v)
			}
		}
	}
	return zones
}

// nodeZone is the zone a node's labels name.
func nodeZone(n *corev1.Node) string {
	for _, k := range zoneLabels {
		if v := n.Labels[k]; v != "" {
			return v
		}
	}
	return ""
}

// explainVolumeZone adds to pods refused for a volume node affinity
// conflict the zone of their volume, the zones of the nodes they may run
// on and their StorageClass's binding mode.
func explainVolumeZone(ev *Gathered, found []Finding) {
	for i := range found {
		f := &found[i]
		msg := strings.ToLower(f.fact("message"))
		if f.Kind != KindUnschedulable || f.fact("volume_zone") != "" || !strings.Contains(msg, "volume node affinity conflict") && !strings.Contains(msg, "had no available volume zone") {
			continue
		}
		for j := range ev.K8s.Pods {
			p := &ev.K8s.Pods[j]
			if p.Status.Phase != corev1.PodPending || !strings.HasSuffix(f.Object, "/"+p.Name) && WorkloadOfPod(p) != f.Subject {
				continue
			}
			if volumeZoneFacts(ev, f, p) {
				break
			}
		}
	}
}

// volumeZoneFacts reads the chain of one pending pod into f; it reports
// whether one of the pod's volumes is confined to a zone.
func volumeZoneFacts(ev *Gathered, f *Finding, p *corev1.Pod) bool {
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		claim := v.PersistentVolumeClaim.ClaimName
		var pvc *corev1.PersistentVolumeClaim
		for k := range ev.K8s.Claims {
			if c := &ev.K8s.Claims[k]; c.Name == claim && (c.Namespace == "" || c.Namespace == p.Namespace) {
				pvc = c
			}
		}
		var pv *corev1.PersistentVolume
		for k := range ev.K8s.Volumes {
			x := &ev.K8s.Volumes[k]
			if pvc != nil && pvc.Spec.VolumeName != "" && x.Name == pvc.Spec.VolumeName ||
				x.Spec.ClaimRef != nil && x.Spec.ClaimRef.Name == claim && (x.Spec.ClaimRef.Namespace == "" || x.Spec.ClaimRef.Namespace == p.Namespace) {
				if pv == nil || len(volumeZoneOf(x)) > 0 {
					pv = x
				}
			}
		}
		if pv == nil {
			continue
		}
		zones := volumeZoneOf(pv)
		if len(zones) == 0 {
			continue
		}
		f.setFact("volume_claim", claim)
		f.setFact("volume_name", pv.Name)
		f.setFact("volume_zone", strings.Join(zones, ", "))
		f.Evidence = append(f.Evidence, fmt.Sprintf("PersistentVolumeClaim %s/%s is bound to PersistentVolume %s, whose node affinity confines it to zone %s", p.Namespace, claim, pv.Name, strings.Join(zones, ", ")))
		// The zones of the nodes the pod may run on (its node selector).
		var nodeZones []string
		sel := p.Spec.NodeSelector
		for k := range ev.K8s.Nodes {
			n := &ev.K8s.Nodes[k]
			ok := true
			for key, val := range sel {
				if n.Labels[key] != val {
					ok = false
				}
			}
			if z := nodeZone(n); ok && z != "" {
				nodeZones = appendNew(nodeZones, z)
			}
		}
		sort.Strings(nodeZones)
		if len(nodeZones) > 0 && !slices.ContainsFunc(zones, func(z string) bool { return slices.Contains(nodeZones, z) }) {
			what := "the nodes"
			if len(sel) > 0 {
				var kv []string
				for key, val := range sel {
					kv = append(kv, key+"="+val)
				}
				sort.Strings(kv)
				what = "the nodes it selects (" + strings.Join(kv, ", ") + ")"
			}
			f.setFact("node_zones", strings.Join(nodeZones, ", "))
			f.setFact("node_zones_of", what)
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s are in zones %s only", what, strings.Join(nodeZones, ", ")))
		}
		class := ""
		if pvc != nil && pvc.Spec.StorageClassName != nil {
			class = *pvc.Spec.StorageClassName
		}
		class = orWord(class, pv.Spec.StorageClassName)
		for k := range ev.K8s.StorageClasses {
			sc := &ev.K8s.StorageClasses[k]
			if sc.Name != class {
				continue
			}
			f.setFact("storage_class", class)
			if m := sc.VolumeBindingMode; m != nil {
				f.setFact("binding_mode", string(*m))
				if *m == storagev1.VolumeBindingImmediate {
					f.Evidence = append(f.Evidence, fmt.Sprintf("StorageClass %s has volumeBindingMode Immediate: its volumes are provisioned when the claim is created, before the pod is scheduled", class))
				}
			}
		}
		return true
	}
	return false
}

// volumeZoneClause says where the pods' volume is against where they may
// run, and why it went there.
func volumeZoneClause(h *Hypothesis) string {
	z := h.fact("volume_zone")
	if z == "" {
		return ""
	}
	d := fmt.Sprintf(". Their volume (claim %s, PersistentVolume %s) is in zone %s", h.fact("volume_claim"), h.fact("volume_name"), z)
	if nz := h.fact("node_zones"); nz != "" {
		d += fmt.Sprintf(", and %s are in %s only: no node the pods may run on can attach it, and adding nodes to the same pool and zones cannot help", h.fact("node_zones_of"), nz)
	}
	switch h.fact("binding_mode") {
	case string(storagev1.VolumeBindingImmediate):
		d += fmt.Sprintf("; StorageClass %s uses volumeBindingMode: Immediate, so the volume was provisioned as soon as the claim was created, in a zone picked without regard to where the pods can run (WaitForFirstConsumer would have waited for the scheduler's choice)", h.fact("storage_class"))
	case string(storagev1.VolumeBindingWaitForFirstConsumer):
		d += fmt.Sprintf("; StorageClass %s waits for the first consumer, so the volume followed an earlier pod to that zone", h.fact("storage_class"))
	}
	return d
}
