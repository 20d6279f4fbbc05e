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
// available..."), verbatim, on the transcript's copy of that workload.
const RolloutAnnotation = "rootcause.dev/kubectl-rollout-status"

// Rollout is what one kubectl rollout status command stated: the last line
// it printed (with a watch, earlier lines are earlier states).
type Rollout struct {
	Kind      string // Deployment, DaemonSet or StatefulSet
	Namespace string // from -n; empty when the command did not say
	Name      string
	Line      int    // 1-based line of the status
	Command   string // the command line, without "$ "
	Status    string // the line, verbatim (without kubectl's "error: ")
	// Done: "successfully rolled out", "rolling update complete",
	// "partitioned roll out complete".
	Done bool
	// DeadlineExceeded: "exceeded its progress deadline" (kubectl read it
	// from the Progressing condition, False, ProgressDeadlineExceeded).
	DeadlineExceeded bool
	// Updated, Available and Desired are the counts the line states
	// (updated replicas or pods, available ones, desired ones); -1 when it
	// does not state them.
	Updated, Available, Desired int32
}

// rolloutLine is one line kubectl rollout status prints (kubectl's
// polymorphichelpers status viewers); set records the counts it states.
type rolloutLine struct {
	re  *regexp.Regexp
	set func(r *Rollout, m []int32)
}

// klogRe matches kubectl's own log lines (W0314 10:02:03.123456 ...).
var klogRe = regexp.MustCompile(`^[IWEF]\d{4} \d{2}:\d{2}:\d{2}\.\d+ `)

func updatedOfDesired(r *Rollout, m []int32)   { r.Updated, r.Desired = m[0], m[1] }
func availableOfUpdated(r *Rollout, m []int32) { r.Available, r.Updated = m[0], m[1] }
func done(r *Rollout, _ []int32)               { r.Done = true }

var rolloutLines = map[string][]rolloutLine{
	"Deployment": {
		{regexp.MustCompile(`^Waiting for deployment "[^"]*" rollout to finish: (\d+) out of (\d+) new replicas have been updated\.\.\.$`), updatedOfDesired},
		{regexp.MustCompile(`^Waiting for deployment "[^"]*" rollout to finish: (\d+) of (\d+) updated replicas are available\.\.\.$`), availableOfUpdated},
		{regexp.MustCompile(`^Waiting for deployment "[^"]*" rollout to finish: \d+ old replicas are pending termination\.\.\.$`), nil},
		{regexp.MustCompile(`^Waiting for deployment spec update to be observed\.\.\.$`), nil},
		{regexp.MustCompile(`^deployment "[^"]*" successfully rolled out$`), done},
		{regexp.MustCompile(`^error: deployment "[^"]*" exceeded its progress deadline$`), func(r *Rollout, _ []int32) { r.DeadlineExceeded = true }},
	},
	"DaemonSet": {
		// pods: updated of desired scheduled, available of desired scheduled
		{regexp.MustCompile(`^Waiting for daemon set "[^"]*" rollout to finish: (\d+) out of (\d+) new pods have been updated\.\.\.$`), updatedOfDesired},
		{regexp.MustCompile(`^Waiting for daemon set "[^"]*" rollout to finish: (\d+) of (\d+) updated pods are available\.\.\.$`),
			func(r *Rollout, m []int32) { r.Available, r.Desired = m[0], m[1] }},
		{regexp.MustCompile(`^Waiting for daemon set spec update to be observed\.\.\.$`), nil},
		{regexp.MustCompile(`^daemon set "[^"]*" successfully rolled out$`), done},
	},
	"StatefulSet": {
		{regexp.MustCompile(`^Waiting for \d+ pods to be ready\.\.\.$`), nil},
		{regexp.MustCompile(`^Waiting for partitioned roll out to finish: (\d+) out of \d+ new pods have been updated\.\.\.$`),
			func(r *Rollout, m []int32) { r.Updated = m[0] }},
		{regexp.MustCompile(`^partitioned roll out complete: (\d+) new pods have been updated\.\.\.$`),
			func(r *Rollout, m []int32) { r.Updated, r.Done = m[0], true }},
		{regexp.MustCompile(`^Waiting for statefulset rolling update to complete \d+ pods at revision \S+\.\.\.$`), nil},
		{regexp.MustCompile(`^statefulset rolling update complete (\d+) pods at revision \S+\.\.\.$`),
			func(r *Rollout, m []int32) { r.Updated, r.Done = m[0], true }},
		{regexp.MustCompile(`^Waiting for statefulset spec update to be observed\.\.\.$`), nil},
	},
}

// rollout reads kubectl rollout status into a Rollout and rollout history
// into a History. The one-line answers of the other rollout subcommands
// (restart, undo, pause, resume) are kept as text.
func (p *parser) rollout(c *command, out []string, line int) {
	sub := ""
	if len(c.args) > 0 {
		sub = c.args[0]
	}
	switch sub {
	case "status":
	case "history":
		p.history(c, out, line)
		return
	default:
		p.keepText(c.text, c, out, line)
		return
	}
	cc := *c
	cc.args = c.args[1:]
	ts := cc.targets()
	if len(ts) != 1 || ts[0].name == "" || rolloutLines[ts[0].kind] == nil {
		p.skip(line, c.text, "kubectl rollout status of one deployment, daemon set or stateful set is read")
		return
	}
	for i := len(out) - 1; i >= 0; i-- {
		l := strings.TrimSpace(out[i])
		if l == "" || strings.HasPrefix(l, "error: timed out waiting") || klogRe.MatchString(l) {
			continue // kubectl's timeout and klog warnings follow the last state
		}
		for _, rl := range rolloutLines[ts[0].kind] {
			sm := rl.re.FindStringSubmatch(l)
			if sm == nil {
				continue
			}
			r := Rollout{Kind: ts[0].kind, Namespace: c.ns(), Name: ts[0].name, Line: line + 1 + i, Command: c.text,
				Status: strings.TrimPrefix(l, "error: "), Updated: -1, Available: -1, Desired: -1}
			var nums []int32
			for _, s := range sm[1:] {
				if n, ok := atoi32(s); ok {
					nums = append(nums, n)
				}
			}
			if rl.set != nil && len(nums) == len(sm)-1 {
				rl.set(&r, nums)
			}
			if len(p.res.Rollouts) < MaxObjects {
				p.res.Rollouts = append(p.res.Rollouts, r)
			}
			return
		}
		if strings.HasPrefix(l, "error:") || strings.HasPrefix(l, "Error from server") {
			p.skip(line, c.text, "kubectl answered an error: "+l)
		} else {
			p.skip(line+1+i, c.text, "rollout status line not understood")
		}
		return
	}
	p.skip(line, c.text, "no rollout status line")
}

// applyRollouts puts each rollout status on the transcript's copy of its
// workload (a describe page, a table row, -o yaml): the line in
// RolloutAnnotation, and a deadline exceeded as the Progressing condition
// when the copy shows no conditions. A status line alone makes no object:
// it leaves replicas and availability unknown, which an object cannot tell
// from zero.
func (p *parser) applyRollouts() {
	for _, r := range p.res.Rollouts {
		k, ok := p.findObject(r.Kind, r.Namespace, r.Name)
		if !ok {
			continue
		}
		meta := metav1.ObjectMeta{Name: r.Name, Namespace: k.ns, Annotations: map[string]string{RolloutAnnotation: r.Status}}
		var obj runtime.Object
		switch r.Kind {
		case "Deployment":
			d := &appsv1.Deployment{TypeMeta: typeMeta(r.Kind), ObjectMeta: meta}
			if r.DeadlineExceeded {
				d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing,
					Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded"}}
			}
			obj = d
		case "DaemonSet":
			obj = &appsv1.DaemonSet{TypeMeta: typeMeta(r.Kind), ObjectMeta: meta}
		default:
			obj = &appsv1.StatefulSet{TypeMeta: typeMeta(r.Kind), ObjectMeta: meta}
		}
		p.add(r.Kind, k.ns, r.Name, "rollout-status", obj)
	}
}

// findObject finds the key of an object read: by kind, namespace and name,
// or, for a command that named no namespace, by kind and name when one
// object only has them.
func (p *parser) findObject(kind, ns, name string) (objKey, bool) {
	if _, ok := p.objs[objKey{kind, ns, name}]; ok {
		return objKey{kind, ns, name}, true
	}
	if ns != "" {
		return objKey{}, false
	}
	var found []objKey
	for k := range p.objs {
		if k.kind == kind && k.name == name {
			found = append(found, k)
		}
	}
	if len(found) != 1 {
		return objKey{}, false
	}
	return found[0], true
}
