package bundle_test

import (
	"context"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A kubectl debug session's shell output is no log of the pod: the pod's
// get_pod_logs keeps what kubectl logs printed (and kubectl exec outputs),
// and the debug session is served as command outputs of the pod, marked
// Debug, whatever its shell's prompt looks like.
func TestTranscriptDebugIsNotThePodsLog(t *testing.T) {
	const session = `$ kubectl logs checkout-6d8f9c7b5-x2x9k -n shop --tail=3
2027-01-20T17:20:01Z ERROR payment call failed: context deadline exceeded
2027-01-20T17:20:02Z ERROR payment call failed: context deadline exceeded
2027-01-20T17:20:04Z ERROR payment call failed: context deadline exceeded

$ kubectl debug -it checkout-6d8f9c7b5-x2x9k -n shop --image=busybox:1.36 --target=app
Defaulting debug container name to debugger-8xk2p.
If you don't see a command prompt, try pressing enter.
/ # wget -qO- -T 3 http://payments.pay:8080/healthz
wget: download timed out
/ # exit
Session ended, the ephemeral container will not be restarted but may be reattached using 'kubectl attach checkout-6d8f9c7b5-x2x9k -c debugger-8xk2p -i -t' if it is still running

$ kubectl debug -it checkout-6d8f9c7b5-x2x9k -n shop --image=nicolaka/netshoot --target=app
Defaulting debug container name to debugger-q7m4w.
If you don't see a command prompt, try pressing enter.
tcpdump: verbose output suppressed, use -v[v]... for full protocol decode
17:22:10.123 IP 10.1.2.3.41234 > 10.96.14.2.8080: Flags [S], seq 1, win 64240
17:22:11.125 IP 10.1.2.3.41234 > 10.96.14.2.8080: Flags [S], seq 1, win 64240
`
	ctx := context.Background()
	b := formsBundle(t, fstest.MapFS{"session.txt": {Data: []byte(session)}})
	k := b.Sources(b.CapturedAt).Kubernetes
	res, err := k.PodLogs(ctx, evidence.PodLogQuery{Namespace: "shop", Pod: "checkout-6d8f9c7b5-x2x9k", Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range res.Lines {
		got = append(got, l.Text)
	}
	if len(got) != 3 || !strings.Contains(strings.Join(got, "\n"), "17:20:04Z ERROR payment call failed") || strings.Contains(strings.Join(got, "\n"), "wget") {
		t.Errorf("pod log = %q", got)
	}
	outs, err := k.(evidence.CommandOutputReader).CommandOutputs(ctx, "shop")
	if err != nil {
		t.Fatal(err)
	}
	var debug []string
	for _, o := range outs {
		if o.Debug {
			if o.Pod != "checkout-6d8f9c7b5-x2x9k" || !o.Exec {
				t.Errorf("debug output %+v", o)
			}
			debug = append(debug, o.Container+" "+o.Run+": "+strings.Join(o.Lines, " | "))
		}
	}
	want := []string{
		"debugger-8xk2p wget -qO- -T 3 http://payments.pay:8080/healthz: wget: download timed out",
		"debugger-q7m4w (interactive session): tcpdump: verbose output suppressed, use -v[v]... for full protocol decode | 17:22:10.123 IP 10.1.2.3.41234 > 10.96.14.2.8080: Flags [S], seq 1, win 64240 | 17:22:11.125 IP 10.1.2.3.41234 > 10.96.14.2.8080: Flags [S], seq 1, win 64240",
	}
	if strings.Join(debug, "\n") != strings.Join(want, "\n") {
		t.Errorf("debug outputs:\n%s\nwant:\n%s", strings.Join(debug, "\n"), strings.Join(want, "\n"))
	}
}
