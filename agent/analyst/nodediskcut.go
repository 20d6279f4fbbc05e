package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// A node under disk pressure because its disk was made smaller: a change
// to the node group's launch template, node pool or Karpenter node class
// cut the root volume (volume_size 100 -> 30, diskSizeGb, rootVolumeSize),
// and the nodes launched since then have the smaller disk while the
// workloads, their images and emptyDir volumes stay the same size. The
// kubelet's ephemeral-storage capacity of the node matches the new size
// and is below that of the older nodes of its group; freeing space on one
// node does not help, the next node launched has the same disk.
//
// rootVolumeCut adds, to a node's disk pressure finding, the change that
// cut its root volume when the node's capacity shows the new size.
func rootVolumeCut(ev *Gathered, f *Finding) {
	if f.fact("resource") != "disk" {
		return
	}
	var node *corev1.Node
	for i := range ev.K8s.Nodes {
		if sameNode(ev.K8s.Nodes[i].Name, f.Subject) || sameNode(ev.K8s.Nodes[i].Name, f.fact("node")) {
			node = &ev.K8s.Nodes[i]
		}
	}
	if node == nil {
		return
	}
	capQ, ok := node.Status.Capacity[corev1.ResourceEphemeralStorage]
	if !ok || capQ.Value() <= 0 {
		return
	}
	gib := float64(capQ.Value()) / (1 << 30)
	// The largest capacity of the other nodes, as a comparison.
	peer := 0.0
	for _, n := range ev.K8s.Nodes {
		if n.Name == node.Name {
			continue
		}
		if q, ok := n.Status.Capacity[corev1.ResourceEphemeralStorage]; ok {
			peer = max(peer, float64(q.Value())/(1<<30))
		}
	}
	for _, c := range slices.Concat(ev.Earlier, ev.Changes) {
		if !node.CreationTimestamp.IsZero() && c.Timestamp.After(node.CreationTimestamp.Time) {
			continue
		}
		for _, m := range findAllSubmatch(volumeCutRE, c.Description, -1) {
			from, _ := strconv.ParseFloat(m[2], 64)
			to, _ := strconv.ParseFloat(m[3], 64)
			// The node's disk is the new size (the kubelet's capacity is
			// the file system's, a little below the volume's).
			if to <= 0 || from <= to || gib > to*1.08 || gib < to*0.8 {
				continue
			}
			size := fmt.Sprintf("%s GiB", m[3])
			f.setFact("volume_cut", fmt.Sprintf("%s at %s (%s)", orWord(c.Service, "a node group change"), ts(c.Timestamp), quote(c.Description, 220)))
			f.setFact("volume_from", m[2]+" GiB")
			f.setFact("volume_to", size)
			f.setFact("node_capacity", fmt.Sprintf("%.0f GiB", gib))
			if peer > gib*1.5 {
				f.setFact("peer_capacity", fmt.Sprintf("%.0f GiB", peer))
			}
			f.Evidence = append(f.Evidence, fmt.Sprintf("node %s ephemeral-storage capacity %s (%.0f GiB)%s; the root volume was cut from %s to %s by %s", node.Name, capQ.String(), gib,
				map[bool]string{true: fmt.Sprintf(", %.0f GiB on the older nodes", peer)}[peer > gib*1.5], m[2]+" GiB", size, f.fact("volume_cut")))
			return
		}
	}
}

// volumeCutRE is a root volume size lowered in a change's text:
// "volume_size 100 -> 30", "diskSizeGb: 200 => 50", "root volume 100GiB to
// 30GiB", "rootVolumeSize 80Gi -> 20Gi".
var volumeCutRE = regexp.MustCompile(`(?i)(volume[_ ]?size|disk[_ ]?size(?:[_ ]?gb)?|root[_ ]?volume(?:[_ ]?size)?|root[_ ]?disk|boot[_ ]?disk(?:[_ ]?size)?|ebs[_ ]?size|storage)["':= ]*(?:from\s+)?(\d+(?:\.\d+)?)\s*(?:gib|gi|gb|g)?\s*(?:->|→|=>|to)\s*(\d+(?:\.\d+)?)\s*(?:gib|gi|gb|g)?\b`)

// describeVolumeCut is the sentence the disk pressure adds for a cut
// root volume.
func describeVolumeCut(h *Hypothesis) string {
	c := h.fact("volume_cut")
	if c == "" {
		return ""
	}
	d := fmt.Sprintf("the node's disk is too small, not the workload's use: its root volume (ephemeral-storage capacity %s) was cut from %s to %s by %s", h.fact("node_capacity"), h.fact("volume_from"), h.fact("volume_to"), c)
	if p := h.fact("peer_capacity"); p != "" {
		d += fmt.Sprintf(", while the older nodes keep %s", p)
	}
	d += "; the images and emptyDir volumes of the pods scheduled there no longer fit, and every node launched from it has the same disk"
	return d
}

// recommendVolumeCut is what to do about a cut root volume.
func recommendVolumeCut(h *Hypothesis, r *recommender) bool {
	c := h.fact("volume_cut")
	if c == "" {
		return false
	}
	r.high("Restore the root volume size to %s in the node group's launch template or node class (%s) and replace the nodes launched with %s", h.fact("volume_from"), strings.TrimSpace(truncate(c, 140)), h.fact("volume_to"))
	r.med("Until then cordon the nodes with the smaller disk, and give pods with large emptyDir volumes an ephemeral-storage request and sizeLimit so the scheduler accounts for them")
	r.low("Alert on node ephemeral-storage capacity below the group's usual size and on DiskPressure")
	return true
}
