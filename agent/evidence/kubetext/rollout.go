package kubetext

import (
	"regexp"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// RolloutAnnotation holds the last line `kubectl rollout status` printed
// about a workload ("deployment "web" successfully rolled out", "Waiting for
// deployment "web" rollout to finish: 1 of 3 updated replicas are
// available..."), verbatim: what it states beyond the counts it gives.
const RolloutAnnotation = "rootcause.dev/kubectl-rollout-status"

// rolloutLine is one line kubectl rollout status prints (kubectl's
// polymorphichelpers status viewers); the fields it states are set by set.
type rolloutLine struct {
	re  *regexp.Regexp
	set func(obj runtime.Object, m []int32)
}

// klogRe matches kubectl's own log lines (W0314 10:02:03.123456 ...).
var klogRe = regexp.MustCompile(`^[IWEF]\d{4} \d{2}:\d{2}:\d{2}\.\d+ `)

var rolloutLines = map[string][]rolloutLine{
	"Deployment": {
		{regexp.MustCompile(`^Waiting for deployment "[^"]*" rollout to finish: (\d+) out of (\d+) new replicas have been updated\.\.\.$`),
			func(o runtime.Object, m []int32) {
				d := o.(*appsv1.Deployment)
				d.Status.UpdatedReplicas, d.Spec.Replicas = m[0], &m[1]
			}},
		{regexp.MustCompile(`^Waiting for deployment "[^"]*" rollout to finish: (\d+) of (\d+) updated replicas are available\.\.\.$`),
			func(o runtime.Object, m []int32) {
				d := o.(*appsv1.Deployment)
				d.Status.AvailableReplicas, d.Status.UpdatedReplicas = m[0], m[1]
			}},
		{regexp.MustCompile(`^Waiting for deployment "[^"]*" rollout to finish: \d+ old replicas are pending termination\.\.\.$`), nil},
		{regexp.MustCompile(`^Waiting for deployment spec update to be observed\.\.\.$`), nil},
		{regexp.MustCompile(`^deployment "[^"]*" successfully rolled out$`), nil},
		{regexp.MustCompile(`^error: deployment "[^"]*" exceeded its progress deadline$`),
			func(o runtime.Object, _ []int32) {
				d := o.(*appsv1.Deployment)
				d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing,
					Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded"}}
			}},
	},
	"DaemonSet": {
		{regexp.MustCompile(`^Waiting for daemon set "[^"]*" rollout to finish: (\d+) out of (\d+) new pods have been updated\.\.\.$`),
			func(o runtime.Object, m []int32) {
				d := o.(*appsv1.DaemonSet)
				d.Status.UpdatedNumberScheduled, d.Status.DesiredNumberScheduled = m[0], m[1]
			}},
		{regexp.MustCompile(`^Waiting for daemon set "[^"]*" rollout to finish: (\d+) of (\d+) updated pods are available\.\.\.$`),
			func(o runtime.Object, m []int32) {
				d := o.(*appsv1.DaemonSet)
				d.Status.NumberAvailable, d.Status.DesiredNumberScheduled = m[0], m[1]
			}},
		{regexp.MustCompile(`^Waiting for daemon set spec update to be observed\.\.\.$`), nil},
		{regexp.MustCompile(`^daemon set "[^"]*" successfully rolled out$`), nil},
	},
	"StatefulSet": {
		{regexp.MustCompile(`^Waiting for \d+ pods to be ready\.\.\.$`), nil},
		{regexp.MustCompile(`^Waiting for partitioned roll out to finish: (\d+) out of (\d+) new pods have been updated\.\.\.$`),
			func(o runtime.Object, m []int32) {
				s := o.(*appsv1.StatefulSet)
				s.Status.UpdatedReplicas = m[0]
			}},
		{regexp.MustCompile(`^partitioned roll out complete: \d+ new pods have been updated\.\.\.$`), nil},
		{regexp.MustCompile(`^Waiting for statefulset rolling update to complete \d+ pods at revision (\S+)\.\.\.$`), nil},
		{regexp.MustCompile(`^statefulset rolling update complete (\d+) pods at revision (\S+)\.\.\.$`),
			func(o runtime.Object, m []int32) {
				s := o.(*appsv1.StatefulSet)
				s.Status.UpdatedReplicas = m[0]
			}},
		{regexp.MustCompile(`^Waiting for statefulset spec update to be observed\.\.\.$`), nil},
	},
}

// rollout reads kubectl rollout status: the last line it printed about the
// workload (with a watch, earlier lines are earlier states) gives the
// counts it states and is kept verbatim in RolloutAnnotation; "exceeded its
// progress deadline" is the Progressing condition kubectl read it from.
// Other rollout subcommands are reported as not read: rollout history
// lists revisions and change causes without times, which are no changes.
func (p *parser) rollout(c *command, out []string, line int) {
	sub := ""
	if len(c.args) > 0 {
		sub = c.args[0]
	}
	if sub != "status" {
		why := "kubectl rollout " + sub + " output is not read"
		if sub == "history" {
			why = "kubectl rollout history is not read: it lists revisions and change causes without times (the ReplicaSets' revision annotations and creation times give the rollouts)"
		}
		p.skip(line, c.text, why)
		return
	}
	cc := *c
	cc.args = c.args[1:]
	ts := cc.targets()
	if len(ts) != 1 || ts[0].name == "" || rolloutLines[ts[0].kind] == nil {
		p.skip(line, c.text, "kubectl rollout status of one deployment, daemon set or stateful set is read")
		return
	}
	kind, name := ts[0].kind, ts[0].name
	var last string
	var obj runtime.Object
	for i := len(out) - 1; i >= 0 && obj == nil; i-- {
		l := strings.TrimSpace(out[i])
		if l == "" || strings.HasPrefix(l, "error: timed out waiting") || klogRe.MatchString(l) {
			continue // kubectl's timeout and klog warnings follow the last state
		}
		for _, rl := range rolloutLines[kind] {
			sm := rl.re.FindStringSubmatch(l)
			if sm == nil {
				continue
			}
			meta := metav1.ObjectMeta{Name: name, Namespace: c.ns(), Annotations: map[string]string{RolloutAnnotation: strings.TrimPrefix(l, "error: ")}}
			switch kind {
			case "Deployment":
				obj = &appsv1.Deployment{TypeMeta: typeMeta(kind), ObjectMeta: meta}
			case "DaemonSet":
				obj = &appsv1.DaemonSet{TypeMeta: typeMeta(kind), ObjectMeta: meta}
			default:
				obj = &appsv1.StatefulSet{TypeMeta: typeMeta(kind), ObjectMeta: meta}
			}
			if rl.set != nil {
				var nums []int32
				for _, s := range sm[1:] {
					if n, ok := atoi32(s); ok {
						nums = append(nums, n)
					}
				}
				if len(nums) == strings.Count(rl.re.String(), `(\d+)`) {
					rl.set(obj, nums)
				}
			}
			last = l
			break
		}
		if obj == nil {
			if strings.HasPrefix(l, "error:") || strings.HasPrefix(l, "Error from server") {
				p.skip(line, c.text, "kubectl answered an error: "+l)
			} else {
				p.skip(line+1+i, c.text, "rollout status line not understood")
			}
			return
		}
	}
	if obj == nil || last == "" {
		p.skip(line, c.text, "no rollout status line")
		return
	}
	p.add(kind, c.ns(), name, "rollout-status", obj)
}
