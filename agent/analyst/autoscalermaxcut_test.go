package analyst

import (
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// An autoscaler pinned at the maximum a change cut it to, as a KEDA
// ScaledObject's or an HPA's change says it (maxReplicaCount 12 -> 4,
// maxReplicas: 20 → 8, max replicas from 10 to 3), a day before the peak
// that reached it: the cut is the cause, and the queue the ScaledObject
// watches backing up is what it did. A maximum raised, a cut to another
// value than the one reached, or one weeks old is not this.
func TestDetectAutoscalerCapCut(t *testing.T) {
	at := win.Start.Add(20 * time.Minute)
	hpa := func(subject, max string) Finding {
		f := Finding{Kind: KindHPAMax, Subject: subject, Object: "hpa shop/" + subject, Time: at, Weight: 0.92, Summary: "HPA " + subject + " at its maximum of " + max + " replicas"}
		f.setFact("max_replicas", max)
		f.setFact("reached_max", ts(at))
		return f
	}
	backlog := Finding{Kind: KindBacklog, Subject: "slots.compute", Time: at.Add(5 * time.Minute), Summary: "queue backlog of slots.compute grows from 2 to 7650"}
	so := evidence.CommandOutput{Command: "kubectl get scaledobject slotter -n shop -o yaml", Lines: []string{
		"spec:", "  maxReplicaCount: 4", "  scaleTargetRef:", "    name: slotter", "  triggers:", "  - metadata:", "      mode: QueueLength", "      queueName: slots.compute", `      value: "50"`, "    type: rabbitmq",
	}}
	day := at.Add(-25 * time.Hour)
	cases := []struct {
		name    string
		found   []Finding
		change  evidence.Change
		earlier bool
		cmds    []evidence.CommandOutput
		subject string
		was     string
		queue   string
	}{
		{"KEDA ScaledObject cut a day before, its queue backing up", []Finding{hpa("slotter", "4"), backlog},
			evidence.Change{Timestamp: day, Service: "slotter", Kind: "config", Description: "FinOps right-sizing: slotter ScaledObject maxReplicaCount 12 -> 4"}, true, []evidence.CommandOutput{so}, "slotter", "12", "slots.compute"},
		{"an HPA's maxReplicas in the window, named in a platform change", []Finding{hpa("search", "8")},
			evidence.Change{Timestamp: at.Add(-40 * time.Minute), Service: "platform-values", Kind: "config", Description: "search: hpa maxReplicas: 20 → 8 (cost review)"}, false, nil, "search", "20", ""},
		{"max replicas from 10 to 3", []Finding{hpa("render", "3")},
			evidence.Change{Timestamp: day, Service: "render", Kind: "config", Description: "render: lower max replicas from 10 to 3"}, true, nil, "render", "10", ""},
		{"a maximum raised", []Finding{hpa("render", "10")},
			evidence.Change{Timestamp: day, Service: "render", Kind: "config", Description: "render: max replicas from 3 to 10"}, true, nil, "", "", ""},
		{"a cut to another value than the one reached", []Finding{hpa("render", "6")},
			evidence.Change{Timestamp: day, Service: "render", Kind: "config", Description: "render: maxReplicas 10 -> 3"}, true, nil, "", "", ""},
		{"a cut weeks old", []Finding{hpa("render", "3")},
			evidence.Change{Timestamp: at.Add(-20 * 24 * time.Hour), Service: "render", Kind: "config", Description: "render: maxReplicas 10 -> 3"}, true, nil, "", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Commands: c.cmds, Window: win}
			if c.earlier {
				ev.Earlier = []evidence.Change{c.change}
			} else {
				ev.Changes = []evidence.Change{c.change}
			}
			f := onlyFinding(t, detectAutoscalerCapCut(ev, c.found), c.subject)
			if f == nil {
				return
			}
			if f.fact("was") != c.was || f.fact("queue") != c.queue {
				t.Errorf("was %q queue %q", f.fact("was"), f.fact("queue"))
			}
			h := &Hypothesis{Kind: KindAutoscalerCapCut, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, "autoscaler maximum was cut from "+c.was, c.queue)
			for i := range c.found {
				if g := &c.found[i]; !autoscalerCapCut.related(h, g) {
					t.Errorf("%s of %s not related", g.Kind, g.Subject)
				}
			}
		})
	}
}
