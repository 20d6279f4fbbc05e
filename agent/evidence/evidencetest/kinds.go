package evidencetest

import (
	"context"
	"encoding/json"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// KindsBundleDir is the test bundle agent/evidence/bundle/testdata/kinds:
// every kind of contract 6.1 in the forms people hand over (multi-document
// YAML at the root, a mixed `kind: List` JSON in a namespace folder, a
// `kubectl get -o yaml` List, events of both APIs, an autoscaling/v1 HPA),
// with a crashlooping worker whose current log has no timestamps.
func KindsBundleDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "bundle", "testdata", "kinds")
}

// KindsSecretValues are the values (base64 and decoded) of the test
// bundle's Secret: no backend may ever serve them.
var KindsSecretValues = []string{"aHVudGVyMi1kby1ub3Qtc2hvdw==", "hunter2-do-not-show", "YXBp"}

// KindsWant is what the kinds bundle holds: per kind, the objects of every
// namespace as "namespace/name" ("name" for cluster-scoped kinds).
type KindsWantT struct {
	Objects map[string][]string
	Logs    []LogWant
}

// KindsWant returns the expected answers of the kinds bundle.
func KindsWant() KindsWantT {
	worker := evidence.PodLogQuery{Namespace: "batch", Pod: "worker-7c8d9e6f5-abcde"}
	windowed := worker
	windowed.Since = time.Date(2026, 5, 20, 9, 0, 0, 0, time.UTC)
	windowed.Until = time.Date(2026, 5, 20, 9, 30, 0, 0, time.UTC)
	lines := []string{
		"starting worker",
		"loading /app/config.env",
		"/app/start.sh: line 14: DEPLOY_ENV is undefined",
		`/app/start.sh: line 22: syntax error: unexpected "fi"`,
	}
	return KindsWantT{
		Objects: map[string][]string{
			"Namespace":               {"batch", "web"},
			"Node":                    {"worker-1"},
			"Pod":                     {"batch/worker-7c8d9e6f5-abcde", "web/api-6b7c9d8f4-k2x9z"},
			"Deployment":              {"web/api"},
			"ReplicaSet":              {"web/api-6b7c9d8f4"},
			"StatefulSet":             {"web/redis"},
			"DaemonSet":               {"web/log-agent"},
			"Job":                     {"batch/migrate-db"},
			"CronJob":                 {"batch/nightly-report"},
			"Service":                 {"web/api"},
			"Endpoints":               {"web/api"},
			"EndpointSlice":           {"web/api-x7k2p"},
			"Ingress":                 {"web/api"},
			"Event":                   {"batch/migrate-db.17f29f0a1b2c3d4e", "batch/worker-7c8d9e6f5-abcde.17f2a0c1d2e3f405", "web/api-6b7c9d8f4-k2x9z.17f2a1b3c4d5e6f7", "web/api-data.17f2a1b3c4d5e700"},
			"PersistentVolumeClaim":   {"web/api-data", "web/cache"},
			"PersistentVolume":        {"pvc-3f1d9a7e-cache"},
			"StorageClass":            {"standard"},
			"ConfigMap":               {"web/api-config"},
			"Secret":                  {"web/db-credentials"},
			"ServiceAccount":          {"web/api"},
			"Role":                    {"web/api"},
			"RoleBinding":             {"web/api"},
			"ClusterRole":             {"api-reader"},
			"ClusterRoleBinding":      {"api-reader"},
			"NetworkPolicy":           {"web/deny-egress"},
			"HorizontalPodAutoscaler": {"web/api"},
			"PodDisruptionBudget":     {"web/api"},
			"ResourceQuota":           {"web/compute"},
			"LimitRange":              {"web/defaults"},
		},
		Logs: []LogWant{
			// the current log of a crashlooping container: no --previous log exists
			{Query: worker, Matched: 4, Texts: lines},
			// untimed lines stay when no window excludes them
			{Query: windowed, Matched: 4, Texts: lines},
			{Query: evidence.PodLogQuery{Namespace: "batch", Pod: "worker-7c8d9e6f5-abcde", Previous: true}, Code: evidence.CodeNotFound},
		},
	}
}

// RunKinds checks every kind of k against w, and that no Secret value is served.
func RunKinds(t *testing.T, k evidence.Kubernetes, w KindsWantT) {
	t.Helper()
	ctx := context.Background()
	for _, ki := range evidence.KubeKinds {
		objs, err := k.Objects(ctx, ki.Kind, "", "")
		if err != nil {
			t.Errorf("Objects(%s): %v", ki.Kind, err)
			continue
		}
		var got []string
		for _, o := range objs {
			if evidence.KindOf(o) != ki.Kind {
				t.Errorf("Objects(%s) returned a %T", ki.Kind, o)
			}
			if ki.Namespaced {
				got = append(got, o.GetNamespace()+"/"+o.GetName())
			} else {
				got = append(got, o.GetName())
			}
			b, _ := json.Marshal(o)
			for _, v := range KindsSecretValues {
				if strings.Contains(string(b), v) {
					t.Errorf("%s %s serves a Secret value", ki.Kind, o.GetName())
				}
			}
		}
		eq(t, "Objects("+ki.Kind+")", w.Objects[ki.Kind], got)
		if ki.Namespaced {
			one, err := k.Objects(ctx, ki.Kind, "web", "")
			must(t, "Objects("+ki.Kind+", web)", err)
			for _, o := range one {
				if o.GetNamespace() != "web" {
					t.Errorf("Objects(%s, web) returned %s/%s", ki.Kind, o.GetNamespace(), o.GetName())
				}
			}
		}
	}
	if _, err := k.Objects(ctx, "Widget", "", ""); evidence.CodeOf(err) != evidence.CodeInvalid {
		t.Errorf("unknown kind: %v, want invalid", err)
	}
	sel, err := k.Objects(ctx, "Pod", "", "app=worker")
	must(t, "Objects(Pod, app=worker)", err)
	if len(sel) != 1 || sel[0].GetName() != "worker-7c8d9e6f5-abcde" {
		t.Errorf("Objects(Pod, app=worker): %d objects", len(sel))
	}
	runLogs(t, k, w.Logs)
}

// CompareKinds checks that got answers every kind as want does, in every
// namespace and in all.
func CompareKinds(t *testing.T, want, got evidence.Kubernetes, namespaces []string) {
	t.Helper()
	ctx := context.Background()
	for _, ki := range evidence.KubeKinds {
		for _, ns := range append([]string{""}, namespaces...) {
			a, errA := want.Objects(ctx, ki.Kind, ns, "")
			b, errB := got.Objects(ctx, ki.Kind, ns, "")
			if errA != nil || errB != nil {
				t.Errorf("Objects(%s, %q): %v / %v", ki.Kind, ns, errA, errB)
				continue
			}
			eq(t, "Objects("+ki.Kind+", "+ns+")", normJSON(t, a), normJSON(t, b))
		}
	}
}
