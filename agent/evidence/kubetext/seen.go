package kubetext

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A transcript often shows a pod only through the commands run in it or
// about it: kubectl logs POD, kubectl exec POD, a kubectl top pod row,
// with no get pods table or describe page. Such a pod exists, in the
// namespace the command named, and that is all the text says: its phase,
// readiness, restarts, labels, owner and spec stay unknown.

// SeenForm is the SourceAnnotation value of a pod known only from commands
// run in it or about it (see SeenPods). Its Status is empty: the phase is
// unset, which means unknown, not failed and not healthy.
const SeenForm = "seen"

// ContainersSeenAnnotation lists, comma-separated and sorted, the
// containers the commands named (kubectl logs -c, kubectl exec -c, the
// container kubectl said it defaulted to, kubectl top pod --containers).
// They are not the pod's whole list of containers, so Spec.Containers
// stays empty.
const ContainersSeenAnnotation = "rootcause.dev/containers-seen"

// SeenInAnnotation says where a seen pod was seen: "file:line kubectl
// logs; file:line kubectl top pod", at most maxSeenIn places.
const SeenInAnnotation = "rootcause.dev/seen-in"

const maxSeenIn = 5

// Sighting is one command that showed a pod exists.
type Sighting struct {
	File      string // the transcript, as the caller names it
	Line      int
	What      string // "kubectl logs", "kubectl exec", "kubectl top pod"
	Namespace string // empty when the command did not say
	Pod       string
	Container string // empty when the command did not say
}

// Sightings lists the pods the logs, kubectl exec outputs and kubectl top
// pod rows of a transcript name, in transcript order; file names the
// transcript in SeenInAnnotation.
func (r *Result) Sightings(file string) []Sighting {
	var out []Sighting
	for _, l := range r.Logs {
		out = append(out, Sighting{File: file, Line: l.Line, What: "kubectl logs", Namespace: l.Namespace, Pod: l.Pod, Container: l.Container})
	}
	for _, o := range r.Outputs {
		if o.Exec && o.Pod != "" {
			out = append(out, Sighting{File: file, Line: o.Line, What: "kubectl exec", Namespace: o.Namespace, Pod: o.Pod, Container: o.Container})
		}
	}
	for _, u := range r.Usage {
		if u.Kind == "Pod" {
			out = append(out, Sighting{File: file, Line: u.Line, What: "kubectl top pod", Namespace: u.Namespace, Pod: u.Name, Container: u.Container})
		}
	}
	slices.SortStableFunc(out, func(a, b Sighting) int {
		if a.File != b.File {
			return strings.Compare(a.File, b.File)
		}
		return a.Line - b.Line
	})
	return out
}

// SeenPods makes one Pod for each namespace and name the sightings show,
// in the order first seen, skipping those known reports true for (a pod
// some other form describes, or one kubectl answered NotFound for) and
// those whose namespace the commands did not say (kubectl used the
// context's, which a transcript does not show). Each holds only its name,
// namespace and the annotations SourceAnnotation (SeenForm),
// ContainersSeenAnnotation and SeenInAnnotation.
func SeenPods(sightings []Sighting, known func(namespace, name string) bool) []*corev1.Pod {
	var out []*corev1.Pod
	byKey := map[string]*corev1.Pod{}
	containers := map[string][]string{}
	places := map[string]int{}
	for _, s := range sightings {
		if s.Namespace == "" || s.Pod == "" || !dnsName(s.Namespace) || !dnsName(s.Pod) {
			continue
		}
		key := s.Namespace + "/" + s.Pod
		p := byKey[key]
		if p == nil {
			if known != nil && known(s.Namespace, s.Pod) {
				continue
			}
			p = &corev1.Pod{
				TypeMeta:   metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
				ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: s.Pod, Annotations: map[string]string{SourceAnnotation: SeenForm}},
			}
			byKey[key] = p
			out = append(out, p)
		}
		if s.Container != "" && dnsName(s.Container) && !slices.Contains(containers[key], s.Container) {
			containers[key] = append(containers[key], s.Container)
		}
		if places[key] < maxSeenIn {
			places[key]++
			where := s.What
			if s.File != "" {
				where = fmt.Sprintf("%s:%d %s", s.File, s.Line, s.What)
			}
			if old := p.Annotations[SeenInAnnotation]; old != "" {
				where = old + "; " + where
			}
			p.Annotations[SeenInAnnotation] = where
		}
	}
	for key, cs := range containers {
		slices.Sort(cs)
		byKey[key].Annotations[ContainersSeenAnnotation] = strings.Join(cs, ",")
	}
	return out
}

// dnsName accepts what Kubernetes accepts as a namespace, pod or container
// name: lower-case letters, digits, '-' and '.', at most 253 bytes.
func dnsName(s string) bool {
	if s == "" || len(s) > 253 || s == "." || s == ".." {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}
