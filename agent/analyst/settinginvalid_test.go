package analyst

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// Lines refusing a setting's value, as their software writes them: the
// setting, the value and what it accepts are read; a line that refuses no
// setting is not read as one.
func TestRefusedSetting(t *testing.T) {
	cases := []struct {
		name, line, next       string
		key, value, valid, sug string
		ok                     bool
	}{
		{"pgx, the value in the connection string", `{"level":"fatal","msg":"startup failed","error":"store: cannot parse ` + "`host=db port=5432 dbname=rates user=app password=xxxxx sslmode=required`" + `: failed to configure TLS (sslmode is invalid)"}`, "",
			"sslmode", "required", "disable, allow, prefer, require, verify-ca, verify-full", "require", true},
		{"libpq / psycopg", `psycopg2.OperationalError: invalid sslmode value: "verify_full"`, "",
			"sslmode", "verify_full", "disable, allow, prefer, require, verify-ca, verify-full", "verify-full", true},
		{"lib/pq lists what it supports", `pq: unsupported sslmode "enabled"; only "require" (default), "verify-full", "verify-ca", and "disable" supported`, "",
			"sslmode", "enabled", "require, verify-full, verify-ca, disable", "", true},
		{"PostgreSQL server parameter", `FATAL:  invalid value for parameter "work_mem": "64XB"`, "", "work_mem", "64XB", "", "", true},
		{"Go flag", `invalid value "eighty" for flag -port: parse error`, "", "port", "eighty", "", "", true},
		{"nginx directive", `nginx: [emerg] invalid value "of" in "proxy_buffering" directive, it must be "on" or "off" in /etc/nginx/conf.d/default.conf:12`, "",
			"proxy_buffering", "of", "", "", true},
		{"Spring Boot binding, its value on the next line", `Failed to bind properties under 'server.port' to java.lang.Integer:`, `    Value: "eighty"`, "server.port", "eighty", "", "", true},
		{"MySQL unknown variable", `mysqld: [ERROR] unknown variable 'sql-mode=STRICT_ALL'.`, "", "sql-mode", "STRICT_ALL", "", "", true},
		{"a token, not a setting", `level=error msg="request rejected" error="token is invalid"`, "", "", "", "", "", false},
		{"a password refused by the server", `FATAL: password authentication failed for user "app": password is invalid`, "", "", "", "", "", false},
		{"a plain TLS failure", `x509: certificate signed by unknown authority`, "", "", "", "", "", false},
	}
	for _, c := range cases {
		lines := []evidence.LogLine{{Text: c.line}}
		if c.next != "" {
			lines = append(lines, evidence.LogLine{Text: c.next})
		}
		key, value, ok := refusedSetting(lines, 0)
		if ok != c.ok || ok && (key != c.key || value != c.value) {
			t.Errorf("%s: got %q=%q ok %v, want %q=%q ok %v", c.name, key, value, ok, c.key, c.value, c.ok)
			continue
		}
		if !ok {
			continue
		}
		f := Finding{Subject: "api"}
		readSetting(&f, key, value, ReadableLine(c.line))
		if f.fact("valid") != c.valid || f.fact("suggest") != c.sug {
			t.Errorf("%s: valid %q suggest %q, want %q %q", c.name, f.fact("valid"), f.fact("suggest"), c.valid, c.sug)
		}
		if f.fact("why") == "" {
			t.Errorf("%s: no why", c.name)
		}
	}
}

// A crash-looping container whose last lines refuse a setting: the
// setting is the cause, followed to the ConfigMap the pod reads it from.
func TestSettingInvalid(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 9, 13, 0, 0, time.UTC)
	line := `{"level":"fatal","ts":"2026-11-24T09:39:16.013Z","msg":"startup failed","error":"store: cannot parse ` + "`host=fx-pg port=5432 dbname=rates sslmode=required`" + `: failed to configure TLS (sslmode is invalid)"}`
	pod := func(c corev1.Container) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "fx-api-7d9c-q8kzp", Namespace: "fx"}, Spec: corev1.PodSpec{Containers: []corev1.Container{c}}}
	}
	cases := []struct {
		name string
		pod  corev1.Pod
		want []string
	}{
		{"envFrom a ConfigMap", pod(corev1.Container{Name: "api", EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "fx-api-env"}}}}}),
			[]string{`setting sslmode is set to "required", which is invalid`, "accepts only disable, allow, prefer, require, verify-ca, verify-full", `meant as "require"`, "ConfigMap fx-api-env (envFrom)", "sslmode is invalid"}},
		{"a variable from a ConfigMap key", pod(corev1.Container{Name: "api", Env: []corev1.EnvVar{{Name: "PGSSLMODE", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "pg-settings"}, Key: "sslmode"}}}}}),
			[]string{"environment variable PGSSLMODE, set by ConfigMap pg-settings"}},
		{"a variable of the pod spec", pod(corev1.Container{Name: "api", Env: []corev1.EnvVar{{Name: "DB_SSL_MODE", Value: "required"}}}),
			[]string{"environment variable DB_SSL_MODE of the pod spec"}},
	}
	for _, c := range cases {
		ev := &Gathered{K8s: K8sEvidence{Pods: []corev1.Pod{c.pod}, PreviousLogs: map[string][]evidence.LogLine{
			"fx/fx-api-7d9c-q8kzp/api": {{Text: `{"level":"info","msg":"config loaded"}`}, {Text: line}}}}}
		crash := Finding{Kind: KindCrashLoop, Subject: "fx-api", Object: "pod fx/fx-api-7d9c-q8kzp container api", Namespace: "fx", Time: t0,
			Summary: "pod fx/fx-api-7d9c-q8kzp container api in CrashLoopBackOff (exit code 1)", Facts: map[string]string{"container": "api", "exit_code": "1"}}
		fs := detectSettingInvalid(ev, []Finding{crash})
		if len(fs) != 1 || fs[0].Kind != KindSettingInvalid {
			t.Fatalf("%s: findings %+v", c.name, fs)
		}
		wantDescribed(t, &Hypothesis{Kind: KindSettingInvalid, Subject: "fx-api", Onset: t0, Primary: []*Finding{&fs[0]}}, Scope{}, c.want...)
	}
	// A crash whose last lines refuse no setting is not one.
	ev := &Gathered{K8s: K8sEvidence{PreviousLogs: map[string][]evidence.LogLine{"fx/p/api": {{Text: "panic: runtime error: index out of range"}}}}}
	if fs := detectSettingInvalid(ev, []Finding{{Kind: KindCrashLoop, Subject: "fx-api", Object: "pod fx/p container api", Facts: map[string]string{"container": "api"}}}); len(fs) != 0 {
		t.Errorf("panic read as a setting: %+v", fs)
	}
	// The change that names the setting is its trigger.
	h := &Hypothesis{Kind: KindSettingInvalid, Subject: "fx-api", Onset: t0, Primary: []*Finding{{Kind: KindSettingInvalid, Subject: "fx-api", Facts: map[string]string{"setting": "sslmode", "config_map": "fx-api-env"}}}}
	named := &Finding{Kind: KindConfigChange, Subject: "fx-api", Time: t0.Add(-2 * time.Minute), Facts: map[string]string{"description": "fx-api-env: enforce TLS to fx-pg (PGSSLMODE=required)"}}
	other := &Finding{Kind: KindDeploy, Subject: "fx-quotes-ui", Time: t0.Add(-time.Minute), Facts: map[string]string{"description": "fx-quotes-ui v1.19.0"}}
	if got := nearestChange(h, []*Finding{named, other}); got != named {
		t.Errorf("trigger %+v, want the config change naming the ConfigMap", got)
	}
}
