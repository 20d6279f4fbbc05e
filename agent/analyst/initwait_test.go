package analyst

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// An init container that polls a dependency, in the forms wait-for init
// containers take (nc, wait-for-it, nslookup, dockerize, pg_isready), is
// followed to the Service it polls and to what serves it.
func TestInitWait(t *testing.T) {
	end := time.Date(2026, 11, 4, 11, 40, 0, 0, time.UTC)
	w := Window{BaselineStart: end.Add(-2 * time.Hour), Start: end.Add(-time.Hour), End: end}
	svc := func(ns, name string, ready int, known bool, sel map[string]string) ServiceState {
		return ServiceState{Service: corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.ServiceSpec{Selector: sel}},
			ReadyEndpoints: ready, Known: known}
	}
	sts := func(ns, name string, replicas, ready int32, tmpl map[string]string) appsv1.StatefulSet {
		s := appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		s.Spec.Replicas, s.Status.ReadyReplicas, s.Spec.Template.Labels = &replicas, ready, tmpl
		return s
	}
	dep := func(ns, name string, replicas, ready int32) appsv1.Deployment {
		d := appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		d.Spec.Replicas, d.Status.ReadyReplicas = &replicas, ready
		return d
	}
	cases := []struct {
		name      string
		ns        string
		command   []string
		log       []string
		started   time.Duration // before the end of the window
		services  []ServiceState
		sets      []appsv1.StatefulSet
		deps      []appsv1.Deployment
		changes   []evidence.Change
		wantState string
		desc      []string
	}{
		{"nc loop, StatefulSet scaled to 0", "orders",
			[]string{"sh", "-c", `until nc -z -w 2 orders-db 5432; do echo "$(date -u +%FT%TZ) waiting for orders-db:5432"; sleep 5; done`},
			[]string{"2026-11-04T11:39:41Z waiting for orders-db:5432"}, 44 * time.Minute,
			[]ServiceState{svc("orders", "orders-db", 0, true, nil), svc("orders", "rabbitmq", 1, true, nil)},
			[]appsv1.StatefulSet{sts("orders", "orders-db", 0, 0, nil)}, nil,
			[]evidence.Change{{Timestamp: end.Add(-150 * time.Minute), Service: "orders-db", Kind: "infra", Description: "kubectl scale statefulset orders-db --replicas=0 (was 1) to move its volume"}},
			"scaled_to_zero", []string{"waits for orders-db:5432", "Service orders-db has no endpoints", "StatefulSet orders-db is scaled to 0 replicas", "scaled down by the infrastructure change", "Init:0/1"}},
		{"wait-for-it, Deployment not ready", "shop",
			[]string{"/wait-for-it.sh", "mysql:3306", "-t", "0"},
			[]string{"wait-for-it.sh: waiting for mysql:3306 without a timeout"}, 20 * time.Minute,
			[]ServiceState{svc("shop", "mysql", 0, true, map[string]string{"app": "mysql"})},
			nil, []appsv1.Deployment{dep("shop", "mysql", 1, 0)}, nil,
			"not_ready", []string{"waits for mysql:3306", "Deployment mysql has 0 of 1 pods ready"}},
		{"nslookup loop, Service missing", "cache",
			[]string{"sh", "-c", "until nslookup redis-master.cache.svc.cluster.local; do echo waiting for redis-master; sleep 2; done"},
			[]string{"nslookup: can't resolve 'redis-master.cache.svc.cluster.local'", "waiting for redis-master"}, 15 * time.Minute,
			[]ServiceState{svc("cache", "redis", 1, true, nil), svc("cache", "api", 2, true, nil)}, nil, nil, nil,
			"missing", []string{"no Service redis-master exists in namespace cache"}},
		{"pg_isready, selector names another StatefulSet", "billing",
			[]string{"sh", "-c", "until pg_isready -h pg-primary -p 5432; do sleep 3; done"},
			[]string{"pg-primary:5432 - no response"}, 30 * time.Minute,
			[]ServiceState{svc("billing", "pg-primary", 0, true, map[string]string{"app": "pg", "role": "primary"})},
			[]appsv1.StatefulSet{sts("billing", "billing-cache", 2, 2, map[string]string{"app": "cache"}), sts("billing", "postgres", 0, 0, map[string]string{"app": "pg", "role": "primary"})}, nil, nil,
			"scaled_to_zero", []string{"StatefulSet postgres is scaled to 0 replicas"}},
		{"dockerize, dependency served: not this cause", "shop",
			[]string{"dockerize", "-wait", "tcp://postgres:5432", "-timeout", "300s"},
			[]string{"Problem with dial: dial tcp 10.0.0.5:5432: connect: connection refused. Sleeping 1s"}, 20 * time.Minute,
			[]ServiceState{svc("shop", "postgres", 1, true, nil)}, []appsv1.StatefulSet{sts("shop", "postgres", 1, 1, nil)}, nil, nil, "", nil},
		{"a start-up, not a wait", "orders",
			[]string{"sh", "-c", "until nc -z orders-db 5432; do sleep 5; done"}, nil, 2 * time.Minute,
			[]ServiceState{svc("orders", "orders-db", 0, true, nil)}, []appsv1.StatefulSet{sts("orders", "orders-db", 0, 0, nil)}, nil, nil, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: "app-6c8d7f9b5-5jv2p", Labels: map[string]string{"app": "app"}}}
			p.Spec.InitContainers = []corev1.Container{{Name: "wait", Command: c.command}}
			p.Status.Phase = corev1.PodPending
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "wait", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(end.Add(-c.started))}}}}
			var lines []evidence.LogLine
			for _, l := range c.log {
				lines = append(lines, evidence.LogLine{Text: l})
			}
			k := &K8sEvidence{Pods: []corev1.Pod{p}, Services: c.services, StatefulSets: c.sets, Deployments: c.deps,
				PreviousLogs: map[string][]evidence.LogLine{c.ns + "/" + p.Name + "/wait": lines}}
			fs := detectInitWaits(k, w, c.changes)
			if c.wantState == "" {
				if len(fs) != 0 {
					t.Fatalf("findings %+v", fs)
				}
				return
			}
			if len(fs) != 1 {
				t.Fatalf("%d findings, want 1", len(fs))
			}
			f := &fs[0]
			if f.Kind != KindInitWait || f.Subject != "app" || f.fact("state") != c.wantState {
				t.Errorf("finding %s %s state %q, want %q", f.Kind, f.Subject, f.fact("state"), c.wantState)
			}
			h := &Hypothesis{Kind: f.Kind, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{f}}
			d := describe(h, Scope{Namespace: c.ns})
			for _, s := range c.desc {
				if !strings.Contains(d, s) {
					t.Errorf("description %q lacks %q", d, s)
				}
			}
			if len(recommend(h, Scope{Namespace: c.ns})) == 0 {
				t.Error("no recommendation")
			}
		})
	}
}

// The hosts a wait loop polls are read from its command and its log.
func TestWaitTargets(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"until nc -z -w 2 orders-db 5432; do sleep 5; done", "orders-db:5432"},
		{"nc -zv kafka-0.kafka-headless 9092", "kafka-0.kafka-headless:9092"},
		{"/wait-for-it.sh mysql:3306 -t 0", "mysql:3306"},
		{"dockerize -wait tcp://postgres:5432 -timeout 60s", "postgres:5432"},
		{"until curl -sf http://config-server:8888/actuator/health; do sleep 2; done", "config-server:8888"},
		{"until pg_isready -h pg-primary -p 5432; do sleep 3; done", "pg-primary"},
		{"nslookup: can't resolve 'redis-master.cache.svc.cluster.local'", "redis-master.cache.svc.cluster.local"},
		{"waiting for elasticsearch", "elasticsearch"},
	} {
		ts := waitTargets(c.text)
		if len(ts) == 0 {
			t.Errorf("%q: no target", c.text)
			continue
		}
		got := ts[0][0]
		if ts[0][1] != "" {
			got += ":" + ts[0][1]
		}
		if got != c.want {
			t.Errorf("%q: %q, want %q", c.text, got, c.want)
		}
	}
}

// A wait for a Service that does not exist names the resolver's refusal
// from the wait's log and, when exactly one Service of the namespace holds
// the missing name and serves the polled port, that Service: the
// dependency renamed by a chart or a release prefix.
func TestInitWaitRenamedService(t *testing.T) {
	end := time.Date(2026, 11, 4, 11, 40, 0, 0, time.UTC)
	w := Window{BaselineStart: end.Add(-2 * time.Hour), Start: end.Add(-time.Hour), End: end}
	svc := func(name, ip string, ports ...int32) ServiceState {
		s := corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: name}, Spec: corev1.ServiceSpec{ClusterIP: ip}}
		for _, p := range ports {
			s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Port: p})
		}
		return ServiceState{Service: s, ReadyEndpoints: 1, Known: true}
	}
	cases := []struct {
		name          string
		command       []string
		log           []string
		services      []ServiceState
		want, absent  []string
		wantSuccessor string
	}{
		{"busybox nc, chart renamed the database Service",
			[]string{"sh", "-c", `until nc -z -w 2 postgres 5432; do echo "waiting for postgres:5432"; sleep 2; done`},
			[]string{"nc: bad address 'postgres'", "waiting for postgres:5432"},
			[]ServiceState{svc("api", "10.0.0.3", 80), svc("api-postgresql", "10.0.0.7", 5432), svc("api-postgresql-hl", "None", 5432)},
			[]string{`"nc: bad address 'postgres'"`, "Service api-postgresql of that namespace (port 5432)"}, nil, "api-postgresql"},
		{"pg_isready, libpq cannot translate the name, release prefix",
			[]string{"sh", "-c", "until pg_isready -h db -p 5432; do sleep 3; done"},
			[]string{`pg_isready: error: could not translate host name "db" to address: Name or service not known`},
			[]ServiceState{svc("shop-db", "10.0.0.9", 5432), svc("shop-dbadmin", "10.0.0.10", 8080)},
			[]string{"could not translate host name", "Service shop-db of that namespace"}, nil, "shop-db"},
		{"nslookup, two Services hold the name: none is named",
			[]string{"sh", "-c", "until nslookup redis; do echo waiting for redis; sleep 2; done"},
			[]string{"nslookup: can't resolve 'redis'"},
			[]ServiceState{svc("cache-redis-master", "10.0.0.4", 6379), svc("cache-redis-replicas", "10.0.0.5", 6379)},
			[]string{"can't resolve 'redis'"}, []string{"new name"}, ""},
		{"Go resolver, no Service holds the name",
			[]string{"/bin/wait4x", "tcp", "orders-db:5432", "--timeout", "0"},
			[]string{"dial tcp: lookup orders-db on 10.96.0.10:53: no such host"},
			[]ServiceState{svc("orders", "10.0.0.2", 80)},
			[]string{"no such host"}, []string{"new name"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "app-6c8d7f9b5-5jv2p", Labels: map[string]string{"app": "app"}}}
			p.Spec.InitContainers = []corev1.Container{{Name: "wait", Command: c.command}}
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "wait", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(end.Add(-25 * time.Minute))}}}}
			var lines []evidence.LogLine
			for _, l := range c.log {
				lines = append(lines, evidence.LogLine{Text: l})
			}
			k := &K8sEvidence{Pods: []corev1.Pod{p}, Services: c.services, PreviousLogs: map[string][]evidence.LogLine{"ns1/" + p.Name + "/wait": lines}}
			fs := detectInitWaits(k, w, nil)
			if len(fs) != 1 || fs[0].fact("state") != "missing" {
				t.Fatalf("findings %+v, want one of a missing Service", fs)
			}
			f := &fs[0]
			if f.fact("successor") != c.wantSuccessor {
				t.Errorf("successor %q, want %q", f.fact("successor"), c.wantSuccessor)
			}
			h := &Hypothesis{Kind: f.Kind, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{f}}
			d := describe(h, Scope{Namespace: "ns1"})
			for _, s := range c.want {
				if !strings.Contains(d, s) {
					t.Errorf("description %q lacks %q", d, s)
				}
			}
			for _, s := range c.absent {
				if strings.Contains(d, s) {
					t.Errorf("description %q holds %q", d, s)
				}
			}
		})
	}
}
