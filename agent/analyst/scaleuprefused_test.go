package analyst

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestScaleUpRefusedEvents: the cluster autoscaler's failed scale-ups on
// AWS, GCE and Azure and its backoff after one are claimed, with the
// refusal named; FailedScheduling, a scale-up triggered and a pod that
// fits no node group are not.
func TestScaleUpRefusedEvents(t *testing.T) {
	cases := []struct {
		typ, reason, msg string
		ok               bool
		code             string
	}{
		{"Warning", "FailedScaleUp", "Node scale up in zones eu-west-1a, eu-west-1b, eu-west-1c associated with this pod failed: Other: VcpuLimitExceeded. Pod is at risk of not being scheduled.", true, "VcpuLimitExceeded"},
		{"Warning", "FailedScaleUp", "Node scale up in zones us-central1-b associated with this pod failed: GCE quota exceeded. Pod is at risk of not being scheduled.", true, "QUOTA_EXCEEDED"},
		{"Warning", "FailedScaleUp", "Node scale up in zones us-central1-a associated with this pod failed: GCE out of resources. Pod is at risk of not being scheduled.", true, "ZONE_RESOURCE_POOL_EXHAUSTED"},
		{"Warning", "FailedScaleUp", "Node scale up in zones eu-west-1b associated with this pod failed: Other: InsufficientInstanceCapacity. Pod is at risk of not being scheduled.", true, "InsufficientInstanceCapacity"},
		{"Warning", "FailedScaleUp", "Node scale up in zones westeurope-1 associated with this pod failed: Other: SkuNotAvailable. Pod is at risk of not being scheduled.", true, "SkuNotAvailable"},
		{"Normal", "NotTriggerScaleUp", "pod didn't trigger scale-up: 1 in backoff after failed scale-up, 12 node(s) didn't match Pod's node affinity/selector", true, ""},
		{"Normal", "NotTriggerScaleUp", "pod didn't trigger scale-up: 1 max node group size reached", false, ""},
		{"Normal", "NotTriggerScaleUp", "pod didn't trigger scale-up: 3 node(s) didn't match Pod's node affinity/selector", false, ""},
		{"Normal", "TriggeredScaleUp", "pod triggered scale-up: [{eks-gpu-g5-2xl-20241108093012345600000012 4->10 (max: 16)}]", false, ""},
		{"Warning", "FailedScheduling", "0/16 nodes are available: 4 Insufficient nvidia.com/gpu, 12 node(s) didn't match Pod's node affinity/selector.", false, ""},
	}
	for _, c := range cases {
		e := &corev1.Event{Type: c.typ, Reason: c.reason, Message: c.msg}
		_, ok := scaleUpRefusedEvent(e)
		code, _ := scaleUpRefusal(c.msg)
		if ok != c.ok || ok && code != c.code {
			t.Errorf("%s %.60q: claimed %v code %q, want %v %q", c.reason, c.msg, ok, code, c.ok, c.code)
		}
	}
}

// TestScaleUpRefusedDescribe: the refusal and the quota the cloud's CLI
// reports (text or JSON) are said; the Pending pods are related; only a
// change of capacity (a node group, a fleet) triggers it, not the
// workload's own scaling.
func TestScaleUpRefusedDescribe(t *testing.T) {
	for _, cmd := range []evidence.CommandOutput{
		{Command: "aws service-quotas get-service-quota --service-code ec2 --quota-code L-DB2E81BA --query 'Quota.[QuotaName,Value]' --output text", Lines: []string{"Running On-Demand G and VT instances\t64.0"}},
		{Command: "aws service-quotas get-service-quota --service-code ec2 --quota-code L-DB2E81BA", Lines: strings.Split(`{
    "Quota": {
        "ServiceCode": "ec2",
        "QuotaName": "Running On-Demand G and VT instances",
        "Value": 64.0
    }
}`, "\n")},
	} {
		f := Finding{Kind: KindScaleUpRefused, Subject: "video-transcoder", Weight: 0.92}
		f.setFact("message", "Node scale up in zones eu-west-1a associated with this pod failed: Other: VcpuLimitExceeded. Pod is at risk of not being scheduled.")
		code, words := scaleUpRefusal(f.fact("message"))
		f.setFact("code", code)
		f.setFact("refusal", words)
		f.Object = "pod media/video-transcoder-5c7d9b8f64-8hk4p"
		found := []Finding{f}
		triggered := corev1.Event{Reason: "TriggeredScaleUp", Message: "pod triggered scale-up: [{eks-gpu-g5-2xl-20241108093012345600000012 4->10 (max: 16)}]",
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "media", Name: "video-transcoder-5c7d9b8f64-8hk4p"}}
		scaleUpRefused.detect(&Gathered{Commands: []evidence.CommandOutput{cmd}, K8s: K8sEvidence{Events: []corev1.Event{triggered}}}, found)
		h := &Hypothesis{Kind: KindScaleUpRefused, Subject: "video-transcoder", Primary: []*Finding{&found[0]}}
		wantDescribed(t, h, Scope{}, "video-transcoder pods stay Pending", "VcpuLimitExceeded", "node group eks-gpu-g5-2xl-20241108093012345600000012 (4->10, max 16)", "vCPU service quota", `quota "Running On-Demand G and VT instances" is 64`)
		if !scaleUpRefused.related(h, &Finding{Kind: KindUnschedulable, Subject: "video-transcoder"}) {
			t.Error("the Pending pods are not related")
		}
	}
	h := &Hypothesis{Kind: KindScaleUpRefused, Subject: "video-transcoder"}
	for desc, want := range map[string]bool{
		"ml-platform: new node group gpu-g5-4xl (2 x g5.4xlarge, min 2) for embedding backfill": true,
		"data-platform: spark-batch EC2 fleet, 58 x r6i.2xlarge":                                true,
		"KEDA ScaledObject video-transcoder: sqs queue depth 2400 -> scale to 10":               false,
		"media-api 8.2.1: upload size limit message":                                            false,
	} {
		c := &Finding{Kind: KindConfigChange, Subject: "x", Facts: map[string]string{"description": desc}}
		if got := scaleUpRefused.fitsChange(h, c); got != want {
			t.Errorf("fitsChange(%q) = %v, want %v", desc, got, want)
		}
	}
}

// TestScaleUpRefusedReason: when the pods carry only the backoff
// ("in backoff after failed scale-up"), the refusal is read from where the
// cloud said it: the cluster autoscaler's log, an auto scaling group's
// activities (JSON and text output), GCE's and Azure's messages.
func TestScaleUpRefusedReason(t *testing.T) {
	cases := []struct {
		cmd   evidence.CommandOutput
		code  string
		wants []string
	}{
		{evidence.CommandOutput{Command: "kubectl -n kube-system logs deploy/cluster-autoscaler", Lines: []string{
			`I0312 14:02:11.120045       1 orchestrator.go:582] Final scale-up plan: [{eks-batch-m5-2xl-1b-20250104 2->5 (max: 10)}]`,
			`I0312 14:04:40.258033       1 auto_scaling_groups.go:472] ASG eks-batch-m5-2xl-1b-20250104 has unfulfillable placeholders, scaling activity: Launching a new EC2 instance.  Status Reason: We currently do not have sufficient m5.2xlarge capacity in the Availability Zone you requested (us-east-1b). Our system will be working on provisioning additional capacity.`,
		}}, "InsufficientInstanceCapacity", []string{"insufficient m5.2xlarge capacity", "us-east-1b"}},
		{evidence.CommandOutput{Command: "aws autoscaling describe-scaling-activities --auto-scaling-group-name gpu-workers", Lines: strings.Split(`{
    "Activities": [
        {
            "StartTime": "2025-03-12T14:04:39.110000+00:00",
            "StatusCode": "Failed",
            "StatusMessage": "We currently do not have sufficient g5.xlarge capacity in the Availability Zone you requested (eu-central-1c). Our system will be working on provisioning additional capacity. Launching EC2 instance failed."
        }
    ]
}`, "\n")}, "InsufficientInstanceCapacity", []string{"insufficient g5.xlarge capacity", "eu-central-1c"}},
		{evidence.CommandOutput{Command: "aws autoscaling describe-scaling-activities --auto-scaling-group-name gpu-workers --output text", Lines: []string{
			"ACTIVITIES\t2f0c…\tgpu-workers\tAt 2025-03-12T14:03:50Z a user request update of AutoScalingGroup constraints\tLaunching a new EC2 instance.  Status Reason: Could not launch On-Demand Instances. VcpuLimitExceeded - You have requested more vCPU capacity than your current vCPU limit of 64 allows.\t100\t2025-03-12T14:04:39Z\tFailed",
		}}, "VcpuLimitExceeded", []string{"vCPU service quota"}},
		{evidence.CommandOutput{Command: "gcloud compute operations list --filter=status=DONE", Lines: []string{
			"operation-1741788279: The zone 'projects/shop-prod/zones/us-central1-a' does not have enough resources available to fulfill the request.  Try a different zone, or try again later.",
		}}, "ZONE_RESOURCE_POOL_EXHAUSTED", []string{"ZONE_RESOURCE_POOL_EXHAUSTED"}},
		{evidence.CommandOutput{Command: "az vmss list-instances -g aks-nodes -n aks-gpu-12345678-vmss", Lines: []string{
			"Code: AllocationFailed Message: Allocation failed. We do not have sufficient capacity for the requested VM size in this region.",
		}}, "SkuNotAvailable", []string{"insufficient capacity for the VM size"}},
	}
	for _, c := range cases {
		f := Finding{Kind: KindScaleUpRefused, Subject: "batch-runner", Weight: 0.8, Object: "pod jobs/batch-runner-6d8f7c9b5-x2k4q"}
		f.setFact("message", "pod didn't trigger scale-up: 1 in backoff after failed scale-up, 4 node(s) didn't match Pod's node affinity/selector")
		found := []Finding{f}
		scaleUpRefused.detect(&Gathered{Commands: []evidence.CommandOutput{c.cmd}}, found)
		if got := found[0].fact("code"); got != c.code {
			t.Errorf("%s: code %q, want %q", c.cmd.Command, got, c.code)
			continue
		}
		h := &Hypothesis{Kind: KindScaleUpRefused, Subject: "batch-runner", Primary: []*Finding{&found[0]}}
		d := describe(h, Scope{})
		for _, w := range c.wants {
			if !strings.Contains(d, w) {
				t.Errorf("%s: description lacks %q: %s", c.cmd.Command, w, d)
			}
		}
	}
	// No refusal handed over: nothing is made up.
	f := Finding{Kind: KindScaleUpRefused, Subject: "batch-runner", Weight: 0.8}
	found := []Finding{f}
	scaleUpRefused.detect(&Gathered{Commands: []evidence.CommandOutput{{Command: "kubectl get nodes", Lines: []string{"NAME STATUS", "ip-10-0-1-2 Ready"}}}}, found)
	if found[0].fact("code") != "" {
		t.Errorf("a code without a refusal: %q", found[0].fact("code"))
	}
}
