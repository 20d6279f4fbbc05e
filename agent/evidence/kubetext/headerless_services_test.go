package kubetext_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/evidence/kubetext"
)

// A services table whose header a pipe cut off (get svc -A | grep NAME)
// or --no-headers left out is read with kubectl's columns: each row shows
// itself a Service by its type and its cluster IP. Rows that are not
// services are not read.
func TestHeaderlessServices(t *testing.T) {
	ref := time.Date(2026, 11, 5, 14, 50, 0, 0, time.UTC)
	cases := []struct {
		name, text string
		want       []string // namespace/name type clusterIP externalName
	}{
		{"grep, all namespaces", `$ kubectl get svc -A | grep -i redis
cache         redis            ClusterIP      10.96.142.17   <none>                          6379/TCP   1y122d
cache         redis-headless   ClusterIP      None           <none>                          6379/TCP   1y122d
shop          redis            ExternalName   <none>         redis.cache.svc.cluster.local   6379/TCP   1y98d
`, []string{"cache/redis ClusterIP 10.96.142.17 ", "cache/redis-headless ClusterIP None ", "shop/redis ExternalName  redis.cache.svc.cluster.local"}},
		{"no headers, one namespace", `$ kubectl get services -n shop --no-headers
web        LoadBalancer   10.0.171.239   20.51.12.3    80:31380/TCP,443:31390/TCP   12d
payments   NodePort       10.0.44.10     <none>        8080:30080/TCP               40d
`, []string{"shop/web LoadBalancer 10.0.171.239 ", "shop/payments NodePort 10.0.44.10 "}},
		{"wide, grep", `$ kubectl get svc -o wide -n shop | grep api
orders-api   ClusterIP   fd00:10:96::1a2b   <none>        8080/TCP   3d    app=orders-api
`, []string{"shop/orders-api ClusterIP fd00:10:96::1a2b "}},
		{"not a services table", `$ kubectl get svc -A | grep -i redis
redis is listed below   maybe   not   really   here   ok
`, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := kubetext.Parse([]byte(c.text), ref)
			var got []string
			for _, o := range res.Objects {
				s, ok := o.(*corev1.Service)
				if !ok {
					continue
				}
				got = append(got, s.Namespace+"/"+s.Name+" "+string(s.Spec.Type)+" "+s.Spec.ClusterIP+" "+s.Spec.ExternalName)
			}
			if len(got) != len(c.want) {
				t.Fatalf("services %q, want %q", got, c.want)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Errorf("service %d = %q, want %q", i, got[i], c.want[i])
				}
			}
		})
	}
}
