package analyst

import (
	"context"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/rootcause/rootcause/agent"
	"github.com/rootcause/rootcause/agent/tools"
	"github.com/rootcause/rootcause/finding"
)

// investigateSession investigates a kubectl terminal session handed over
// as a bundle, asking msg about service in namespace.
func investigateSession(t *testing.T, now time.Time, session, msg, service, namespace string) *finding.Result {
	t.Helper()
	fsys := fstest.MapFS{
		"bundle.json":            {Data: []byte(`{"captured_at":"` + now.Format(time.RFC3339) + `"}`)},
		"kubernetes/session.txt": {Data: []byte(session)},
	}
	cat := tools.Builtin()
	toolkit := cat.DefaultToolkit(tools.AgentInvestigation)
	sess := &tools.Session{Catalog: cat, Env: &tools.Env{Sources: bundleSources(t, fsys, now)}, Toolkit: toolkit}
	res, err := New(Options{}).Investigate(context.Background(), &agent.Request{
		Agent:   agent.Agent{Name: tools.AgentInvestigation, Tools: toolkit},
		Message: msg,
		Context: map[string]string{"service": service, "namespace": namespace},
	}, &lockRun{sess: sess})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// checkClaim checks a description d: it holds want or, when want is
// empty, not claim (what the case must not be told).
func checkClaim(t *testing.T, d, want, claim string) {
	t.Helper()
	if want == "" {
		if strings.Contains(d, claim) {
			t.Errorf("%q claimed: %s", claim, d)
		}
	} else if !strings.Contains(d, want) {
		t.Errorf("want %q in %s", want, d)
	}
}

// TestCrashInPodRows: the kubectl get pods rows of pods of several
// containers (a sidecar crash-looping beside the application, an init
// container failing, a container in Error between restarts) are the
// pods' state, and the logs the session read of the failing container,
// named or not, give the cause; the exit code a row does not show is not
// claimed.
func TestCrashInPodRows(t *testing.T) {
	now := time.Date(2026, 11, 25, 11, 20, 0, 0, time.UTC)
	cases := []struct {
		name, session, msg, service string
		kind                        Kind
		want                        []string
	}{
		{
			name: "sidecar crash loop",
			session: `$ kubectl -n shop get pods
NAME                   READY   STATUS             RESTARTS       AGE
api-7d9f6c8b5-x2k4p    1/3     CrashLoopBackOff   12 (2m ago)    40m
api-7d9f6c8b5-q8j3n    2/3     Error              11 (4m ago)    40m
web-5c6d7f8b9-abcde    1/1     Running            0              3d
$ kubectl -n shop logs api-7d9f6c8b5-x2k4p -c metrics-agent --previous
2026-11-25T11:17:58Z INFO starting metrics-agent v2.4.1
2026-11-25T11:17:58Z FATAL required environment variable STATSD_HOST is not set
`,
			msg: "api pods keep restarting, why?", service: "api", kind: KindMissingEnv,
			want: []string{"STATSD_HOST", "metrics-agent"},
		},
		{
			name: "one container, its log read without -c",
			session: `$ kubectl -n shop get pods
NAME                   READY   STATUS             RESTARTS       AGE
api-7d9f6c8b5-x2k4p    0/1     CrashLoopBackOff   12 (2m ago)    40m
$ kubectl -n shop logs api-7d9f6c8b5-x2k4p --previous
2026-11-25T11:17:58Z FATAL required environment variable STATSD_HOST is not set
`,
			msg: "api pods keep restarting, why?", service: "api", kind: KindMissingEnv,
			want: []string{"STATSD_HOST"},
		},
		{
			name: "init container crash loop",
			session: `$ kubectl -n shop get pods
NAME                      READY   STATUS                  RESTARTS      AGE
orders-6b8d7f9c4-h2k8m    0/2     Init:CrashLoopBackOff   6 (90s ago)   12m
orders-5f7c6d8b9-aaaaa    2/2     Running                 0             3d
$ kubectl -n shop logs orders-6b8d7f9c4-h2k8m -c db-migrate --previous
2026-11-25T11:18:20Z INFO applying migration 0042_add_orders_index
2026-11-25T11:18:21Z ERROR migration 0042 failed: pq: relation "orders_v2" does not exist
2026-11-25T11:18:21Z FATAL migrations failed, exiting
`,
			msg: "orders pods are stuck after the deploy", service: "orders", kind: KindCrashLoop,
			want: []string{"Init:CrashLoopBackOff", "init container db-migrate", `relation \"orders_v2\" does not exist`},
		},
		{
			name: "a container in Error between restarts, no log",
			session: `$ kubectl -n shop get pods
NAME                   READY   STATUS   RESTARTS      AGE
api-7d9f6c8b5-q8j3n    2/3     Error    11 (4s ago)   40m
web-5c6d7f8b9-abcde    1/1     Running  0             3d
`,
			msg: "api pods keep restarting, why?", service: "api", kind: KindCrashLoop,
			want: []string{"api containers are in CrashLoopBackOff"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := investigateSession(t, now, c.session, c.msg, c.service, "shop")
			if len(res.Candidates) == 0 || res.Candidates[0].Kind != string(c.kind) || res.Candidates[0].Subject != c.service {
				t.Fatalf("candidates %+v, want %s of %s first; root cause %q", res.Candidates, c.kind, c.service, res.RootCause.Description)
			}
			d := res.RootCause.Description
			for _, w := range c.want {
				if !strings.Contains(d, w) {
					t.Errorf("description lacks %q: %s", w, d)
				}
			}
			all := d + strings.Join(res.RootCause.Evidence, " ")
			if strings.Contains(all, "exit code 0") || strings.Contains(all, "container  ") {
				t.Errorf("claims what the rows do not show: %s", all)
			}
		})
	}
}
