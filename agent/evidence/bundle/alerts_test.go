package bundle_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/bundle"
)

func TestAlertsForms(t *testing.T) {
	at := func(s string) time.Time { t, _ := time.Parse(time.RFC3339, s); return t }
	cases := []struct {
		file         string
		want         []evidence.Alert // Name, Status, State, StartsAt, EndsAt, one label
		label, value string
	}{
		{"testdata/alerts/webhook.json", []evidence.Alert{
			{Name: "KubePodCrashLooping", Status: "resolved", StartsAt: at("2026-03-14T09:02:00Z"), EndsAt: at("2026-03-14T09:40:00Z")},
			{Name: "KubePersistentVolumeFillingUp", Status: "firing", StartsAt: at("2026-03-14T10:21:30.123Z")},
		}, "persistentvolumeclaim", "features-data"},
		{"testdata/alerts/api-v2.json", []evidence.Alert{
			{Name: "Watchdog", Status: "firing", State: "suppressed", StartsAt: at("2026-03-14T08:00:00Z"), EndsAt: at("2026-03-14T10:49:30Z")},
			{Name: "NodeFilesystemSpaceFillingUp", Status: "firing", State: "active", StartsAt: at("2026-03-14T10:05:30Z"), EndsAt: at("2026-03-14T10:49:30Z")},
		}, "mountpoint", "/"},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			data, err := os.ReadFile(tc.file)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := bundle.Open(fstest.MapFS{"alerts.json": {Data: data}}, "b")
			s := b.Sources(time.Time{})
			if s.Alerts == nil {
				t.Fatal("no Alerts source for a bundle with alerts.json")
			}
			if err := b.RequireEvidence(context.Background()); err != nil {
				t.Errorf("an alerts-only bundle is evidence: %v", err)
			}
			got, err := s.Alerts.List(context.Background(), time.Time{}, time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("%d alerts, want %d: %+v", len(got), len(tc.want), got)
			}
			for i, w := range tc.want {
				g := got[i]
				if g.Name != w.Name || g.Status != w.Status || g.State != w.State || !g.StartsAt.Equal(w.StartsAt) || !g.EndsAt.Equal(w.EndsAt) {
					t.Errorf("[%d] = %s %s %s %v..%v, want %s %s %s %v..%v", i, g.Name, g.Status, g.State, g.StartsAt, g.EndsAt,
						w.Name, w.Status, w.State, w.StartsAt, w.EndsAt)
				}
				if g.Annotations["summary"] == "" || g.Fingerprint == "" || !strings.HasPrefix(g.GeneratorURL, "http://") {
					t.Errorf("[%d] lost annotations, fingerprint or generator URL: %+v", i, g)
				}
			}
			if got[len(got)-1].Labels[tc.label] != tc.value {
				t.Errorf("labels %v lack %s=%s", got[len(got)-1].Labels, tc.label, tc.value)
			}
		})
	}
}

func TestAlertsWindow(t *testing.T) {
	data, _ := os.ReadFile("testdata/alerts/webhook.json")
	b, _ := bundle.Open(fstest.MapFS{"alerts.json": {Data: data}}, "b")
	a := b.Sources(time.Time{}).Alerts
	at := func(s string) time.Time { t, _ := time.Parse(time.RFC3339, s); return t }
	for _, tc := range []struct {
		since, until string
		want         []string
	}{
		{"2026-03-14T10:00:00Z", "2026-03-14T11:00:00Z", []string{"KubePersistentVolumeFillingUp"}}, // the crash loop ended before
		{"2026-03-14T09:00:00Z", "2026-03-14T10:00:00Z", []string{"KubePodCrashLooping"}},           // the volume alert started after
		{"2026-03-14T09:30:00Z", "2026-03-14T10:30:00Z", []string{"KubePodCrashLooping", "KubePersistentVolumeFillingUp"}},
	} {
		got, err := a.List(context.Background(), at(tc.since), at(tc.until))
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, g := range got {
			names = append(names, g.Name)
		}
		if strings.Join(names, ",") != strings.Join(tc.want, ",") {
			t.Errorf("%s..%s: %v, want %v", tc.since, tc.until, names, tc.want)
		}
	}
}

func TestAlertsMalformed(t *testing.T) {
	cases := []struct {
		name, data string
		line       int
		want       string
	}{
		{"not JSON", "{\n  \"alerts\": [\n    {\"labels\": }\n  ]\n}", 3, "not JSON"},
		{"Prometheus rules answer", `{"status": "success", "data": {"alerts": []}}`, 1, "webhook payload"},
		{"a string", `"firing"`, 1, "webhook payload"},
		{"alerts not an array", `{"alerts": {"alertname": "X"}}`, 1, "not an array"},
		{"no labels", "{\"alerts\": [\n {\"labels\": {\"alertname\": \"A\"}, \"startsAt\": \"2026-03-14T10:00:00Z\"},\n {\"status\": \"firing\", \"startsAt\": \"2026-03-14T10:00:00Z\"}\n]}", 3, "alerts[1].labels: missing"},
		{"bad time", "[\n  {\"labels\": {\"alertname\": \"A\"}, \"startsAt\": \"yesterday\", \"status\": {\"state\": \"active\"}}\n]", 2, `[0].startsAt: "yesterday" is not an RFC 3339 time`},
		{"bad status", `{"alerts": [{"labels": {"alertname": "A"}, "status": "pending"}]}`, 1, `alerts[0].status: "pending" is neither firing nor resolved`},
		{"bad state", `[{"labels": {"alertname": "A"}, "status": {"state": "gone"}}]`, 1, `state "gone"`},
		{"label not a string", `{"alerts": [{"labels": {"alertname": 3}}]}`, 1, "alerts[0].labels: want a string"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := bundle.Open(fstest.MapFS{"alerts.json": {Data: []byte(tc.data)}, "logs/a.log": {Data: []byte("2026-03-14T10:00:00Z x\n")}}, "b")
			s := b.Sources(time.Time{})
			_, err := s.Alerts.List(context.Background(), time.Time{}, time.Time{})
			var e *evidence.Error
			if !errors.As(err, &e) || e.Code != evidence.CodeMalformed || e.File != "alerts.json" || e.Line != tc.line || !strings.Contains(e.Error(), tc.want) {
				t.Fatalf("error %v (line %d), want a malformed alerts.json:%d error saying %q", err, lineOf(e), tc.line, tc.want)
			}
			// the rest of the bundle still serves
			if err := s.Logs.Scan(context.Background(), evidence.LogQuery{}, func(evidence.LogLine) error { return nil }); err != nil {
				t.Errorf("logs after a bad alerts.json: %v", err)
			}
			r, err := bundle.Check(context.Background(), b)
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Errors) != 1 || r.Errors[0].File != "alerts.json" || r.Errors[0].Line != tc.line {
				t.Errorf("check errors %+v, want alerts.json:%d", r.Errors, tc.line)
			}
		})
	}
}

func lineOf(e *evidence.Error) int {
	if e == nil {
		return 0
	}
	return e.Line
}

func TestCheckAlerts(t *testing.T) {
	data, _ := os.ReadFile("testdata/alerts/api-v2.json")
	b, _ := bundle.Open(fstest.MapFS{"alerts.json": {Data: data}}, "b")
	r, err := bundle.Check(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Read) != 1 || r.Read[0].File != "alerts.json" || r.Read[0].What != "Alertmanager alerts (2 firing: NodeFilesystemSpaceFillingUp, Watchdog)" || len(r.Skipped) > 0 {
		t.Errorf("check read %+v skipped %+v", r.Read, r.Skipped)
	}
}
