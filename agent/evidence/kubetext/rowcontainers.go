package kubetext

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// nameRowContainers names the container whose state a kubectl get pods
// row showed for a pod of several containers ("1/3 CrashLoopBackOff",
// "Init:CrashLoopBackOff"), when nothing richer (a describe page, -o yaml)
// named it: the container the transcript read the previous log of (only
// a container that restarted has one), else the one container whose log
// it read. With several candidates the name stays unknown.
func (p *parser) nameRowContainers() {
	for k, i := range p.objs {
		if k.kind != "Pod" {
			continue
		}
		pod, ok := p.res.Objects[i].(*corev1.Pod)
		if !ok {
			continue
		}
		for _, sts := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
			if len(sts) != 1 || sts[0].Name != "" {
				continue
			}
			if name := p.loggedContainer(k.ns, k.name, sts[0].State.Running != nil); name != "" {
				sts[0].Name = name
			}
		}
	}
}

// loggedContainer is the one container of pod ns/name the transcript's
// kubectl logs commands name: among those it read the previous instance
// of, else (or, for a running container, first) among all.
func (p *parser) loggedContainer(ns, name string, running bool) string {
	var prev, any []string
	for _, l := range p.res.Logs {
		if l.Pod != name || l.Namespace != "" && ns != "" && l.Namespace != ns || l.Container == "" {
			continue
		}
		if !slices.Contains(any, l.Container) {
			any = append(any, l.Container)
		}
		if l.Previous && !slices.Contains(prev, l.Container) {
			prev = append(prev, l.Container)
		}
	}
	if !running && len(prev) > 0 {
		if len(prev) == 1 {
			return prev[0]
		}
		return ""
	}
	if len(any) == 1 {
		return any[0]
	}
	return ""
}
