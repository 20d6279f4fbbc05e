package analyst

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPortMismatch checks that a client timing out on a Service's port
// that the Service does not serve is blamed on the port, and that a call
// to a port the Service serves is not.
func TestPortMismatch(t *testing.T) {
	var svc corev1.Service
	if err := json.Unmarshal([]byte(`{"apiVersion":"v1","kind":"Service","metadata":{"name":"kafka-bootstrap","namespace":"telemetry"},
  "spec":{"type":"ClusterIP","clusterIP":"172.20.91.40","ports":[{"name":"tcp-tls","port":9093,"protocol":"TCP","targetPort":9093}],
    "selector":{"strimzi.io/cluster":"events","strimzi.io/kind":"Kafka"}}}`), &svc); err != nil {
		t.Fatal(err)
	}
	ev := &Gathered{K8s: K8sEvidence{Services: []ServiceState{{Service: svc}}}, Window: win}
	cases := []struct {
		line string
		want bool
	}{
		{`2027-01-18 13:37:15.502 WARN  [main] o.a.k.clients.NetworkClient - [Consumer clientId=events-consumer-1, groupId=events-consumer] Connection to node -1 (kafka-bootstrap.telemetry.svc/172.20.91.40:9092) could not be established. Node may not be available.`, false},
		{`2027-01-18 13:37:44.409 ERROR [main] c.t.events.ConsumerApp - Timed out waiting for a node assignment after 60000 ms (bootstrap kafka-bootstrap.telemetry.svc:9092)`, true},
		{`2027-01-18 13:37:44.409 ERROR [main] c.t.events.ConsumerApp - Timed out waiting for a node assignment after 60000 ms (bootstrap kafka-bootstrap.telemetry.svc:9093)`, false},
	}
	for _, c := range cases {
		fs := DetectLogs([]LogSet{logSet("events-consumer", false, c.line)}, win)
		got := detectPortMismatch(ev, fs)
		if (len(got) == 1) != c.want {
			t.Errorf("%q: findings %+v, want one: %v", c.line, got, c.want)
			continue
		}
		if c.want {
			h := &Hypothesis{Kind: KindPortMismatch, Subject: got[0].Subject, Primary: []*Finding{&got[0]}}
			if d := describe(h, Scope{}); got[0].Subject != "events-consumer" || !strings.Contains(d, "port 9092") || !strings.Contains(d, "tcp-tls 9093/TCP") {
				t.Errorf("finding on %s, description %q", got[0].Subject, d)
			}
		}
	}
}

// TestPortMismatchTargetPort checks that a call naming the port the
// Service forwards to (its targetPort) is not a mismatch.
func TestPortMismatchTargetPort(t *testing.T) {
	var svc corev1.Service
	if err := json.Unmarshal([]byte(`{"metadata":{"name":"inventory-svc","namespace":"checkout"},"spec":{"ports":[{"name":"http","port":80,"protocol":"TCP","targetPort":9090}]}}`), &svc); err != nil {
		t.Fatal(err)
	}
	fs := DetectLogs([]LogSet{logSet("checkout-api", false, `2026-05-07T15:52:10Z level=error msg="ReserveStock failed" err="rpc error: code = DeadlineExceeded desc = context deadline exceeded" target=inventory-svc:9090`)}, win)
	if got := detectPortMismatch(&Gathered{K8s: K8sEvidence{Services: []ServiceState{{Service: svc}}}, Window: win}, fs); len(got) != 0 {
		t.Errorf("findings %+v, want none: 9090 is the Service's targetPort", got)
	}
}

// TestCalledServiceHosts checks which namespaces' Services a log line
// makes the analyst list: cluster names with their namespace only.
func TestCalledServiceHosts(t *testing.T) {
	cases := []struct{ line, want string }{
		{`Timed out waiting for a node assignment after 60000 ms (bootstrap kafka-bootstrap.streaming.svc:9092)`, "kafka-bootstrap streaming"},
		{`dial tcp: lookup smtp-relay.mail.svc.cluster.local on 172.20.0.10:53: no such host`, "smtp-relay mail"},
		{`GET https://api.stripe.com/v1/charges: 503`, ""},
		{`connect to inventory-svc:9090 failed`, ""},
	}
	for _, c := range cases {
		got := ""
		if m := svcHostRE.FindStringSubmatch(c.line); m != nil {
			got = m[1] + " " + m[2]
		}
		if got != c.want {
			t.Errorf("%q: %q, want %q", c.line, got, c.want)
		}
	}
}

// TestProbePortMismatch checks a readiness probe that checks a port its
// container does not declare (from the probe's spec, or from the kubelet's
// message when the spec was read from a describe page without it), and
// that a probe naming the container's port by its name is fine.
func TestProbePortMismatch(t *testing.T) {
	podJSON := func(probePort string) corev1.Pod {
		var p corev1.Pod
		js := `{"metadata":{"name":"geo-lookup-5d7b9c6f48-kx2vd","namespace":"maps","ownerReferences":[{"kind":"ReplicaSet","name":"geo-lookup-5d7b9c6f48"}]},
  "spec":{"containers":[{"name":"geo-lookup","image":"registry.maps/geo-lookup:3.4.0","ports":[{"name":"http","containerPort":9090,"protocol":"TCP"}],
    "readinessProbe":{"httpGet":{"path":"/healthz","port":` + probePort + `},"initialDelaySeconds":5,"periodSeconds":10}}]},
  "status":{"phase":"Running"}}`
		if err := json.Unmarshal([]byte(js), &p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	msg := `Readiness probe failed: Get "http://10.244.2.57:8080/healthz": dial tcp 10.244.2.57:8080: connect: connection refused`
	cases := []struct {
		name, port string
		want       bool
	}{
		{"probe on 8080, container on 9090", `8080`, true},
		{"probe port unknown, the kubelet checked 8080", `0`, true},
		{"probe names the container's port", `"http"`, false},
	}
	for _, c := range cases {
		p := podJSON(c.port)
		fs := DetectEvents([]corev1.Event{{InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "maps", Name: p.Name}, Reason: "Unhealthy",
			Type: corev1.EventTypeWarning, Count: 160, Message: msg, FirstTimestamp: metav1.NewTime(win.Start), LastTimestamp: metav1.NewTime(win.End)}}, []corev1.Pod{p}, win)
		got := probePortMismatch(&Gathered{K8s: K8sEvidence{Pods: []corev1.Pod{p}}, Window: win}, fs)
		if (len(got) == 1) != c.want {
			t.Errorf("%s: findings %+v, want one: %v", c.name, got, c.want)
			continue
		}
		if c.want {
			h := &Hypothesis{Kind: KindPortMismatch, Subject: got[0].Subject, Primary: []*Finding{&got[0]}}
			if d := describe(h, Scope{}); got[0].Subject != "geo-lookup" || !strings.Contains(d, "readiness probe of geo-lookup checks port 8080") || !strings.Contains(d, "9090/TCP") {
				t.Errorf("%s: finding on %s, description %q", c.name, got[0].Subject, d)
			}
		}
	}
}

// TestServiceTargetPortMismatch checks a Service whose targetPort no
// container of its pods declares, read from real manifests: blamed after
// the release that moved the port, not when the port is declared (by
// number or name) or nothing failed or changed.
func TestServiceTargetPortMismatch(t *testing.T) {
	svcJSON := func(target string) corev1.Service {
		var s corev1.Service
		if err := json.Unmarshal([]byte(`{"apiVersion":"v1","kind":"Service","metadata":{"name":"cart-api","namespace":"shop"},
  "spec":{"ports":[{"name":"http","port":80,"protocol":"TCP","targetPort":`+target+`}],"selector":{"app.kubernetes.io/name":"cart-api"}}}`), &s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	// portName is the container port's name: "" as in a describe page,
	// which shows only number and protocol.
	depJSON := func(portName string) appsv1.Deployment {
		var dep appsv1.Deployment
		if err := json.Unmarshal([]byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"cart-api","namespace":"shop"},
  "spec":{"selector":{"matchLabels":{"app.kubernetes.io/name":"cart-api"}},"template":{"metadata":{"labels":{"app.kubernetes.io/name":"cart-api"}},
    "spec":{"containers":[{"name":"cart-api","image":"registry.example.com/cart-api:3.0.0","ports":[{"containerPort":9090,"name":"`+portName+`","protocol":"TCP"}],
      "readinessProbe":{"httpGet":{"path":"/actuator/health/readiness","port":9090}}}]}}}}`), &dep); err != nil {
			t.Fatal(err)
		}
		return dep
	}
	release := Finding{Kind: KindDeploy, Subject: "cart-api", Time: win.Start.Add(10 * time.Minute)}
	cases := []struct {
		name     string
		target   string
		portName string
		found    []Finding
		want     bool
	}{
		{"targetPort 8080, container listens on 9090, after the release", `8080`, "web", []Finding{release}, true},
		{"targetPort names the container port", `"web"`, "web", []Finding{release}, false},
		{"targetPort names a port no container declares", `"http"`, "web", []Finding{release}, true},
		{"targetPort named, container port names unknown (text form)", `"http"`, "", []Finding{release}, false},
		{"targetPort is the declared port", `9090`, "web", []Finding{release}, false},
		{"an undeclared port with nothing failing or changed", `8080`, "web", nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{K8s: K8sEvidence{Services: []ServiceState{{Service: svcJSON(c.target)}}, Deployments: []appsv1.Deployment{depJSON(c.portName)}}, Window: win}
			fs := targetPortMismatch(ev, c.found)
			if (len(fs) == 1) != c.want {
				t.Fatalf("findings %+v, want one: %v", fs, c.want)
			}
			if !c.want {
				return
			}
			f := fs[0]
			d := portMismatch.describe(&Hypothesis{Kind: KindPortMismatch, Subject: f.Subject, Primary: []*Finding{&f}}, Scope{})
			// A named targetPort is answered by the names the pods
			// declare (the Service gets no endpoints); a number by the
			// ports they listen on.
			want := "listen on 9090"
			if strings.HasPrefix(c.target, `"`) {
				want = "declares a port named " + strings.Trim(c.target, `"`) + " (their ports: " + c.portName + " 9090"
			}
			if f.Subject != "cart-api" || !strings.Contains(d, "targetPort "+strings.Trim(c.target, `"`)) || !strings.Contains(d, want) {
				t.Errorf("subject %q: %s", f.Subject, d)
			}
		})
	}
}
