package analyst

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestEnvOverride: a change that sets a key in a configuration file,
// while the workload's container sets the same key with another value in
// its environment (ASP.NET Core's Section__Key, Spring Boot's relaxed
// SECTION_KEY), is the override; the variable at the new value, a key no
// variable sets, or a one-word variable are not.
func TestEnvOverride(t *testing.T) {
	at := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	deploy := func(name string, env ...corev1.EnvVar) appsv1.Deployment {
		return appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop"},
			Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Env: env}}}}}}
	}
	for _, c := range []struct {
		name   string
		change string
		d      appsv1.Deployment
		env    string
	}{
		{"ASP.NET Core hierarchical variable", "ConfigMap billing-appsettings: Gateway.TimeoutSeconds 10 -> 45 in appsettings.Production.json",
			deploy("billing", corev1.EnvVar{Name: "Gateway__TimeoutSeconds", Value: "10"}), "Gateway__TimeoutSeconds"},
		{"Spring Boot relaxed binding", "application.yml: app.psp.read-timeout: 5s → 30s (helm upgrade)",
			deploy("billing", corev1.EnvVar{Name: "APP_PSP_READTIMEOUT", Value: "5s"}), "APP_PSP_READTIMEOUT"},
		{"colon keys, from … to", "appsettings.json Logging:LogLevel:Default from Debug to Information",
			deploy("billing", corev1.EnvVar{Name: "Logging__LogLevel__Default", Value: "Debug"}), "Logging__LogLevel__Default"},
		{"the variable already at the new value", "ConfigMap billing-appsettings: Gateway.TimeoutSeconds 10 -> 45",
			deploy("billing", corev1.EnvVar{Name: "Gateway__TimeoutSeconds", Value: "45"}), ""},
		{"no variable for the key", "ConfigMap billing-appsettings: Gateway.TimeoutSeconds 10 -> 45",
			deploy("billing", corev1.EnvVar{Name: "ASPNETCORE_ENVIRONMENT", Value: "Production"}), ""},
		{"another workload's variable", "ConfigMap billing-appsettings: Gateway.TimeoutSeconds 10 -> 45",
			deploy("invoices", corev1.EnvVar{Name: "Gateway__TimeoutSeconds", Value: "10"}), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Changes: []evidence.Change{{Timestamp: at, Service: "billing", Kind: "config", Description: c.change}},
				K8s: K8sEvidence{Deployments: []appsv1.Deployment{c.d}}}
			fs := detectEnvOverride(ev, nil)
			if c.env == "" {
				if len(fs) != 0 {
					t.Fatalf("findings %+v", fs)
				}
				return
			}
			if len(fs) != 1 || fs[0].fact("env") != c.env {
				t.Fatalf("findings %+v", fs)
			}
			h := &Hypothesis{Kind: KindEnvOverride, Subject: "billing", Primary: []*Finding{&fs[0]}}
			wantDescribed(t, h, Scope{}, "environment variable "+c.env, "overrides it", "precedence")
			if len(recommend(h, Scope{})) < 2 {
				t.Error("recommendations")
			}
		})
	}
}
