package analyst

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestMarkMissingService follows a cluster name that does not resolve, in
// the words of Go, the JVM, Node, libpq and Ruby, to its Service: absent
// from its namespace's listed Services, the Service does not exist. A
// Service that exists, or a namespace whose Services were not listed,
// leave the DNS as it is.
func TestMarkMissingService(t *testing.T) {
	svc := func(ns string, names ...string) []ServiceState {
		var out []ServiceState
		for _, n := range names {
			out = append(out, ServiceState{Service: corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: n}}})
		}
		return out
	}
	data := svc("data", "catalog-pg-rw", "catalog-pg-ro", "orders-pg-primary")
	cases := []struct {
		name, line string
		called     []ServiceState
		want       string
	}{
		{"libpq via Ruby", `PG::ConnectionBad: could not translate host name "pg-catalog-primary.data.svc.cluster.local" to address: Name or service not known (PG::ConnectionBad)`, data, "Service pg-catalog-primary does not exist in namespace data"},
		{"Go resolver", `dial tcp: lookup search-primary.data.svc.cluster.local on 10.96.0.10:53: no such host`, data, "Service search-primary does not exist in namespace data"},
		{"JVM", `java.net.UnknownHostException: kafka-0.data.svc: Name or service not known`, data, "Service kafka-0 does not exist"},
		{"Node", `Error: getaddrinfo ENOTFOUND redis-main.data.svc.cluster.local`, data, "Service redis-main does not exist"},
		{"the Service exists", `dial tcp: lookup orders-pg-primary.data.svc.cluster.local on 10.96.0.10:53: no such host`, data, ""},
		{"namespace not listed", `dial tcp: lookup ledger.fin.svc.cluster.local on 10.96.0.10:53: no such host`, data, ""},
		{"one Service read is no list", `dial tcp: lookup ledger.fin.svc.cluster.local on 10.96.0.10:53: no such host`, svc("fin", "ledger-api"), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := Finding{Kind: KindDNS, Subject: "importer"}
			f.setFact("line", c.line)
			found := []Finding{f}
			followMissingService(&Gathered{K8s: K8sEvidence{CalledServices: c.called}}, found)
			got := found[0].fact("missing_service")
			if c.want == "" {
				if got != "" {
					t.Errorf("marked missing: %q", got)
				}
				return
			}
			if !strings.Contains(got, c.want) {
				t.Fatalf("missing_service %q, want %q", got, c.want)
			}
			h := &Hypothesis{Kind: KindDNS, Subject: "importer", Primary: []*Finding{&found[0]}}
			if d := dnsResolution.describe(h, Scope{}); !strings.Contains(d, c.want) {
				t.Errorf("description %q", d)
			}
			job := &Hypothesis{Kind: KindJobFailed, Subject: "importer", Primary: []*Finding{{Kind: KindJobFailed, Subject: "importer",
				Facts: map[string]string{"job": "importer-29917560", "line": c.line, "line_kind": string(KindDNS), "missing_service": got, "services_there": found[0].fact("services_there")}}}}
			if d := jobFailed.describe(job, Scope{}); !strings.Contains(d, c.want) {
				t.Errorf("job description %q", d)
			}
			r := &recommender{h: job}
			jobFailed.recommend(job, Scope{}, r)
			if !strings.Contains(r.recs[0].Action, "a Service that exists") {
				t.Errorf("first recommendation %q", r.recs[0].Action)
			}
		})
	}
}
