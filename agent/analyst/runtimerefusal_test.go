package analyst_test

import (
	"strings"
	"testing"
)

// runtimeSession is a workload failing after its runtime moved: its pod
// table, its log with the runtime's refusal, and what an operator ran to
// compare runtime versions.
func runtimeSession(app, status, logLines, versions string) string {
	return `$ kubectl -n shop get pods
NAME                        READY   STATUS             RESTARTS      AGE
` + app + `-7f9c8b6d47-x4q2n   0/1     ` + status + `   12 (3m ago)   40m

$ kubectl -n shop logs ` + app + `-7f9c8b6d47-x4q2n --previous
` + logLines + `
` + versions
}

func TestRuntimeRefusal(t *testing.T) {
	cases := []struct {
		name, app, session, changes string
		want                        []string // words of the root; nil: not this cause
	}{
		{"Java 21 strong encapsulation (Spring 4 cglib), jre tag moved", "stock-sync",
			runtimeSession("stock-sync", "CrashLoopBackOff", `2026-11-27T08:01:42.913Z ERROR o.s.boot.SpringApplication - Application run failed
2026-11-27T08:01:42.914Z Caused by: java.lang.reflect.InaccessibleObjectException: Unable to make protected final java.lang.Class java.lang.ClassLoader.defineClass(java.lang.String,byte[],int,int,java.security.ProtectionDomain) throws java.lang.ClassFormatError accessible: module java.base does not "opens java.lang" to unnamed module @5a07e868`,
				`$ kubectl -n shop exec stock-api-6c8d7b9f5-2lq8w -- java -version
openjdk version "11.0.25" 2024-10-15
`),
			`[{"timestamp":"2026-11-27T07:30:00Z","service":"base-images","kind":"config","description":"base/jre:lts now points to eclipse-temurin 21.0.5 (was 11.0.25)"}]`,
			[]string{"Java 17+", "strongly encapsulates", "opens java.lang", "stock-api has Java 11", "21.0.5"}},
		{"Python 3.12 without distutils, python:stable retagged", "report-worker",
			runtimeSession("report-worker", "CrashLoopBackOff", `Traceback (most recent call last):
  File "/app/worker.py", line 4, in <module>
    from distutils.util import strtobool
ModuleNotFoundError: No module named 'distutils'`,
				`$ kubectl -n shop exec report-api-5d9c7b8f6-k2x9p -- python --version
Python 3.11.10
`),
			`[{"timestamp":"2026-11-27T07:30:00Z","service":"report-worker","kind":"deploy","description":"nightly rebuild, same commit, refreshed base image base/python:stable (3.12.7-slim)"}]`,
			[]string{"Python 3.12+", "distutils", "report-api has Python 3.11", "base image"}},
		{"OpenSSL 3 against a gateway without secure renegotiation (Python requests)", "payout-sync",
			runtimeSession("payout-sync", "Running", `2026-11-27T07:50:02.318Z ERROR payout_sync.bank: batch submit failed error="HTTPSConnectionPool(host='api.bank.example', port=443): Max retries exceeded with url: /v2/batch (Caused by SSLError(SSLError(1, '[SSL: UNSAFE_LEGACY_RENEGOTIATION_DISABLED] unsafe legacy renegotiation disabled (_ssl.c:1006)')))"
2026-11-27T07:55:02.318Z ERROR payout_sync.bank: batch submit failed error="HTTPSConnectionPool(host='api.bank.example', port=443): Max retries exceeded with url: /v2/batch (Caused by SSLError(SSLError(1, '[SSL: UNSAFE_LEGACY_RENEGOTIATION_DISABLED] unsafe legacy renegotiation disabled (_ssl.c:1006)')))"`,
				`$ kubectl -n shop exec deploy/payout-sync -- python -c "import ssl; print(ssl.OPENSSL_VERSION)"
OpenSSL 3.0.15 3 Sep 2024

$ docker run --rm registry.example/payout-sync:3.4.1 python -c "import ssl; print(ssl.OPENSSL_VERSION)"
OpenSSL 1.1.1w  11 Sep 2023
`),
			`[{"timestamp":"2026-11-27T07:00:00Z","service":"payout-sync","kind":"deploy","description":"payout-sync 3.4.2: python 3.11-slim-bullseye -> 3.11-slim-bookworm, no code changes","revision":"3.4.2"}]`,
			[]string{"OpenSSL 3.0+", "secure renegotiation", "payout-sync runs OpenSSL 3.0", "image payout-sync:3.4.1 has OpenSSL 1.1", "bookworm"}},
		{"Node.js 18 building with webpack 4 (digital envelope routines)", "storefront-ssr",
			runtimeSession("storefront-ssr", "CrashLoopBackOff", `Error: error:0308010C:digital envelope routines::unsupported
    at new Hash (node:internal/crypto/hash:69:19)
    at Object.createHash (node:crypto:133:10)
    at module.exports (/app/node_modules/webpack/lib/util/createHash.js:135:53) {
  opensslErrorStack: [ 'error:03000086:digital envelope routines::initialization error' ],
  library: 'digital envelope routines',
  reason: 'unsupported',
  code: 'ERR_OSSL_EVP_UNSUPPORTED'
}`, ""),
			`[{"timestamp":"2026-11-27T07:30:00Z","service":"storefront-ssr","kind":"deploy","description":"Dockerfile: FROM node:16-alpine -> node:18-alpine"}]`,
			[]string{"Node.js 17+", "MD4", "node:18-alpine"}},
		{"Go client rejecting a certificate without SANs (legacy Common Name)", "ledger-export",
			runtimeSession("ledger-export", "Running", `2026-11-27T07:58:11Z level=error msg="upload failed" err="Post \"https://sftp-gw.partner.example/upload\": x509: certificate relies on legacy Common Name field, use SANs instead"`, ""),
			`[{"timestamp":"2026-11-27T07:20:00Z","service":"ledger-export","kind":"deploy","description":"ledger-export 2.0.1: toolchain go1.21 -> go1.22"}]`,
			[]string{"Go 1.15+", "Common Name", "go1.22"}},
		{"an ordinary Java crash is not a runtime's refusal", "stock-sync",
			runtimeSession("stock-sync", "CrashLoopBackOff", `2026-11-27T08:01:42.913Z ERROR o.s.boot.SpringApplication - Application run failed
2026-11-27T08:01:42.914Z java.lang.NullPointerException: Cannot invoke "String.length()" because "name" is null`, ""),
			`[]`, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := runScenarioFiles(t, map[string]string{
				"bundle.json":   `{"captured_at":"2026-11-27T08:10:00Z"}`,
				"session.txt":   c.session,
				"changes.json":  c.changes,
				"scenario.json": `{"title":"t","now":"2026-11-27T08:10:00Z","request":{"agent_name":"planner","message":"` + c.app + ` is failing since this morning, is its dependency down?","context":{"namespace":"shop","service":"` + c.app + `"}}}`,
			})
			d := res.RootCause.Description
			t.Logf("%v%%: %s", res.RootCause.Confidence, d)
			got := strings.Contains(d, "refuses what the old one allowed")
			if got != (c.want != nil) {
				t.Fatalf("runtime refusal %v, want %v: %s", got, c.want != nil, d)
			}
			for _, w := range c.want {
				if !strings.Contains(d, w) {
					t.Errorf("description lacks %q", w)
				}
			}
		})
	}
}
