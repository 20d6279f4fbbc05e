package bundle_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/bundle"
	"github.com/rootcause/rootcause/agent/evidence/evidencetest"
)

func TestBundleEveryKind(t *testing.T) {
	b, err := bundle.OpenDir(evidencetest.KindsBundleDir())
	if err != nil {
		t.Fatal(err)
	}
	k := b.Sources(b.CapturedAt).Kubernetes
	evidencetest.RunKinds(t, k, evidencetest.KindsWant())
}

func TestBundleSecretValuesNeverRead(t *testing.T) {
	b, err := bundle.OpenDir(evidencetest.KindsBundleDir())
	if err != nil {
		t.Fatal(err)
	}
	k := b.Sources(b.CapturedAt).Kubernetes
	s, err := evidence.Get[corev1.Secret](context.Background(), k, "web", "db-credentials")
	if err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(s)
	for _, v := range evidencetest.KindsSecretValues {
		if strings.Contains(string(out), v) {
			t.Errorf("secret value %q served: %s", v, out)
		}
	}
	if _, ok := s.Data["password"]; !ok {
		t.Errorf("secret key names lost: %s", out)
	}
}

func TestBundleHPAv1Converted(t *testing.T) {
	b, _ := bundle.OpenDir(evidencetest.KindsBundleDir())
	h, err := evidence.Get[autoscalingv2.HorizontalPodAutoscaler](context.Background(), b.Sources(b.CapturedAt).Kubernetes, "web", "api")
	if err != nil {
		t.Fatal(err)
	}
	if h.Spec.ScaleTargetRef.Name != "api" || len(h.Spec.Metrics) != 1 || *h.Spec.Metrics[0].Resource.Target.AverageUtilization != 70 ||
		*h.Status.CurrentMetrics[0].Resource.Current.AverageUtilization != 35 {
		t.Errorf("autoscaling/v1 HPA not converted: %+v", h)
	}
}
