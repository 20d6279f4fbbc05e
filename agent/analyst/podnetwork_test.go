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
	d := describe(h, Scope{})
	for _, want := range []string{"orders-worker pods stay in ContainerCreating", "aws-cni", "no IP address is left", "subnet subnet-0c41d2a9e7b3f1a55 (eu-west-1a, 10.40.12.0/22) has 0 free IP addresses", "InsufficientFreeAddressesInSubnet", "ip-10-40-13-201"} {
		if !strings.Contains(d, want) {
			t.Errorf("description lacks %q: %s", want, d)
		}
	}
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
