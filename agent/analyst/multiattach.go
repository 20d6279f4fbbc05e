package analyst

import (
	"fmt"
	"regexp"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// A volume that one node holds while a pod on another node waits for it
// (FailedAttachVolume: Multi-Attach error): a ReadWriteOnce disk (EBS, a
// persistent disk, an Azure disk) attaches to one node at a time. When the
// pod holding it is the previous ReplicaSet's pod of the same Deployment,
// the rolling update is the cause: RollingUpdate starts the new pod before
// it stops the old one, the scheduler is free to put it on another node,
// and the old pod is kept until the new one is ready, so neither moves
// until the progress deadline. Recreate (or maxSurge 0) stops the old pod
// first. A holder of another workload is two workloads sharing one disk.

// multiAttachHolderRE reads the pods the attach/detach controller names:
// "Volume is already used by pod(s) wiki-5d9c7b8f6-h2xlt, wiki-...".
var multiAttachHolderRE = regexp.MustCompile(`(?i)already used by pod\(s\)\s+([\w.-]+(?:,\s*[\w.-]+)*)`)

// followMultiAttach follows each Multi-Attach mount finding to the pod
// that holds the volume and its node, and says whether the Deployment's
// rolling update put the new pod on another node.
func followMultiAttach(ev *Gathered, found []Finding) {
	for i := range found {
		f := &found[i]
		msg := f.fact("message")
		if f.Kind != KindMountFailure || f.fact("multi_attach") != "" || !strings.Contains(strings.ToLower(msg), "multi-attach") {
			continue
		}
		waiting := podOfObject(ev.K8s.Pods, f.Object)
		if waiting == nil {
			waiting = podOfObject(ev.K8s.Pods, "pod "+strings.TrimPrefix(f.Object, "pod/"))
		}
		if waiting == nil || waiting.Spec.NodeName == "" {
			continue
		}
		holder := multiAttachHolder(ev.K8s.Pods, waiting, msg)
		if holder == nil || holder.Spec.NodeName == "" || holder.Spec.NodeName == waiting.Spec.NodeName {
			continue
		}
		wl := WorkloadOfPod(waiting)
		var s string
		if WorkloadOfPod(holder) == wl && podReplicaSet(holder) != podReplicaSet(waiting) && podReplicaSet(holder) != "" && podReplicaSet(waiting) != "" {
			if d := deploymentNamed(ev.K8s.Deployments, waiting.Namespace, wl); d != nil && d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
				continue
			}
			s = fmt.Sprintf("the volume is attached to node %s, where pod %s of the previous ReplicaSet still runs, and the rolling update (strategy RollingUpdate) started the new pod %s on another node %s: a ReadWriteOnce volume attaches to one node at a time, so the new pod waits for the old one to stop while the old one is kept until the new one is ready",
				holder.Spec.NodeName, holder.Name, waiting.Name, waiting.Spec.NodeName)
			f.setFact("multi_attach_rolling", holder.Name)
		} else {
			s = fmt.Sprintf("the volume is attached to node %s, where pod %s (%s) uses it, while pod %s waits for it on another node %s: a ReadWriteOnce volume attaches to one node at a time",
				holder.Spec.NodeName, holder.Name, WorkloadOfPod(holder), waiting.Name, waiting.Spec.NodeName)
		}
		f.setFact("multi_attach", s)
		f.setFact("multi_attach_holder", holder.Name)
		f.Evidence = append(f.Evidence, s)
	}
}

// multiAttachHolder is the pod holding the volume: the one the message
// names, else the only running pod of the same workload on another node
// ("Volume is already exclusively attached to one node").
func multiAttachHolder(pods []corev1.Pod, waiting *corev1.Pod, msg string) *corev1.Pod {
	if m := findSubmatch(multiAttachHolderRE, msg); m != nil {
		for _, name := range strings.Split(m[1], ",") {
			name = strings.TrimSpace(name)
			for i := range pods {
				if pods[i].Name == name && (pods[i].Namespace == waiting.Namespace || pods[i].Namespace == "") {
					return &pods[i]
				}
			}
		}
		return nil
	}
	var holder *corev1.Pod
	for i := range pods {
		p := &pods[i]
		if p.Name == waiting.Name || p.Namespace != waiting.Namespace || WorkloadOfPod(p) != WorkloadOfPod(waiting) ||
			p.Status.Phase != corev1.PodRunning || p.Spec.NodeName == "" || p.Spec.NodeName == waiting.Spec.NodeName {
			continue
		}
		if holder != nil {
			return nil // several: which one holds it is not said
		}
		holder = p
	}
	return holder
}

// podReplicaSet is the ReplicaSet a pod belongs to: its owner, or its name
// without the pod suffix when the name carries a template hash.
func podReplicaSet(p *corev1.Pod) string {
	for _, o := range p.OwnerReferences {
		if o.Kind == "ReplicaSet" {
			return o.Name
		}
	}
	if m := findSubmatch(rsPodRE, p.Name); m != nil {
		return p.Name[:strings.LastIndexByte(p.Name, '-')]
	}
	return ""
}

// deploymentNamed is the Deployment ns/name among deps, or nil.
func deploymentNamed(deps []appsv1.Deployment, ns, name string) *appsv1.Deployment {
	for i := range deps {
		if deps[i].Name == name && (deps[i].Namespace == ns || deps[i].Namespace == "" || ns == "") {
			return &deps[i]
		}
	}
	return nil
}
