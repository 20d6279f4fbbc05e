package analyst

import (
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// TLS verification failing for want of the issuing CA (psycopg's
// certificate verify failed, Go's x509 unknown authority, Java's PKIX
// path building) after a change of a certificate authority or a trust
// bundle within a month before: the CA changed on one side. An expired
// certificate, no CA change, or a CA change after the failures began, is
// none.
func TestCARotated(t *testing.T) {
	at := win.Start.Add(20 * time.Minute)
	logs := func(subject, line string) []LogSet {
		return []LogSet{{Source: subject + "-7b4c5d9f86-q2lfz", Subject: subject, Namespace: "shop",
			Templates: []analysis.LogTemplate{{Example: line, Incident: 4, FirstSeen: at, FirstIncident: at}}}}
	}
	rds := evidence.Change{Timestamp: at.Add(-7 * 24 * time.Hour), Service: "orders-db", Kind: "infra",
		Description: "terraform: aws_db_instance.orders ca_cert_identifier rds-ca-2019 -> rds-ca-rsa2048-g1, apply_immediately = false"}
	bundle := evidence.Change{Timestamp: at.Add(-30 * time.Minute), Service: "trust-manager", Kind: "config",
		Description: "Bundle internal-ca sources -> secret root-2027 (ca.crt)"}
	rootCA := evidence.Change{Timestamp: at.Add(-2 * time.Hour), Service: "pki", Kind: "infra",
		Description: "issuing CA re-keyed: new intermediate CA signs service certificates"}
	late := evidence.Change{Timestamp: at.Add(time.Hour), Service: "pki", Kind: "infra", Description: "root CA rotation"}
	cases := []struct {
		name    string
		logs    []LogSet
		changes []evidence.Change
		subject string
		want    []string
	}{
		{"psycopg, RDS CA identifier", logs("etl", `psycopg.OperationalError: connection failed: connection to server at "10.0.3.21", port 5432 failed: SSL error: certificate verify failed`),
			[]evidence.Change{rds}, "etl", []string{"certificate verify failed", "from rds-ca-2019 to rds-ca-rsa2048-g1", "ca_cert_identifier"}},
		{"Go x509, trust bundle switched", logs("checkout", `level=ERROR msg="ledger: post" err="Post \"https://ledger:8443/v1\": tls: failed to verify certificate: x509: certificate signed by unknown authority"`),
			[]evidence.Change{bundle}, "checkout", []string{"unknown authority", "Bundle internal-ca"}},
		{"Java PKIX, intermediate re-keyed", logs("orders", "javax.net.ssl.SSLHandshakeException: PKIX path building failed: sun.security.provider.certpath.SunCertPathBuilderException: unable to find valid certification path to requested target"),
			[]evidence.Change{rootCA}, "orders", []string{"PKIX path building failed", "intermediate CA"}},
		{"expired: none", logs("etl", "x509: certificate has expired or is not yet valid: current time 2026-11-26T08:03:00Z is after 2026-11-26T08:02:13Z"),
			[]evidence.Change{rds}, "", nil},
		{"the client's own release: none", logs("orders", "javax.net.ssl.SSLHandshakeException: PKIX path building failed"),
			[]evidence.Change{{Timestamp: at.Add(-time.Hour), Service: "orders", Kind: "deploy", Description: "orders 4.1: adds the acquirer's new intermediate CA to the truststore"}}, "", nil},
		{"no CA change: none", logs("etl", "SSL error: certificate verify failed"), nil, "", nil},
		{"CA change after the failures: none", logs("etl", "SSL error: certificate verify failed"), []evidence.Change{late}, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Logs: c.logs, Earlier: c.changes, Window: win, Scope: Scope{Namespace: "shop"}}
			f := onlyFinding(t, detectCARotated(ev, nil), c.subject)
			if f == nil {
				return
			}
			h := &Hypothesis{Kind: KindCARotated, Subject: f.Subject, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, c.want...)
		})
	}
}
