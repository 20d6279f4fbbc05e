package kubetext_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/rootcause/rootcause/agent/evidence/kubetext"
)

// Targets of the readers that take more from a log than its lines: an
// event exporter's log read as events, and the logs a transcript read of a
// pod's containers naming the container its kubectl get pods row showed.

// exporterPrefix is a Job the transcript describes (the namespace an
// exported event without one takes) and the command of an event
// exporter's log.
const exporterPrefix = `$ kubectl describe job etl-29563320 -n data
Name:             etl-29563320
Namespace:        data
Pods Statuses:    0 Active (0 Ready) / 0 Succeeded / 3 Failed
$ kubectl logs -n monitoring deploy/kubernetes-event-exporter --since=7h
`

func FuzzExportedEvents(f *testing.F) {
	for _, s := range []string{
		`{"t":"2026-03-18T02:31:12Z","obj":"Pod/etl-29563320-8kqlp","reason":"Preempted","msg":"Preempted by pod 3c9e7b1f on node w-04","src":"default-scheduler"}
{"t":"2026-03-18T03:02:59Z","obj":"Job/etl-29563320","reason":"BackoffLimitExceeded","msg":"Job has reached the specified backoff limit","src":"job-controller"}`,
		`2026-03-18T02:31:13.000000000Z {"metadata":{"name":"etl-1.17d","namespace":"data"},"involvedObject":{"kind":"Pod","namespace":"data","name":"etl-1-8kqlp"},"reason":"Preempted","message":"Preempted by pod 9f1a on node w-02","source":{"component":"default-scheduler"},"firstTimestamp":"2026-03-18T02:31:12Z","lastTimestamp":"2026-03-18T02:31:12Z","count":1,"type":"Normal"}
2026-03-18T02:31:14.000000000Z level=info msg="sink stdout: 1 event written"`,
		`{"verb":"ADDED","event":{"metadata":{"name":"w.1","namespace":"ml"},"involvedObject":{"kind":"Pod","namespace":"ml","name":"w-7f8d9c6b5d-8bq4m"},"reason":"FailedScheduling","message":"0/14 nodes are available","source":{"component":"default-scheduler"},"lastTimestamp":"2026-03-18T06:10:00Z","type":"Warning"}}`,
		`{"metadata":{"name":"db-0.1","namespace":"shop"},"regarding":{"kind":"Pod","namespace":"shop","name":"db-0"},"reason":"Killing","note":"Stopping container db","reportingController":"kubelet","eventTime":"2026-03-18T05:00:00.000000Z","type":"Normal"}`,
		`{"ts":"2026-03-18T04:00:00Z","kind":"Pod","name":"api-1","ns":"web","reason":"BackOff","message":"Back-off restarting failed container"}`,
		`{"ts":"2026-03-18T04:00:00Z","level":"error","msg":"request failed","reason":"timeout","path":"/v1/orders"}`,
		`{"verb":"ADDED","event":{"event":{"reason":"x","message":"y","obj":"Pod/a/b/c"}}}`,
		`{"obj":"Pod/","reason":"r","msg":"m"} {"regarding":{},"reason":"r"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		data := append([]byte(exporterPrefix), body...)
		checkBounded(t, data)
		for _, e := range kubetext.Parse(data, fuzzRef).Events {
			if e.Reason == "" || e.InvolvedObject.Name == "" {
				t.Fatalf("event without its reason or object: %+v", e)
			}
		}
	})
}

// podRowsPrefix is a kubectl get pods of pods of several containers,
// whose rows name no container.
const podRowsPrefix = `$ kubectl -n shop get pods
NAME                      READY   STATUS                  RESTARTS       AGE
api-7d9f6c8b5-x2k4p       1/3     CrashLoopBackOff        12 (2m ago)    40m
api-7d9f6c8b5-q8j3n       2/3     Error                   11 (4m ago)    40m
orders-6b8d7f9c4-h2k8m    0/2     Init:CrashLoopBackOff   6 (90s ago)    12m
orders-6b8d7f9c4-w7v5s    0/2     Init:0/2                0              12m
`

func FuzzRowContainers(f *testing.F) {
	for _, s := range []string{
		`$ kubectl -n shop logs api-7d9f6c8b5-x2k4p -c metrics-agent --previous
2026-11-25T11:17:58Z FATAL required environment variable STATSD_HOST is not set
$ kubectl -n shop logs api-7d9f6c8b5-x2k4p -c api
2026-11-25T11:19:58Z INFO serving on :8080
$ kubectl -n shop logs orders-6b8d7f9c4-h2k8m -c db-migrate --previous
2026-11-25T11:18:21Z ERROR migration 0042 failed: pq: relation "orders_v2" does not exist
$ kubectl -n shop logs orders-6b8d7f9c4-w7v5s -c wait-for-db
waiting for postgres:5432...
`,
		`$ kubectl logs api-7d9f6c8b5-q8j3n -c a -p
x
$ kubectl logs api-7d9f6c8b5-q8j3n -c b -p -n shop
y
$ kubectl -n other logs orders-6b8d7f9c4-h2k8m --all-containers
z
`,
		`$ kubectl -n shop describe pod api-7d9f6c8b5-x2k4p
Name:             api-7d9f6c8b5-x2k4p
Namespace:        shop
Containers:
  api:
    State:          Running
$ kubectl -n shop logs api-7d9f6c8b5-x2k4p -c api --previous
`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, rest []byte) {
		checkBounded(t, append([]byte(podRowsPrefix), rest...))
	})
}

// FuzzSeenPods reads the pods a transcript shows only through commands
// run in them or about them: each is made once, named as Kubernetes names
// it, and keeps at most five places it was seen in.
func FuzzSeenPods(f *testing.F) {
	f.Add([]byte(`$ kubectl top pod -n shop
NAME                         CPU(cores)   MEMORY(bytes)
checkout-5f8c7d6b9-2qkzn     88m          312Mi
$ kubectl logs checkout-5f8c7d6b9-2qkzn -n shop -c app --since=85m
2027-01-20T17:20:01Z ERROR upstream call failed: getaddrinfo EAI_AGAIN payments.shop.svc.cluster.local
$ kubectl exec -n shop checkout-5f8c7d6b9-2qkzn -- cat /etc/resolv.conf
Defaulted container "app" out of: app, istio-proxy
nameserver 10.8.0.10
$ kubectl top pod -n kube-system --containers
POD                       NAME      CPU(cores)   MEMORY(bytes)
coredns-6f9b8d7c5-x4lqz   coredns   250m         61Mi
$ kubectl logs web-1
hello from the context's namespace
$ kubectl logs gone-7d9f8c6b5-abcde -n shop
Error from server (NotFound): pods "gone-7d9f8c6b5-abcde" not found
`))
	f.Add([]byte("$ kubectl logs -n a p -c c\nx\n$ kubectl logs -n a p -c C_\n$ kubectl logs -n a p -c c\n$ kubectl logs -n a p\n$ kubectl logs -n a p\n$ kubectl logs -n a p\n$ kubectl logs -n A p\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		seen := map[string]bool{}
		for _, p := range kubetext.SeenPods(kubetext.Parse(data, fuzzRef).Sightings("t.txt"), nil) {
			key := p.Namespace + "/" + p.Name
			if seen[key] || p.Namespace == "" || p.Name == "" || strings.ToLower(key) != key || strings.ContainsAny(key, " \t_") {
				t.Fatalf("pod %q made twice or misnamed", key)
			}
			seen[key] = true
			if n := len(strings.Split(p.Annotations[kubetext.SeenInAnnotation], "; ")); n > 5 {
				t.Fatalf("pod %s seen in %d places", key, n)
			}
			if cs := strings.Split(p.Annotations[kubetext.ContainersSeenAnnotation], ","); !slices.IsSorted(cs) {
				t.Fatalf("containers of %s unsorted: %v", key, cs)
			}
		}
	})
}
