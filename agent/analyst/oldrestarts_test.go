package analyst

import (
	"testing"
	"time"
)

// TestOldRestarts dates a healthy subject's restarts from kubectl 1.28+'s
// RESTARTS column ("2 (2d7h ago)"): all before the window, they are
// history; one inside it, or a count without its time, is not claimed.
func TestOldRestarts(t *testing.T) {
	now := time.Date(2026, 11, 25, 10, 30, 0, 0, time.UTC)
	rows := func(a, b string) string {
		return `$ kubectl -n pay get pods -o wide
NAME                        READY   STATUS    RESTARTS       AGE     IP           NODE     NOMINATED NODE   READINESS GATES
ledger-5d7f9b8c6-9kq2r      1/1     Running   ` + a + `   4d18h   10.16.1.77   node-1   <none>           <none>
ledger-5d7f9b8c6-hx4vn      1/1     Running   ` + b + `   4d18h   10.16.2.91   node-2   <none>           <none>
`
	}
	for _, c := range []struct{ name, session, want string }{
		{"two days ago", rows("2 (2d7h ago) ", "3 (2d8h ago) "), "Its 5 restarts (on 2 pods) are old: the last one ended 2d7h before now"},
		{"one restart an hour ago", rows("2 (2d7h ago) ", "3 (52m ago)  "), ""},
		{"counts without their time", rows("2             ", "3             "), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := investigateSession(t, now, c.session, "ledger shows 5 restarts, is it crashlooping?", "ledger", "pay")
			d := res.RootCause.Description
			checkClaim(t, d, c.want, "are old")
		})
	}
}
