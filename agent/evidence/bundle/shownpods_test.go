package bundle_test

import (
	"context"
	"slices"
	"testing"
	"testing/fstest"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestLoggedPodsShown: the pods whose logs a transcript printed are named
// as shown, their namespace the command's (-n, --namespace=) or, when it
// said none, that of the listed pod of that name; a pod whose log is a
// file and was also printed is named once.
func TestLoggedPodsShown(t *testing.T) {
	session := "$ kubectl get pods -n shop\n" +
		"NAME                            READY   STATUS    RESTARTS   AGE\n" +
		"inventory-api-7c5d9b6f8-2mdqw   1/1     Running   0          6d\n" +
		"inventory-api-7c5d9b6f8-fx8kl   1/1     Running   0          6d\n" +
		"\n" +
		"$ kubectl logs -n shop inventory-api-7c5d9b6f8-fx8kl --since=5m | tail -2\n" +
		"2026-11-24T13:54:31.998Z ERROR 1 --- [io-8080-exec-41] o.h.engine.jdbc.spi.SqlExceptionHelper : HikariPool-1 - Connection is not available, request timed out after 3000ms\n" +
		"2026-11-24T13:54:32.001Z  WARN 1 --- [io-8080-exec-41] c.s.inventory.web.ReservationController : POST /v1/reservations -> 503\n" +
		"\n" +
		"$ kubectl logs inventory-api-7c5d9b6f8-2mdqw --tail=1\n" +
		"2026-11-24T13:54:40.000Z  INFO 1 --- [main] c.s.inventory.App : ok\n" +
		"\n" +
		"$ kubectl logs --namespace=payments ledger-0 --tail=1\n" +
		"2026-11-24T13:54:40.000Z INFO ready\n" +
		"\n" +
		"$ kubectl logs orphan-pod-1 --tail=1\n" +
		"2026-11-24T13:54:40.000Z INFO ready\n"
	fsys := fstest.MapFS{
		"session.txt":                           {Data: []byte(session)},
		"kubernetes/payments/ledger-0/logs.txt": {Data: []byte("2026-11-24T13:50:00Z INFO started\n")},
		"kubernetes/payments/ledger-1/logs.txt": {Data: []byte("2026-11-24T13:50:00Z INFO started\n")},
	}
	k, l, all := loggedPods(t, fsys, time.Date(2026, 11, 24, 13, 55, 0, 0, time.UTC))
	ctx := context.Background()
	want := []evidence.PodRef{
		{Namespace: "payments", Name: "ledger-0", Shown: true},
		{Namespace: "payments", Name: "ledger-1"},
		{Namespace: "shop", Name: "inventory-api-7c5d9b6f8-fx8kl", Shown: true},
		{Namespace: "shop", Name: "inventory-api-7c5d9b6f8-2mdqw", Shown: true},
	}
	if !slices.Equal(all, want) {
		t.Fatalf("logged pods\n%v, want\n%v", all, want)
	}
	shop, _ := l.LoggedPods(ctx, "shop")
	if len(shop) != 2 || !shop[0].Shown {
		t.Fatalf("shop: %v", shop)
	}
	lr, err := k.PodLogs(ctx, evidence.PodLogQuery{Namespace: "shop", Pod: "inventory-api-7c5d9b6f8-fx8kl"})
	if err != nil || len(lr.Lines) != 2 {
		t.Fatalf("the shown pod's log: %+v %v", lr, err)
	}
}
