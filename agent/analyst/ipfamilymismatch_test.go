package analyst

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// TestListenFamilies reads ss and netstat listings: an IPv4 wildcard alone
// is IPv4 only; "*", "[::]" and ":::" accept both families; a loopback
// socket does not count.
func TestListenFamilies(t *testing.T) {
	for _, c := range []struct {
		name   string
		lines  []string
		v4, v6 bool
	}{
		{"ss -ltn, IPv4 wildcard", []string{"State  Recv-Q Send-Q Local Address:Port  Peer Address:Port Process", "LISTEN 0      511          0.0.0.0:8080       0.0.0.0:*"}, true, false},
		{"ss -ltn, any address", []string{"LISTEN 0      4096               *:8080             *:*"}, true, true},
		{"ss -ltnp, IPv6 wildcard", []string{`LISTEN 0      511             [::]:8080          [::]:*    users:(("node",pid=1,fd=21))`}, true, true},
		{"netstat -tln, IPv4 only", []string{"Proto Recv-Q Send-Q Local Address           Foreign Address         State", "tcp        0      0 0.0.0.0:8080            0.0.0.0:*               LISTEN"}, true, false},
		{"netstat -tln, tcp6", []string{"tcp        0      0 0.0.0.0:8080            0.0.0.0:*               LISTEN", "tcp6       0      0 :::8080                 :::*                    LISTEN"}, true, true},
		{"the pod's IPv4 address", []string{"LISTEN 0      128      10.244.2.62:8080       0.0.0.0:*"}, true, false},
	} {
		p := listenFamilies(c.lines)[8080]
		if p == nil || p.v4 != c.v4 || p.v6 != c.v6 {
			t.Errorf("%s: %+v, want v4 %v v6 %v", c.name, p, c.v4, c.v6)
		}
	}
	if p := listenFamilies([]string{"LISTEN 0 511 127.0.0.1:9229 0.0.0.0:*"})[9229]; p != nil && p.v4 {
		t.Errorf("a loopback socket is not a listener for the Service: %+v", p)
	}
}

func TestServiceFamily(t *testing.T) {
	single := corev1.IPFamilyPolicySingleStack
	for _, c := range []struct {
		name string
		spec corev1.ServiceSpec
		want string
	}{
		{"ipFamilies [IPv6]", corev1.ServiceSpec{ClusterIP: "fd00:10:96::3a1f", IPFamilies: []corev1.IPFamily{corev1.IPv6Protocol}, IPFamilyPolicy: &single}, "IPv6"},
		{"a listing's IPv6 ClusterIP", corev1.ServiceSpec{ClusterIP: "2600:1f18:abcd::8c1"}, "IPv6"},
		{"dual-stack", corev1.ServiceSpec{ClusterIP: "10.96.0.12", ClusterIPs: []string{"10.96.0.12", "fd00::12"}}, ""},
		{"dual-stack families", corev1.ServiceSpec{IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}}, ""},
		{"IPv4", corev1.ServiceSpec{ClusterIP: "10.96.140.17"}, "IPv4"},
		{"headless", corev1.ServiceSpec{ClusterIP: "None"}, ""},
	} {
		if got, _ := serviceFamily(&corev1.Service{Spec: c.spec}); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// TestIPFamilyMismatch: an IPv6 single-stack Service whose server listens
// on 0.0.0.0 only, read from its sockets or its startup line, with callers
// refused, is the cause; a server on both families, or no refusal, is not.
func TestIPFamilyMismatch(t *testing.T) {
	t0 := win.Start.Add(10 * time.Minute)
	single := corev1.IPFamilyPolicySingleStack
	svc := ServiceState{Service: corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "accounts", Namespace: "core", CreationTimestamp: metav1.NewTime(t0)},
		Spec: corev1.ServiceSpec{ClusterIP: "fd00:10:96::77", IPFamilies: []corev1.IPFamily{corev1.IPv6Protocol}, IPFamilyPolicy: &single,
			Selector: map[string]string{"app": "accounts"}, Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromString("http")}}}}}
	listed := ServiceState{Service: corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "accounts", Namespace: "core"}, Spec: corev1.ServiceSpec{ClusterIP: "fd00:10:96::77", Ports: []corev1.ServicePort{{Port: 3000}}}}}
	pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "accounts-7f9c6d8b5-k2x9q", Namespace: "core", Labels: map[string]string{"app": "accounts"}},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 3000}}}}},
		Status: corev1.PodStatus{PodIP: "10.12.4.31"}}
	unlabelled := pod
	unlabelled.Labels = nil
	ss := func(lines ...string) evidence.CommandOutput {
		return evidence.CommandOutput{Command: "kubectl -n core exec accounts-7f9c6d8b5-k2x9q -- ss -ltn", Exec: true, Namespace: "core", Pod: "accounts-7f9c6d8b5-k2x9q", Run: "ss -ltn", Lines: lines}
	}
	curl := evidence.CommandOutput{Command: "kubectl -n core exec web-1 -- curl -sv http://accounts.core.svc.cluster.local/healthz", Exec: true, Run: "curl -sv http://accounts.core.svc.cluster.local/healthz", ExitCode: 7, Lines: []string{
		"*   Trying [fd00:10:96::77]:80...", "* connect to fd00:10:96::77 port 80 from fd00:10:244:3::5c port 49214 failed: Connection refused"}}
	podCall := evidence.CommandOutput{Command: "kubectl -n core exec web-1 -- curl -s http://10.12.4.31:3000/healthz", Exec: true, Run: "curl -s http://10.12.4.31:3000/healthz", ExitCode: -1, Lines: []string{`{"ok":true}`}}
	refusedGo := Finding{Kind: KindConnRefused, Subject: "web", Time: t0.Add(time.Minute), Facts: map[string]string{"dependency": "accounts",
		"line": `dial tcp [fd00:10:96::77]:80: connect: connection refused`}}
	refusedNode := Finding{Kind: KindLogErrors, Subject: "checkout", Time: t0.Add(2 * time.Minute), Facts: map[string]string{"line_kind": string(KindConnRefused), "dependency": "accounts",
		"line": `Error: connect ECONNREFUSED [fd00:10:96::77]:80 at TCPConnectWrap.afterConnect [as oncomplete] (node:net:1607:16)`}}
	startup := func(line string) []LogSet {
		return []LogSet{{Subject: "accounts", Namespace: "core", Source: "accounts-7f9c6d8b5-k2x9q", Templates: []analysis.LogTemplate{{Example: line, FirstSeen: win.BaselineStart}}}}
	}
	for _, c := range []struct {
		name  string
		g     Gathered
		found []Finding
		want  []string
	}{
		{"ss -ltn and a curl refused over IPv6", Gathered{K8s: K8sEvidence{Services: []ServiceState{svc}, Pods: []corev1.Pod{pod}},
			Commands: []evidence.CommandOutput{ss("LISTEN 0      511          0.0.0.0:3000       0.0.0.0:*"), curl, podCall}},
			nil, []string{"IPv6 single-stack", "0.0.0.0:3000", "Connection refused", "10.12.4.31:3000 answers"}},
		{"netstat and a Go caller", Gathered{K8s: K8sEvidence{Services: []ServiceState{listed}, Pods: []corev1.Pod{unlabelled}},
			Commands: []evidence.CommandOutput{ss("tcp        0      0 0.0.0.0:3000            0.0.0.0:*               LISTEN")}},
			[]Finding{refusedGo}, []string{"ClusterIP fd00:10:96::77", "web gets connection refused"}},
		{"Fastify's startup line and a Node caller", Gathered{K8s: K8sEvidence{Services: []ServiceState{svc}, Pods: []corev1.Pod{pod}},
			Logs: startup(`{"level":30,"time":1794906772027,"pid":1,"msg":"Server listening at http://0.0.0.0:3000"}`)},
			[]Finding{refusedNode}, []string{"listens on 0.0.0.0:3000 only", "checkout gets connection refused"}},
		{"uvicorn's startup line", Gathered{K8s: K8sEvidence{Services: []ServiceState{svc}, Pods: []corev1.Pod{pod}},
			Logs: startup("INFO:     Uvicorn running on http://0.0.0.0:3000 (Press CTRL+C to quit)"), Commands: []evidence.CommandOutput{curl}},
			nil, []string{"0.0.0.0:3000"}},
		{"listening on both families", Gathered{K8s: K8sEvidence{Services: []ServiceState{svc}, Pods: []corev1.Pod{pod}},
			Commands: []evidence.CommandOutput{ss("LISTEN 0 511 0.0.0.0:3000 0.0.0.0:*", "LISTEN 0 511 [::]:3000 [::]:*"), curl}}, nil, nil},
		{"no caller refused", Gathered{K8s: K8sEvidence{Services: []ServiceState{svc}, Pods: []corev1.Pod{pod}},
			Commands: []evidence.CommandOutput{ss("LISTEN 0 511 0.0.0.0:3000 0.0.0.0:*")}}, nil, nil},
		{"an IPv4 Service", Gathered{K8s: K8sEvidence{Services: []ServiceState{{Service: corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "accounts", Namespace: "core"}, Spec: corev1.ServiceSpec{ClusterIP: "10.96.4.4", Ports: []corev1.ServicePort{{Port: 3000}}}}}}, Pods: []corev1.Pod{pod}},
			Commands: []evidence.CommandOutput{ss("LISTEN 0 511 0.0.0.0:3000 0.0.0.0:*")}}, []Finding{refusedGo}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.g.Window = win
			fs := detectIPFamilyMismatch(&c.g, c.found)
			if c.want == nil {
				if len(fs) != 0 {
					t.Fatalf("found %+v", fs[0].Facts)
				}
				return
			}
			if len(fs) != 1 || fs[0].Subject != "accounts" {
				t.Fatalf("findings %+v", fs)
			}
			h := &Hypothesis{Kind: KindIPFamilyMismatch, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}}
			d := ipFamilyMismatch.describe(h, Scope{})
			for _, w := range c.want {
				if !strings.Contains(d, w) {
					t.Errorf("description lacks %q: %s", w, d)
				}
			}
		})
	}
	h := &Hypothesis{Kind: KindIPFamilyMismatch, Subject: "accounts"}
	for _, c := range []struct {
		text string
		want bool
	}{
		{"NETV6 wave 3: Services recreated with ipFamilyPolicy SingleStack / ipFamilies [IPv6]", true},
		{"accounts Service moved to dual-stack (PreferDualStack)", true},
		{"web 2.4.0: retry backoff 2s -> 5s", false},
	} {
		if got := ipFamilyMismatch.fitsChange(h, &Finding{Kind: KindConfigChange, Facts: map[string]string{"description": c.text}}); got != c.want {
			t.Errorf("%q fits: %v", c.text, got)
		}
	}
}
