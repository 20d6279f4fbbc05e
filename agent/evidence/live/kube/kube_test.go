package kube_test

import (
	"context"
	"net"
	"path"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/bundle"
	"github.com/rootcause/rootcause/agent/evidence/evidencetest"
	"github.com/rootcause/rootcause/agent/evidence/live/kube"
	"github.com/rootcause/rootcause/agent/evidence/live/kube/kubetest"
	"github.com/rootcause/rootcause/agent/tools"
)

var _ tools.DeploymentWriter = (*kube.Client)(nil)

func TestLiveKubernetesWrites(t *testing.T) {
	c, api := startAPI(t)
	ctx := context.Background()
	now := time.Date(2026, 3, 14, 10, 45, 0, 0, time.UTC)
	if err := c.RestartDeployment(ctx, "shop", "checkout", now); err != nil {
		t.Fatal(err)
	}
	if len(api.Patches) != 1 || !strings.Contains(api.Patches[0], "strategic-merge-patch") ||
		!strings.Contains(api.Patches[0], `"kubectl.kubernetes.io/restartedAt":"2026-03-14T10:45:00Z"`) {
		t.Errorf("restart patch: %v", api.Patches)
	}
	if err := c.ScaleDeployment(ctx, "shop", "checkout", 3); err != nil {
		t.Fatal(err)
	}
	if api.Scaled["shop/checkout"] != 3 {
		t.Errorf("scale: %v", api.Scaled)
	}
	if err := c.ScaleDeployment(ctx, "shop", "nope", 3); evidence.CodeOf(err) != evidence.CodeNotFound {
		t.Errorf("scale of a missing deployment: %v", err)
	}
}

func startAPI(t *testing.T) (*kube.Client, *kubetest.Server) {
	t.Helper()
	return startDir(t, evidencetest.ShopBundleDir(), nil)
}

func startDir(t *testing.T, dir string, served map[string]bool) (*kube.Client, *kubetest.Server) {
	t.Helper()
	api, rc := kubetest.Start(t, dir)
	api.Served = served
	rc.Timeout = 5 * time.Second
	c, err := kube.New(kube.Config{REST: rc})
	if err != nil {
		t.Fatal(err)
	}
	return c, api
}

func TestLiveKubernetesConformance(t *testing.T) {
	c, api := startAPI(t)
	evidencetest.RunKubernetes(t, c, evidencetest.ShopKubeWant())
	if api.Requests() == 0 {
		t.Fatal("client-go never reached the loopback API server")
	}
}

func TestLiveKubernetesMatchesBundle(t *testing.T) {
	c, _ := startAPI(t)
	b, err := bundle.OpenDir(evidencetest.ShopBundleDir())
	if err != nil {
		t.Fatal(err)
	}
	evidencetest.CompareKubernetes(t, b.Sources(b.CapturedAt).Kubernetes, c, []string{"shop", "default"}, evidencetest.ShopLogQueries())
}

func TestLiveKubernetesUnavailable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	c, err := kube.New(kube.Config{REST: &rest.Config{Host: "http://" + addr}, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Pods(context.Background(), "shop", "")
	if evidence.CodeOf(err) != evidence.CodeUnavailable || evidence.SourceOf(err) != "kubernetes" {
		t.Errorf("connection refused: %v, want kubernetes unavailable", err)
	}
	if _, err := kube.New(kube.Config{Kubeconfig: path.Join(t.TempDir(), "missing")}); evidence.CodeOf(err) != evidence.CodeNotConfigured {
		t.Errorf("missing kubeconfig: %v, want not_configured", err)
	}
}

// oldCluster serves no autoscaling/v2: HPAs come through the v1 fallback.
var oldCluster = map[string]bool{"v1": true, "apps/v1": true, "batch/v1": true, "discovery.k8s.io/v1": true, "networking.k8s.io/v1": true,
	"storage.k8s.io/v1": true, "rbac.authorization.k8s.io/v1": true, "autoscaling/v1": true, "policy/v1": true, "events.k8s.io/v1": true}

func TestLiveKubernetesEveryKind(t *testing.T) {
	c, api := startDir(t, evidencetest.KindsBundleDir(), oldCluster)
	evidencetest.RunKinds(t, c, evidencetest.KindsWant())
	if api.Requests() == 0 {
		t.Fatal("client-go never reached the loopback API server")
	}
}

func TestLiveKubernetesEveryKindMatchesBundle(t *testing.T) {
	c, _ := startDir(t, evidencetest.KindsBundleDir(), oldCluster)
	b, err := bundle.OpenDir(evidencetest.KindsBundleDir())
	if err != nil {
		t.Fatal(err)
	}
	k := b.Sources(b.CapturedAt).Kubernetes
	evidencetest.CompareKinds(t, k, c, []string{"web", "batch", "nosuch"})
	evidencetest.CompareKubernetes(t, k, c, []string{"web", "batch"}, nil)
}
