package analyst

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// Sandbox failures for a runtime handler the node lacks, as containerd and
// CRI-O print them, with the RuntimeClass read from kubectl's table or
// YAML (and its missing scheduling block); a sandbox failing on its
// network is not this.
func TestRuntimeHandler(t *testing.T) {
	cases := []struct {
		msg, handler string
	}{
		{`Failed to create pod sandbox: rpc error: code = Unknown desc = failed to get sandbox runtime: no runtime for "runsc" is configured`, "runsc"},
		{`Failed to create pod sandbox: rpc error: code = Unknown desc = failed to find runtime handler kata-fc from runtime list map[crun:0xc000 runc:0xc000]`, "kata-fc"},
		{`Failed to create pod sandbox: rpc error: code = Unknown desc = RuntimeHandler "nvidia" not supported`, "nvidia"},
		{`Failed to create pod sandbox: rpc error: code = Unknown desc = failed to setup network for sandbox "4f1c": plugin type="aws-cni" name="aws-cni" failed (add): add cmd: failed to assign an IP address to container`, ""},
	}
	for _, c := range cases {
		e := &corev1.Event{Reason: "FailedCreatePodSandBox", Message: c.msg}
		_, ok := runtimeHandler.event(e)
		if ok != (c.handler != "") || handlerOf(c.msg) != c.handler {
			t.Errorf("%q: ok %v handler %q, want %q", c.msg, ok, handlerOf(c.msg), c.handler)
		}
	}

	table := evidence.CommandOutput{Command: "kubectl get runtimeclass", Lines: []string{"NAME     HANDLER   AGE", "gvisor   runsc     55m", "kata     kata-fc   30d"}}
	yaml := evidence.CommandOutput{Command: "kubectl get runtimeclass gvisor -o yaml", Lines: strings.Split(`apiVersion: node.k8s.io/v1
handler: runsc
kind: RuntimeClass
metadata:
  labels:
    helm.sh/chart: platform-addons-1.12.0
  name: gvisor
overhead:
  podFixed:
    cpu: 100m`, "\n")}
	scheduled := evidence.CommandOutput{Command: "kubectl get runtimeclass gvisor -o yaml", Lines: strings.Split(`apiVersion: node.k8s.io/v1
handler: runsc
kind: RuntimeClass
metadata:
  name: gvisor
scheduling:
  nodeSelector:
    sandbox.example.io/runtime: gvisor`, "\n")}
	for _, c := range []struct {
		name         string
		cmds         []evidence.CommandOutput
		class        string
		noScheduling bool
	}{
		{"table only", []evidence.CommandOutput{table}, "gvisor", false},
		{"YAML without scheduling", []evidence.CommandOutput{table, yaml}, "gvisor", true},
		{"YAML with scheduling", []evidence.CommandOutput{scheduled}, "gvisor", false},
		{"no RuntimeClass shown", nil, "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			found := []Finding{{Kind: KindRuntimeHandler, Subject: "code-exec", Facts: map[string]string{"handler": "runsc", "message": cases[0].msg}}}
			refineRuntimeHandler(&Gathered{Commands: c.cmds}, found)
			f := found[0]
			if f.fact("runtimeclass") != c.class || (f.fact("no_scheduling") != "") != c.noScheduling {
				t.Fatalf("runtimeclass %q no_scheduling %q, want %q %v", f.fact("runtimeclass"), f.fact("no_scheduling"), c.class, c.noScheduling)
			}
			want := []string{`runtime handler "runsc"`, "no runtime for"}
			if c.noScheduling {
				want = append(want, "sets no scheduling")
			}
			wantDescribed(t, &Hypothesis{Kind: KindRuntimeHandler, Subject: "code-exec", Primary: []*Finding{&f}}, Scope{}, want...)
		})
	}
}
