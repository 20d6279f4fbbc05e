package eval

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rootcause/rootcause/finding"
)

func result(desc string, affected []string, evidence, timeline int) *finding.Result {
	r := &finding.Result{Summary: "s", RootCause: finding.RootCause{Description: desc, Confidence: 80}, AffectedSystems: affected}
	for range evidence {
		r.RootCause.Evidence = append(r.RootCause.Evidence, "e")
	}
	for range timeline {
		r.Timeline = append(r.Timeline, finding.TimelineEvent{Timestamp: "2026-01-01T00:00:00Z", Event: "x"})
	}
	return r
}

func TestScore(t *testing.T) {
	full := &Expect{
		RootCauseAny:       [][]string{{"oom", "out of memory"}, {"memory limit"}},
		AffectedSystemsAll: []string{"checkout"},
		MinEvidence:        2,
		MinTimeline:        2,
		ToolsUsedAny:       []string{"get_pod_logs", "describe_pod"},
	}
	good := result("checkout containers are OOMKilled at the 512Mi Memory Limit", []string{"Checkout", "gateway"}, 2, 3)
	tools := []string{"list_pods", "describe_pod"}
	cases := []struct {
		name     string
		expect   *Expect
		res      *finding.Result
		tools    []string
		pass     bool
		failWith string // a substring of the only failure
	}{
		{"all rules pass, case-insensitive", full, good, tools, true, ""},
		{"second synonym of a group", &Expect{RootCauseAny: [][]string{{"oomkilled", "OUT OF MEMORY"}}}, result("process ran out of memory", nil, 0, 0), nil, true, ""},
		{"one group unsatisfied", full, result("checkout OOMKilled", []string{"checkout"}, 2, 2), tools, false, "root_cause_any"},
		{"no group satisfied", &Expect{RootCauseAny: [][]string{{"x509"}}}, result("disk pressure", nil, 0, 0), nil, false, `"x509"`},
		{"phrase only in summary does not count", &Expect{RootCauseAny: [][]string{{"oom"}}}, &finding.Result{Summary: "oom", RootCause: finding.RootCause{Description: "unknown"}}, nil, false, "root_cause_any"},
		{"affected system missing", full, result("OOM memory limit", []string{"gateway"}, 2, 2), tools, false, "affected_systems_all"},
		{"affected system is exact, not substring", &Expect{AffectedSystemsAll: []string{"checkout"}}, result("x", []string{"checkout-v2"}, 0, 0), nil, false, `"checkout"`},
		{"affected system ignores case and spaces", &Expect{AffectedSystemsAll: []string{"Payments-API"}}, result("x", []string{" payments-api "}, 0, 0), nil, true, ""},
		{"too little evidence", full, result("OOM memory limit", []string{"checkout"}, 1, 2), tools, false, "min_evidence"},
		{"too short timeline", full, result("OOM memory limit", []string{"checkout"}, 2, 1), tools, false, "min_timeline"},
		{"no listed tool used", full, good, []string{"list_pods"}, false, "tools_used_any"},
		{"no tools at all", full, good, nil, false, "tools_used_any"},
		{"empty expect passes", &Expect{}, result("anything", nil, 0, 0), nil, true, ""},
		{"nil result fails what it must", &Expect{MinEvidence: 1}, nil, nil, false, "min_evidence"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pass, fails := Score(&Scenario{Expect: c.expect}, c.res, c.tools)
			if pass != c.pass {
				t.Fatalf("passed = %v, want %v (failures %q)", pass, c.pass, fails)
			}
			if fails == nil {
				t.Fatal("failures is nil, want an empty slice")
			}
			if c.pass && len(fails) != 0 {
				t.Fatalf("failures = %q, want none", fails)
			}
			if !c.pass {
				if len(fails) != 1 || !strings.Contains(fails[0], c.failWith) {
					t.Fatalf("failures = %q, want one containing %q", fails, c.failWith)
				}
			}
		})
	}
}

func TestScoreWithoutExpect(t *testing.T) {
	pass, fails := Score(&Scenario{}, nil, nil)
	if !pass || len(fails) != 0 {
		t.Fatalf("Score without expect = %v %q, want pass with no failures", pass, fails)
	}
}

func TestScoreCountsEveryFailure(t *testing.T) {
	e := &Expect{RootCauseAny: [][]string{{"a"}, {"b"}}, AffectedSystemsAll: []string{"x", "y"}, MinEvidence: 1, MinTimeline: 1, ToolsUsedAny: []string{"t"}}
	_, fails := Score(&Scenario{Expect: e}, result("none", nil, 0, 0), nil)
	if len(fails) != 7 {
		t.Fatalf("got %d failures %q, want 7", len(fails), fails)
	}
}

func TestOutcomeJSON(t *testing.T) {
	res := result("d", []string{"a"}, 1, 1)
	o := &Outcome{Scenario: "s1", Status: StatusCompleted, Result: res, ToolsUsed: []string{"list_pods"}, DurationSeconds: 1.23456, Scored: true, Passed: true}
	b, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"scenario", "status", "result", "tools_used", "duration_seconds", "passed", "failures"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON line %s lacks %q", b, k)
		}
	}
	if f, ok := m["failures"].([]any); !ok || len(f) != 0 {
		t.Errorf("failures = %v, want []", m["failures"])
	}
	if m["scenario"] != "s1" || m["status"] != "completed" || m["passed"] != true || m["duration_seconds"] != 1.234 {
		t.Errorf("unexpected line %s", b)
	}
	o = &Outcome{Scenario: "s2", Status: StatusFailed, Error: "boom"}
	b, _ = json.Marshal(o)
	m = nil
	_ = json.Unmarshal(b, &m)
	if _, ok := m["passed"]; ok {
		t.Errorf("unscored line %s has passed", b)
	}
	if _, ok := m["failures"]; ok {
		t.Errorf("unscored line %s has failures", b)
	}
	if tu, ok := m["tools_used"].([]any); !ok || len(tu) != 0 {
		t.Errorf("tools_used = %v, want []", m["tools_used"])
	}
}

func writeScenario(t *testing.T, body string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "case")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if body != "" {
		if err := os.WriteFile(filepath.Join(dir, "scenario.json"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestLoadScenarioErrors(t *testing.T) {
	cases := []struct{ body, want string }{
		{"", "scenario.json is missing"},
		{`{"now": "2026-01-01T00:00:00Z", "request": {"agent_name": "planner", "message": "m"}, "extra": 1}`, `unknown field "extra"`},
		{`{"request": {"agent_name": "planner", "message": "m"}}`, "now: required"},
		{`{"now": "yesterday", "request": {"agent_name": "planner", "message": "m"}}`, "now:"},
		{`{"now": "2026-01-01T00:00:00Z"}`, "request: required"},
		{`{"now": "2026-01-01T00:00:00Z", "request": {"message": "m"}}`, "request.agent_name: required"},
		{`{"now": "2026-01-01T00:00:00Z", "request": {"agent_name": "planner", "message": "m", "ctx": {}}}`, `request: json: unknown field "ctx"`},
		{`{"now": "2026-01-01T00:00:00Z", "request": {"agent_name": "planner", "message": "m"}, "expect": {"min_evidence": "two"}}`, "expect: min_evidence"},
		{`{"now": "2026-01-01T00:00:00Z", "request": {"agent_name": "planner", "message": "m"}, "expect": {"root_cause_any": [[]]}}`, "expect.root_cause_any[0]"},
		{`{"now": "2026-01-01T00:00:00Z", "request": {"agent_name": "planner", "message": "m"}} {}`, "trailing data"},
	}
	for _, c := range cases {
		dir := writeScenario(t, c.body)
		_, err := LoadScenario(dir)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("LoadScenario(%s) error = %v, want one containing %q", c.body, err, c.want)
			continue
		}
		if c.body != "" && !strings.Contains(err.Error(), "scenario.json") {
			t.Errorf("error %q does not name scenario.json", err)
		}
	}
}

func TestLoadScenarioBadBundle(t *testing.T) {
	dir := writeScenario(t, `{"now": "2026-01-01T00:00:00Z", "request": {"agent_name": "planner", "message": "m"}}`)
	if err := os.WriteFile(filepath.Join(dir, "bundle.json"), []byte(`{"captured_at": 12}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadScenario(dir)
	if err == nil || !strings.Contains(err.Error(), "bundle.json") {
		t.Fatalf("error = %v, want one naming bundle.json", err)
	}
}

func TestLoadScenarioOK(t *testing.T) {
	dir := writeScenario(t, `{"title": "t", "now": "2026-01-01T10:00:00+02:00", "request": {"agent_name": "planner", "message": "m", "context": {"service": "a"}},
		"expect": {"root_cause_any": [["x"]], "min_evidence": 1}}`)
	s, err := LoadScenario(dir)
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "case" || s.Now.Format("15:04Z07:00") != "08:00Z" || s.Request.Context["service"] != "a" || s.Expect.MinEvidence != 1 || s.Bundle == nil {
		t.Fatalf("loaded %+v", s)
	}
}
