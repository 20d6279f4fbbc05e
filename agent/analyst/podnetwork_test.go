package analyst

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// TestPodNetworkEvents: sandboxes that fail on their network are claimed
// whatever the CNI (AWS VPC CNI, host-local, Calico, Cilium, Azure CNI),
// an IPAM out of addresses is told apart from another CNI failure, and a
// sandbox that fails on something else (its pause image) is not claimed.
func TestPodNetworkEvents(t *testing.T) {
	cases := []struct {
		msg, plugin string
		ok, noIP    bool
	}{
		{`Failed to create pod sandbox: rpc error: code = Unknown desc = failed to setup network for sandbox "6f1e0c2a9b8d": plugin type="aws-cni" name="aws-cni" failed (add): add cmd: failed to assign an IP address to container`, "aws-cni", true, true},
		{`Failed to create pod sandbox: rpc error: code = Unknown desc = failed to setup network for sandbox "0b8e": plugin type="bridge" failed (add): failed to allocate for range 0: no IP addresses available in range set: 10.244.1.1-10.244.1.254`, "bridge", true, true},
		{`Failed to create pod sandbox: rpc error: code = Unknown desc = failed to setup network for sandbox "9a1c": plugin type="cilium-cni" failed (add): unable to allocate IP via local cilium agent: [POST /ipam][502] postIpamFailure  range is full`, "cilium-cni", true, true},
		{`Failed to create pod sandbox: rpc error: code = Unknown desc = failed to setup network for sandbox "77d1": plugin type="azure-vnet" failed (add): IPAM Invoker Add failed with error: Failed to get IP address from CNS: No available IP addresses`, "azure-vnet", true, true},
		{`Failed to create pod sandbox: rpc error: code = Unknown desc = failed to setup network for sandbox "3c2e": plugin type="calico" failed (add): error getting ClusterInformation: connection is unauthorized: Unauthorized`, "calico", true, false},
		{`Failed to create pod sandbox: rpc error: code = Unknown desc = failed to get sandbox image "registry.k8s.io/pause:3.9": failed to pull image "registry.k8s.io/pause:3.9": i/o timeout`, "", false, false},
	}
	for _, c := range cases {
		e := &corev1.Event{Type: "Warning", Reason: "FailedCreatePodSandBox", Message: c.msg}
		_, ok := podNetworkEvent(e)
		f := Finding{}
		if ok {
			podNetwork.eventFacts(&f, e)
		}
		if ok != c.ok || f.fact("plugin") != c.plugin || (f.fact("no_ip") != "") != c.noIP {
			t.Errorf("%.70q: claimed %v plugin %q no_ip %q, want %v %q %v", c.msg, ok, f.fact("plugin"), f.fact("no_ip"), c.ok, c.plugin, c.noIP)
		}
	}
	if _, ok := podNetworkEvent(&corev1.Event{Reason: "FailedMount", Message: "failed to setup network for sandbox"}); ok {
		t.Error("a FailedMount event is claimed")
	}
}

// TestExhaustedSubnet: aws ec2 describe-subnets as a table, as text and
// as JSON names the subnet with no free address; subnets with addresses
// left are none.
func TestExhaustedSubnet(t *testing.T) {
	cases := []struct {
		name  string
		lines []string
		id    string
	}{
		{"table", []string{
			"|  subnet-0c41d2a9e7b3f1a55 |  eu-west-1a |  10.40.12.0/22  |  0        |",
			"|  subnet-07e2b9c4d1a8f3e60 |  eu-west-1b |  10.40.24.0/22  |  611      |"}, "subnet-0c41d2a9e7b3f1a55"},
		{"text", []string{"subnet-07e2b9c4d1a8f3e60\teu-west-1b\t10.40.24.0/22\t611", "subnet-0aa1\tus-east-1c\t10.1.8.0/24\t3"}, "subnet-0aa1"},
		{"json", strings.Split(`{"Subnets": [
  {"AvailabilityZone": "eu-west-1a", "AvailableIpAddressCount": 0, "CidrBlock": "10.40.12.0/22", "SubnetId": "subnet-0c41d2a9e7b3f1a55"},
  {"AvailabilityZone": "eu-west-1b", "AvailableIpAddressCount": 611, "CidrBlock": "10.40.24.0/22", "SubnetId": "subnet-07e2b9c4d1a8f3e60"}]}`, "\n"), "subnet-0c41d2a9e7b3f1a55"},
		{"all with room", []string{"|  subnet-07e2b9c4d1a8f3e60 |  eu-west-1b |  10.40.24.0/22  |  611      |"}, ""},
	}
	for _, c := range cases {
		ev := &Gathered{Commands: []evidence.CommandOutput{{Command: "aws ec2 describe-subnets --output " + c.name, Lines: c.lines}}}
		if id, said := exhaustedSubnet(ev); id != c.id || c.id != "" && !strings.Contains(said, "free IP address") {
			t.Errorf("%s: subnet %q (%s), want %q", c.name, id, said, c.id)
		}
	}
}

// TestPodNetworkRefine: the subnet and the IPAM daemon's line name the
// exhausted addresses; only a change that names the subnet or takes
// addresses triggers it, not the workload's own scale-up.
func TestPodNetworkRefine(t *testing.T) {
	f := Finding{Kind: KindPodNetwork, Subject: "orders-worker", Object: "pod orders/orders-worker-7d5c8f9b6-c4r8k", Weight: 0.88,
		Related: []string{"ip-10-40-13-201.eu-west-1.compute.internal"}}
	f.setFact("plugin", "aws-cni")
	f.setFact("cni_error", "add cmd: failed to assign an IP address to container")
	ipamd := LogSet{Source: "aws-node-7xk2p", Subject: "aws-node", Templates: []analysis.LogTemplate{{Incident: 3, Count: 3,
		Example: `{"level":"error","ts":"2026-11-24T11:04:58.861Z","caller":"ipamd/ipamd.go:931","msg":"Failed to allocate a private IP addresses on ENI eni-0f19e6d2b7c3a4e85: InsufficientFreeAddressesInSubnet: The specified subnet does not have enough free addresses to satisfy the request."}`}}}
	ev := &Gathered{Logs: []LogSet{ipamd}, Commands: []evidence.CommandOutput{{Command: "aws ec2 describe-subnets --output table",
		Lines: []string{"|  subnet-0c41d2a9e7b3f1a55 |  eu-west-1a |  10.40.12.0/22  |  0        |"}}}}
	found := []Finding{f}
	refinePodNetwork(ev, found)
	h := &Hypothesis{Kind: KindPodNetwork, Subject: "orders-worker", Primary: []*Finding{&found[0]}}
	wantDescribed(t, h, Scope{}, "orders-worker pods stay in ContainerCreating", "aws-cni", "no IP address is left", "subnet subnet-0c41d2a9e7b3f1a55 (eu-west-1a, 10.40.12.0/22) has 0 free IP addresses", "InsufficientFreeAddressesInSubnet", "ip-10-40-13-201")
	if found[0].Weight < 0.95 {
		t.Errorf("weight %v: the subnet's own count is direct evidence", found[0].Weight)
	}
	for desc, want := range map[string]bool{
		"data-platform: spark-batch EC2 fleet for quarterly reprocessing, 58 x r6i.2xlarge in private-a (subnet-0c41d2a9e7b3f1a55)": true,
		"aws-node: WARM_IP_TARGET 2 -> 16":                 true,
		"HPA orders-worker scaled 6 -> 12 on queue depth":  false,
		"orders-api v3.18.2: order history pagination fix": false,
	} {
		c := &Finding{Kind: KindInfraChange, Subject: "x", Facts: map[string]string{"description": desc}}
		if got := podNetwork.fitsChange(h, c); got != want {
			t.Errorf("fitsChange(%q) = %v, want %v", desc, got, want)
		}
	}
}

// TestCNIAgentDown: the CNI agent that does not run on the failing pod's
// node is found by its label or name (calico/node, the VPC CNI's
// aws-node, Cilium, flannel) among the pods read, with the warning or
// error lines of its log as each prints them; INFO lines are not read,
// an agent that runs is none, and an agent down on another node is not
// the pod's.
func TestCNIAgentDown(t *testing.T) {
	crash := corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "agent", RestartCount: 7,
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}}}
	running := corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "agent", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}
	pod := func(name string, labels map[string]string, node string, st corev1.PodStatus) corev1.Pod {
		p := corev1.Pod{Spec: corev1.PodSpec{NodeName: node}, Status: st}
		p.Name, p.Namespace, p.Labels = name, "kube-system", labels
		return p
	}
	cases := []struct {
		name  string
		agent corev1.Pod
		lines []string
		want  string // a word of the line said ("" when no agent is found)
	}{
		{"calico", pod("calico-node-x7k2p", map[string]string{"k8s-app": "calico-node"}, "w1", crash), []string{
			"2026-03-02 08:14:40.513 [INFO][9] startup/customresource.go 102: Error getting resource Key=GlobalFelixConfig(name=CalicoVersion) error=the server could not find the requested resource",
			"2026-03-02 08:14:40.592 [WARNING][9] startup/autodetection_methods.go 143: Unable to auto-detect an IPv4 address using interface regexes [eth0]: no valid host interfaces found"}, "interface regexes [eth0]"},
		{"aws-node", pod("aws-node-5hq9m", map[string]string{"k8s-app": "aws-node"}, "w1", crash), []string{
			`{"level":"info","ts":"2026-03-02T08:14:40.100Z","caller":"entrypoint.sh","msg":"Validating env variables ..."}`,
			`{"level":"error","ts":"2026-03-02T08:14:41.200Z","caller":"ipamd/ipamd.go:467","msg":"Failed to call ec2:DescribeNetworkInterfaces: UnauthorizedOperation"}`}, "UnauthorizedOperation"},
		{"cilium", pod("cilium-4mzt8", map[string]string{"k8s-app": "cilium"}, "w1", crash), []string{
			`time="2026-03-02T08:14:40Z" level=info msg="Memory available for map entries" subsys=config`,
			`time="2026-03-02T08:14:41Z" level=fatal msg="Unable to initialize Kubernetes subsystem" error="unable to create k8s client: dial tcp 10.96.0.1:443: i/o timeout" subsys=daemon`}, "Kubernetes subsystem"},
		{"flannel", pod("kube-flannel-ds-8v7dn", map[string]string{"app": "flannel"}, "w1", crash), []string{
			"I0302 08:14:40.100123       1 main.go:211] CLI flags config: {etcdEndpoints:http://127.0.0.1:4001 iface:[eth1]}",
			"E0302 08:14:40.200456       1 main.go:335] Error registering network: failed to find interface: eth1"}, "failed to find interface"},
		{"running agent", pod("calico-node-ok", map[string]string{"k8s-app": "calico-node"}, "w1", running), nil, ""},
		{"other node", pod("calico-node-far", map[string]string{"k8s-app": "calico-node"}, "w9", crash), nil, ""},
		{"not an agent", pod("fluent-bit-2xk", map[string]string{"k8s-app": "fluent-bit"}, "w1", crash), nil, ""},
	}
	for _, c := range cases {
		ev := &Gathered{K8s: K8sEvidence{NodeAgents: []corev1.Pod{c.agent}}}
		var ts []analysis.LogTemplate
		for _, l := range c.lines {
			ts = append(ts, analysis.LogTemplate{Template: l, Example: l, Count: 1, Incident: 1})
		}
		ev.Logs = []LogSet{{Source: c.agent.Name, Namespace: "kube-system", Templates: ts}}
		a := cniAgentDown(ev, "w1")
		said := strings.Join(a.said, " / ")
		switch {
		case c.want == "" && a.pod != "":
			t.Errorf("%s: found agent %s", c.name, a.pod)
		case c.want != "" && (a.pod != c.agent.Name || !strings.Contains(said, c.want) || strings.Contains(strings.ToLower(said), "info")):
			t.Errorf("%s: agent %q said %q, want %s saying %q", c.name, a.pod, said, c.agent.Name, c.want)
		}
	}
}
