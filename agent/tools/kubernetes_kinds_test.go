package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/bundle"
	"github.com/rootcause/rootcause/agent/evidence/evidencetest"
	"github.com/rootcause/rootcause/agent/tools"
)

func kindsSession(t *testing.T) *tools.Session {
	t.Helper()
	b, err := bundle.OpenDir(evidencetest.KindsBundleDir())
	if err != nil {
		t.Fatal(err)
	}
	c := tools.Builtin()
	return &tools.Session{Catalog: c, Toolkit: c.Names(), Env: &tools.Env{Sources: b.Sources(b.CapturedAt)}}
}

// rel renders related objects as "relation Kind ns/name status: detail".
func rel(d *tools.ResourceDescription) []string {
	var out []string
	for _, r := range d.Related {
		s := fmt.Sprintf("%s %s %s/%s %s", r.Relation, r.Kind, r.Namespace, r.Name, r.Status)
		if r.Detail != "" {
			s += ": " + r.Detail
		}
		out = append(out, s)
	}
	return out
}

func TestDescribeResourceWalksReferences(t *testing.T) {
	s := kindsSession(t)
	ctx := context.Background()
	cases := []struct {
		args   string
		want   []string // related lines that must appear
		events []string // reasons of the events about it
	}{
		{`{"kind": "pod", "namespace": "web", "name": "api-6b7c9d8f4-k2x9z"}`, []string{
			"owner ReplicaSet web/api-6b7c9d8f4 found",
			"owner Deployment web/api found",
			"node Node /worker-1 found: excluded: nodeSelector disktype=ssd (node has hdd)",
			"service_account ServiceAccount web/api found",
			"volume_claim PersistentVolumeClaim web/api-data found: volume data",
			"storage_class StorageClass /fast-ssd missing: class of claim api-data (Pending)",
			"volume_claim PersistentVolumeClaim web/cache found: volume cache",
			"volume PersistentVolume /pvc-3f1d9a7e-cache found: bound to claim cache",
			"storage_class StorageClass /standard found: class of claim cache (Bound)",
			"config_map ConfigMap web/api-config found: envFrom of container api",
			"secret Secret web/db-credentials found: env DB_PASSWORD of container api",
			"config_map ConfigMap web/feature-flags missing: env FLAGS of container api",
			"service Service web/api found",
			"disruption_budget PodDisruptionBudget web/api found: disruptions allowed 0",
			"autoscaler HorizontalPodAutoscaler web/api found: replicas 2 current, 2 desired, max 10; metrics cpu 35%/70%",
		}, []string{"FailedScheduling"}},
		{`{"kind": "hpa", "namespace": "web", "name": "api"}`, []string{
			"scale_target Deployment web/api found: replicas 2 current, 2 desired, min 2 max 10",
		}, nil},
		{`{"kind": "svc", "namespace": "web", "name": "api"}`, []string{
			"endpoints Endpoints web/api found: 1 ready, 0 not ready addresses",
			"endpoint_slice EndpointSlice web/api-x7k2p found",
			"pod Pod web/api-6b7c9d8f4-k2x9z found: Pending",
			"ingress Ingress web/api found",
		}, nil},
		{`{"kind": "deployment", "namespace": "web", "name": "api"}`, []string{
			"owned ReplicaSet web/api-6b7c9d8f4 found",
			"autoscaler HorizontalPodAutoscaler web/api found: replicas 2 current, 2 desired, max 10; metrics cpu 35%/70%",
		}, nil},
		{`{"kind": "Job", "namespace": "batch", "name": "migrate-db"}`, []string{
			"service_account ServiceAccount batch/default missing",
		}, []string{"BackoffLimitExceeded"}},
		{`{"kind": "pvc", "namespace": "web", "name": "api-data"}`, []string{
			"storage_class StorageClass /fast-ssd missing: class of claim api-data (Pending)",
			"pod Pod web/api-6b7c9d8f4-k2x9z found: Pending",
		}, []string{"ProvisioningFailed"}},
		{`{"kind": "clusterrolebinding", "name": "api-reader"}`, []string{
			"role ClusterRole /api-reader found",
			"subject ServiceAccount web/api found",
		}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.args, func(t *testing.T) {
			out, err := s.Call(ctx, "describe_resource", json.RawMessage(tc.args))
			if err != nil {
				t.Fatal(err)
			}
			d := out.(*tools.ResourceDescription)
			got := rel(d)
			for _, w := range tc.want {
				if !slices.Contains(got, w) {
					t.Errorf("missing %q in:\n%s", w, strings.Join(got, "\n"))
				}
			}
			var reasons []string
			for _, e := range d.Events {
				reasons = append(reasons, e.Reason)
			}
			if strings.Join(reasons, ",") != strings.Join(tc.events, ",") {
				t.Errorf("events %v, want %v", reasons, tc.events)
			}
			b, _ := json.Marshal(d)
			for _, v := range evidencetest.KindsSecretValues {
				if strings.Contains(string(b), v) {
					t.Errorf("secret value in the description")
				}
			}
		})
	}
}

func TestKindToolsErrors(t *testing.T) {
	s := kindsSession(t)
	ctx := context.Background()
	for _, tc := range []struct{ tool, args, code string }{
		{"list_resources", `{"kind": "widgets"}`, evidence.CodeInvalid},
		{"list_resources", `{}`, evidence.CodeInvalid},
		{"describe_resource", `{"kind": "pod", "name": "x"}`, evidence.CodeInvalid},
		{"describe_resource", `{"kind": "pod", "namespace": "web", "name": "nope"}`, evidence.CodeNotFound},
	} {
		if _, err := s.Call(ctx, tc.tool, json.RawMessage(tc.args)); evidence.CodeOf(err) != tc.code && !strings.Contains(fmt.Sprint(err), "invalid") {
			t.Errorf("%s %s: %v, want %s", tc.tool, tc.args, err, tc.code)
		}
	}
	out, err := s.Call(ctx, "list_resources", json.RawMessage(`{"kind": "pvc", "namespace": "web"}`))
	if err != nil {
		t.Fatal(err)
	}
	if objs := out.([]evidence.KubeObject); len(objs) != 2 {
		t.Errorf("list_resources pvc: %d", len(objs))
	}
}

// denySecrets is a cluster whose credentials may not list Secrets.
type denySecrets struct{ evidence.Kubernetes }

func (d denySecrets) Objects(ctx context.Context, kind, ns, sel string) ([]evidence.KubeObject, error) {
	if kind == "Secret" {
		return nil, evidence.Errorf("kubernetes", evidence.CodeUnavailable, "listing secrets: access denied")
	}
	return d.Kubernetes.Objects(ctx, kind, ns, sel)
}

func TestDescribeResourceWithoutSecretAccess(t *testing.T) {
	b, err := bundle.OpenDir(evidencetest.KindsBundleDir())
	if err != nil {
		t.Fatal(err)
	}
	k := denySecrets{b.Sources(b.CapturedAt).Kubernetes}
	d, err := tools.Describe(context.Background(), k, "Pod", "web", "api-6b7c9d8f4-k2x9z")
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(rel(d), "\n")
	if !strings.Contains(got, "secret Secret web/db-credentials unknown: env DB_PASSWORD of container api; Secret could not be read: kubernetes: listing secrets: access denied") ||
		!strings.Contains(got, "config_map ConfigMap web/feature-flags missing") {
		t.Errorf("related:\n%s", got)
	}
}
