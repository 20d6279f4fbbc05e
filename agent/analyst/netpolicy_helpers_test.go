package analyst

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/rootcause/rootcause/agent/analysis"
)

// Builders shared by the NetworkPolicy mechanisms' tests.

var (
	egressOnly       = []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}
	ingressOnly      = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
	ingressAndEgress = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}
)

// npPort is a policy port: proto and a port number.
func npPort(proto corev1.Protocol, n int32) networkingv1.NetworkPolicyPort {
	p := intstr.FromInt32(n)
	return networkingv1.NetworkPolicyPort{Protocol: &proto, Port: &p}
}

// npNamedPort is a policy port: proto and a container port's name.
func npNamedPort(proto corev1.Protocol, name string) networkingv1.NetworkPolicyPort {
	p := intstr.FromString(name)
	return networkingv1.NetworkPolicyPort{Protocol: &proto, Port: &p}
}

// npNamespace selects the namespace ns by its kubernetes.io/metadata.name label.
func npNamespace(ns string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}}
}

// npPolicy is the NetworkPolicy ns/name over the pods labelled sel (every
// pod of ns when sel is nil), of the given policy types and egress rules,
// created 2026-03-02 09:00 UTC.
func npPolicy(ns, name string, sel map[string]string, types []networkingv1.PolicyType, egress ...networkingv1.NetworkPolicyEgressRule) networkingv1.NetworkPolicy {
	np := networkingv1.NetworkPolicy{Spec: networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: sel}, PolicyTypes: types, Egress: egress}}
	np.Name, np.Namespace = name, ns
	np.CreationTimestamp = metav1.NewTime(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
	return np
}

// npPod is the pod ns/name labelled app=app.
func npPod(ns, name, app string) corev1.Pod {
	p := corev1.Pod{}
	p.Name, p.Namespace, p.Labels = name, ns, map[string]string{"app": app}
	return p
}

// podLogs is the log set of pod p read as subject's: each line one
// template seen n times in the incident, first at first.
func podLogs(p corev1.Pod, subject string, n int, first time.Time, lines ...string) LogSet {
	set := LogSet{Source: p.Name, Subject: subject, Namespace: p.Namespace}
	for _, l := range lines {
		set.Templates = append(set.Templates, analysis.LogTemplate{Template: l, Example: l, Count: n, Incident: n, FirstSeen: first})
	}
	return set
}
