package analyst

import "testing"

func TestConfigInvalidLines(t *testing.T) {
	testLines(t, configInvalid, []lineCase{
		{`level=error msg="failed to load config" err="yaml: line 47: mapping values are not allowed in this context"`, KindConfigInvalid},
		{`json: cannot unmarshal string into Go struct field Config.port of type int`, KindConfigInvalid},
		{`ts=2026-03-01T10:00:00Z level=error msg="error loading config file /etc/alertmanager/alertmanager.yml: yaml: unmarshal errors"`, KindConfigInvalid},
		{`{"level":"error","msg":"fatal: invalid configuration, exiting with code 1"}`, KindConfigInvalid},
		{`INFO loaded configuration from /etc/app/config.yaml`, ""},
	})
}

// TestConfigCrash turns a crash whose cause line is a configuration error
// into a config_invalid finding naming the file.
func TestConfigCrash(t *testing.T) {
	crash := Finding{Kind: KindCrashLoop, Subject: "prometheus", Object: "pod monitoring/prometheus-0",
		Facts: map[string]string{"exit_code": "1", "container": "prometheus",
			"last_log": `ts=2026-03-01T10:00:00Z level=error msg="Error loading config (--config.file=/etc/prometheus/prometheus.yml)" err="parsing YAML file /etc/prometheus/prometheus.yml: yaml: line 12: did not find expected key"`}}
	f, ok := configCrash(crash, "pod monitoring/prometheus-0 container prometheus", true)
	if !ok || f.Kind != KindConfigInvalid || f.fact("config_path") != "/etc/prometheus/prometheus.yml" {
		t.Fatalf("configCrash: %v %+v", ok, f)
	}
	crash.Facts["last_log"] = "exiting"
	if _, ok := configCrash(crash, "pod x", true); ok {
		t.Error("a generic exit line is not a configuration error")
	}
}
