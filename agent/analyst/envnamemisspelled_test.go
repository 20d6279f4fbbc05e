package analyst

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestEnvNameMisspelled reads a well-known variable set under a
// misspelled name, from a deployment's spec, kubectl describe's
// Environment section and a jq of the env list, with the library's
// default in the workload's own lines: the OpenTelemetry Go SDK exporting
// to localhost:4318, the Java agent to localhost:4317, Datadog's tracer to
// localhost:8126, Spring Boot with no active profile. The right name set
// beside the typo, a name off by a letter with no default in the lines, or
// the right name alone are not it.
func TestEnvNameMisspelled(t *testing.T) {
	deploy := func(env ...corev1.EnvVar) appsv1.Deployment {
		d := appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "stock-api", Namespace: "comms"}}
		d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "app", Env: env}}
		return d
	}
	goOTLP := `2026/03/14 09:20:03 traces export: Post "https://localhost:4318/v1/traces": dial tcp [::1]:4318: connect: connection refused`
	javaOTLP := `[otel.javaagent 2026-03-14 09:20:03:114 +0000] [OkHttp http://localhost:4317/...] ERROR io.opentelemetry.exporter.internal.grpc.GrpcExporter - Failed to export spans. The request could not be executed. Full error message: Failed to connect to localhost/127.0.0.1:4317`
	ddLine := `2026-03-14 09:20:03 UTC | TRACER | ERROR | Failed to send traces to Datadog Agent at http://localhost:8126: connection refused`
	springLine := `2026-03-14T09:20:03.004Z  INFO 1 --- [stock-api] [           main] c.a.stock.StockApplication : No active profile set, falling back to 1 default profile: "default"`
	describe := evidence.CommandOutput{Command: "kubectl -n comms describe pod stock-api-5c9b7d6f48-4vzqn", Pod: "stock-api-5c9b7d6f48-4vzqn", Lines: []string{
		"    Environment:", "      OTEL_SERVICE_NAME:             stock-api", "      OTEL_EXPORTR_OTLP_ENDPOINT:    http://otel-collector.observability:4317", "    Mounts:"}}
	jq := evidence.CommandOutput{Command: "kubectl -n comms get deploy stock-api -o jsonpath='{.spec.template.spec.containers[0].env}' | jq -c '.[]'", Lines: []string{
		`{"name":"DD_AGENT_HOTS","value":"datadog-agent.monitoring.svc"}`, `{"name":"DD_SERVICE","value":"stock-api"}`}}
	cases := []struct {
		name     string
		deploys  []appsv1.Deployment
		cmds     []evidence.CommandOutput
		line     string
		variable string // "" for no finding
		intended string
	}{
		{"a deployment's OTEL_EXPORTER_OTLP_ENDPONT, the Go SDK on localhost:4318",
			[]appsv1.Deployment{deploy(corev1.EnvVar{Name: "OTEL_EXPORTER_OTLP_ENDPONT", Value: "http://otel-collector:4318"})}, nil, goOTLP,
			"OTEL_EXPORTER_OTLP_ENDPONT", "OTEL_EXPORTER_OTLP_ENDPOINT"},
		{"kubectl describe's Environment, the Java agent on localhost:4317", nil, []evidence.CommandOutput{describe}, javaOTLP,
			"OTEL_EXPORTR_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"},
		{"a jq of the env list, Datadog's tracer on localhost:8126", nil, []evidence.CommandOutput{jq}, ddLine,
			"DD_AGENT_HOTS", "DD_AGENT_HOST"},
		{"Spring Boot with no active profile", []appsv1.Deployment{deploy(corev1.EnvVar{Name: "SPRING_PROFILE_ACTIVE", Value: "prod"})}, nil, springLine,
			"SPRING_PROFILE_ACTIVE", "SPRING_PROFILES_ACTIVE"},
		{"the right name set beside the typo",
			[]appsv1.Deployment{deploy(corev1.EnvVar{Name: "OTEL_EXPORTER_OTLP_ENDPONT", Value: "x"}, corev1.EnvVar{Name: "OTEL_EXPORTER_OTLP_ENDPOINT", Value: "http://otel-collector:4318"})}, nil, goOTLP, "", ""},
		{"a typo with no default in the lines",
			[]appsv1.Deployment{deploy(corev1.EnvVar{Name: "OTEL_EXPORTER_OTLP_ENDPONT", Value: "http://otel-collector:4318"})}, nil, `listening on :8080`, "", ""},
		{"the right name alone",
			[]appsv1.Deployment{deploy(corev1.EnvVar{Name: "OTEL_EXPORTER_OTLP_ENDPOINT", Value: "http://localhost:4318"})}, nil, goOTLP, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := Gathered{Window: win, Logs: []LogSet{minedSet("stock-api", false, 0, c.line)}, Commands: c.cmds}
			ev.K8s.Deployments = c.deploys
			f, ok := oneFinding(t, detectEnvNameMisspelled(&ev), c.variable != "")
			if !ok {
				return
			}
			if f.Subject != "stock-api" || f.fact("variable") != c.variable || f.fact("intended") != c.intended {
				t.Errorf("subject %q variable %q intended %q, want stock-api %q %q", f.Subject, f.fact("variable"), f.fact("intended"), c.variable, c.intended)
			}
			checkWritten(t, envNameMisspelled, &f, "Rename "+c.variable, "a misspelled name of "+c.intended, "typo", "runs on its default")
		})
	}
}
