package analyst

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestDialedIPs reads the cluster IPs that failing calls dial, in the
// forms clients log them (Go gRPC and net/http, Node, Apache HttpClient,
// Netty, nginx, libpq, redis-py), and not the addresses of calls that
// worked or of the pod itself.
func TestDialedIPs(t *testing.T) {
	cases := []struct{ line, want string }{
		{`time=2026-05-12T10:07:32.036Z level=ERROR msg="ledger reserve failed" err="rpc error: code = Unavailable desc = connection error: desc = \"transport: Error while dialing: dial tcp 10.96.41.208:9090: connect: connection refused\""`, "10.96.41.208"},
		{`Error: connect ECONNREFUSED 10.100.12.7:6379`, "10.100.12.7"},
		{`org.apache.http.conn.HttpHostConnectException: Connect to 10.0.34.9:8080 [/10.0.34.9] failed: Connection refused (Connection refused)`, "10.0.34.9"},
		{`{"level":"error","msg":"health check failed","error":"Get \"http://10.43.0.15:8080/health\": dial tcp 10.43.0.15:8080: i/o timeout"}`, "10.43.0.15"},
		{`io.grpc.StatusRuntimeException: UNAVAILABLE: io exception Caused by: io.netty.channel.AbstractChannel$AnnotatedConnectException: Connection refused: /10.96.41.208:9090`, "10.96.41.208"},
		{`2026/05/12 10:07:32 [error] 31#31: *1043 connect() failed (111: Connection refused) while connecting to upstream, client: 10.42.1.9, server: _, request: "GET /v1/quote HTTP/1.1", upstream: "http://10.96.7.7:80/v1/quote"`, "10.96.7.7"},
		{`psycopg2.OperationalError: connection to server at "10.96.3.4", port 5432 failed: Connection refused`, "10.96.3.4"},
		{`redis.exceptions.ConnectionError: Error 111 connecting to 10.96.200.3:6379. Connection refused.`, "10.96.200.3"},
		{`level=INFO msg="connected" addr=10.96.41.208:9090`, ""},
		{`dial tcp 127.0.0.1:8126: connect: connection refused`, ""},
	}
	for _, c := range cases {
		got := strings.Join(dialedIPs([]LogSet{logSet("payments-api", false, c.line)}), ",")
		if got != c.want {
			t.Errorf("dialedIPs(%.60q) = %q, want %q", c.line, got, c.want)
		}
	}
}

// TestTargetPortMismatchDialedIP follows a client's refused calls to a
// cluster IP to the Service of another namespace that owns it, read from
// describe pages: its targetPort is a port its pods no longer declare, so
// the Service's workload is the cause and the client's refused calls (and
// the lines a log search found of them) are its consequence. A Service
// whose targetPort is declared, or whose IP nobody dialed, is not blamed.
func TestTargetPortMismatchDialedIP(t *testing.T) {
	svc := func(target int) ServiceState {
		var s corev1.Service
		if err := json.Unmarshal([]byte(`{"metadata":{"name":"ledger","namespace":"ledger"},"spec":{"type":"ClusterIP","clusterIP":"10.96.41.208",
  "ports":[{"name":"grpc","port":9090,"protocol":"TCP","targetPort":`+strconv.Itoa(target)+`},{"name":"metrics","port":9102,"protocol":"TCP","targetPort":9102}],
  "selector":{"app.kubernetes.io/instance":"ledger","app.kubernetes.io/name":"ledger"}}}`), &s); err != nil {
			t.Fatal(err)
		}
		return ServiceState{Service: s}
	}
	var pod corev1.Pod
	if err := json.Unmarshal([]byte(`{"metadata":{"name":"ledger-6b8f9d7c4d-9kq7w","namespace":"ledger","labels":{"app.kubernetes.io/instance":"ledger","app.kubernetes.io/name":"ledger","pod-template-hash":"6b8f9d7c4d"},
  "ownerReferences":[{"kind":"ReplicaSet","name":"ledger-6b8f9d7c4d"}]},
  "spec":{"containers":[{"name":"ledger","image":"registry.internal/fin/ledger:5.2.0","ports":[{"containerPort":50051,"protocol":"TCP"},{"containerPort":9102,"protocol":"TCP"}]}]},
  "status":{"phase":"Running"}}`), &pod); err != nil {
		t.Fatal(err)
	}
	line := `time=2026-05-12T10:07:32.036Z level=ERROR msg="ledger reserve failed" err="rpc error: code = Unavailable desc = connection error: desc = \"transport: Error while dialing: dial tcp 10.96.41.208:9090: connect: connection refused\""`
	refused := Finding{Kind: KindConnRefused, Subject: "10.96.41.208", Time: win.Start.Add(5 * 60e9), Facts: map[string]string{"line": line, "target": "10.96.41.208:9090", "caller": "payments-api"}}
	search := Finding{Kind: KindLogMatch, Subject: "payments-api", Time: win.Start.Add(5 * 60e9), Facts: map[string]string{"line": line, "phrase": "connection refused"}}
	other := Finding{Kind: KindLogMatch, Subject: "payments-api", Facts: map[string]string{"line": `dial tcp 10.96.0.10:53: i/o timeout`}}
	cases := []struct {
		name   string
		target int
		found  []Finding
		want   bool
	}{
		{"targetPort 9090 left behind, the pods listen on 50051, calls refused", 9090, []Finding{refused}, true},
		{"targetPort follows the pods", 50051, []Finding{refused}, false},
		{"targetPort undeclared, nothing refused nor released", 9090, nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{K8s: K8sEvidence{CalledServices: []ServiceState{svc(c.target)}, CalledPods: []corev1.Pod{pod}}, Window: win}
			fs := targetPortMismatch(ev, c.found)
			if (len(fs) == 1) != c.want {
				t.Fatalf("findings %+v, want one: %v", fs, c.want)
			}
			if !c.want {
				return
			}
			f := fs[0]
			h := &Hypothesis{Kind: KindPortMismatch, Subject: f.Subject, Primary: []*Finding{&f}, Onset: f.Time}
			d := portMismatch.describe(h, Scope{})
			if f.Subject != "ledger" || !strings.Contains(d, "targetPort 9090") || !strings.Contains(d, "listen on 50051") || f.fact("refused") == "" {
				t.Errorf("subject %q facts %v: %s", f.Subject, f.Facts, d)
			}
			if !supports(h, &refused) || !supports(h, &search) || supports(h, &other) {
				t.Errorf("the refused calls to 10.96.41.208:9090 and the lines found of them support it, another address's do not")
			}
		})
	}
}
