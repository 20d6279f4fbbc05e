package tools

import (
	"context"
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/bundle"
)

func miscEnv(t *testing.T) *Env {
	t.Helper()
	b, err := bundle.OpenDir("../evidence/bundle/testdata/misc")
	if err != nil {
		t.Fatal(err)
	}
	return &Env{Sources: b.Sources(time.Time{})}
}

func call(t *testing.T, env *Env, name, args string) (any, error) {
	t.Helper()
	c := NewCatalog(logTools(), changeTools(), cloudwatchTools(), codeTools(), knowledgeTools(), writeTools())
	tool, ok := c.Get(name)
	if !ok {
		t.Fatalf("no tool %s", name)
	}
	return tool.Run(context.Background(), env, json.RawMessage(args))
}

func TestSpecs(t *testing.T) {
	want := map[string][]string{
		"list_log_sources":           {AgentMetrics, AgentInvestigation},
		"search_logs":                {AgentMetrics, AgentCoding, AgentInvestigation},
		"get_log_context":            {AgentMetrics, AgentCoding, AgentInvestigation},
		"list_changes":               {AgentAWS, AgentMetrics, AgentCoding, AgentInvestigation},
		"list_cloudwatch_log_groups": {AgentAWS, AgentInvestigation},
		"get_cloudwatch_logs":        {AgentAWS, AgentInvestigation},
		"cloudwatch_insights_query":  {AgentAWS, AgentInvestigation},
		"list_cloudwatch_metrics":    {AgentAWS, AgentMetrics, AgentInvestigation},
		"get_cloudwatch_metrics":     {AgentAWS, AgentMetrics, AgentInvestigation},
		"list_repositories":          {AgentCoding, AgentInvestigation},
		"search_github_code":         {AgentCoding, AgentInvestigation},
		"read_file":                  {AgentCoding, AgentInvestigation},
		"list_recent_commits":        {AgentCoding, AgentInvestigation},
		"list_pull_requests":         {AgentCoding, AgentInvestigation},
		"search_runbooks":            {AgentAWS, AgentMetrics, AgentCoding, AgentInvestigation},
		"similar_incidents":          {AgentAWS, AgentMetrics, AgentCoding, AgentInvestigation},
		"shell":                      {AgentInvestigation},
		"docker_exec":                {AgentInvestigation},
		"db_write":                   {AgentInvestigation},
	}
	c := NewCatalog(logTools(), changeTools(), cloudwatchTools(), codeTools(), knowledgeTools(), writeTools())
	if len(c.Names()) != len(want) {
		t.Errorf("tools = %v", c.Names())
	}
	for name, agents := range want {
		tool, ok := c.Get(name)
		if !ok {
			t.Errorf("missing %s", name)
			continue
		}
		got := slices.Clone(tool.Agents)
		slices.Sort(got)
		slices.Sort(agents)
		if !slices.Equal(got, agents) {
			t.Errorf("%s agents = %v, want %v", name, got, agents)
		}
		write := name == "shell" || name == "docker_exec" || name == "db_write"
		if tool.ReadOnly == write {
			t.Errorf("%s ReadOnly = %v", name, tool.ReadOnly)
		}
		var s map[string]any
		if err := json.Unmarshal(tool.Parameters, &s); err != nil || s["type"] != "object" || s["additionalProperties"] != false {
			t.Errorf("%s schema = %s", name, tool.Parameters)
		}
		if len(tool.Description) < 40 {
			t.Errorf("%s description too short", name)
		}
	}
}

func TestNotConfigured(t *testing.T) {
	env := &Env{Sources: &evidence.Sources{}}
	for name, want := range map[string]string{
		"list_log_sources":           "logs is not configured for this team (set tools.logs)",
		"search_logs":                "set tools.logs",
		"list_changes":               "set tools.changes",
		"get_cloudwatch_logs":        "set tools.cloudwatch",
		"list_cloudwatch_log_groups": "set tools.cloudwatch",
		"list_repositories":          "set tools.github",
		"search_runbooks":            "knowledge_source",
		"similar_incidents":          "past investigations",
	} {
		args := `{}`
		if name == "get_cloudwatch_logs" {
			args = `{"log_group": "g"}`
		}
		if name == "search_runbooks" || name == "similar_incidents" {
			args = `{"query": "x"}`
		}
		_, err := call(t, env, name, args)
		if evidence.CodeOf(err) != evidence.CodeNotConfigured || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestBadArguments(t *testing.T) {
	env := miscEnv(t)
	for _, c := range []struct{ name, args string }{
		{"search_logs", `{"sauce": "x"}`},
		{"search_logs", `{"pattern": "("}`},
		{"search_logs", `{"since": "yesterday"}`},
		{"search_logs", `{"since": "10m", "until": "1h"}`},
		{"get_log_context", `{"source": "nginx"}`},
		{"read_file", `{"repo": "checkout", "path": "../../bundle.json"}`},
		{"get_cloudwatch_logs", `{"log_group": "/aws/lambda/checkout", "filter_pattern": "{ $.a = 1 }"}`},
		{"cloudwatch_insights_query", `{"log_group": "/aws/lambda/checkout", "query": "parse @message"}`},
	} {
		if _, err := call(t, env, c.name, c.args); evidence.CodeOf(err) != evidence.CodeInvalid {
			t.Errorf("%s %s: err = %v", c.name, c.args, err)
		}
	}
}

func TestLogTools(t *testing.T) {
	env := miscEnv(t) // clock 10:45
	out, err := call(t, env, "list_log_sources", `{}`)
	if err != nil || strings.Join(out.([]string), ",") != "checkout,nginx" {
		t.Fatalf("sources = %v, %v", out, err)
	}
	out, err = call(t, env, "search_logs", `{"source": "nginx", "pattern": "GET", "limit": 2}`)
	if err != nil {
		t.Fatal(err)
	}
	r := out.(*evidence.LogResult)
	// The default window is the last hour: 09:45-10:45; GET lines: 10:00:01, 10:05, 10:40; the last 2 are kept.
	if r.Matched != 3 || len(r.Lines) != 2 || !r.Truncated || r.Scanned != 5 || !strings.Contains(r.Lines[1].Text, "10:40:00") {
		t.Errorf("search = %+v", r)
	}
	out, err = call(t, env, "search_logs", `{"pattern": "exhausted", "since": "2026-03-14T10:30:00Z", "until": "10m"}`)
	if err != nil || out.(*evidence.LogResult).Matched != 2 {
		t.Errorf("window search = %+v, %v", out, err)
	}
	out, err = call(t, env, "get_log_context", `{"source": "nginx", "timestamp": "2026-03-14T10:30:12Z", "before": 1, "after": 2}`)
	if err != nil {
		t.Fatal(err)
	}
	r = out.(*evidence.LogResult)
	if len(r.Lines) != 3 || !strings.Contains(r.Lines[0].Text, "10:05:00") || !strings.Contains(r.Lines[2].Text, "10:30:15") {
		t.Errorf("context = %+v", r.Lines)
	}
}

func TestListChangesMergesRollouts(t *testing.T) {
	env := miscEnv(t)
	rs := func(name, owner, rev string, m int) appsv1.ReplicaSet {
		return appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", CreationTimestamp: metav1.NewTime(time.Date(2026, 3, 14, 10, m, 0, 0, time.UTC)),
			Annotations:     map[string]string{"deployment.kubernetes.io/revision": rev},
			OwnerReferences: []metav1.OwnerReference{{Kind: "Deployment", Name: owner}}},
			Spec: appsv1.ReplicaSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: owner + ":v2"}}}}}}
	}
	env.Sources.Kubernetes = fakeK8s{rss: []appsv1.ReplicaSet{
		rs("checkout-7d9", "checkout", "5", 21), // the changes.json deploy at 10:20: same change
		rs("cart-55f", "cart", "3", 28),
		rs("cart-old", "cart", "2", 1), // before the window
	}}
	out, err := call(t, env, "list_changes", `{"since": "2026-03-14T10:10:00Z"}`)
	if err != nil {
		t.Fatal(err)
	}
	got := out.([]evidence.Change)
	var summary []string
	for _, c := range got {
		summary = append(summary, c.Service+"/"+c.Kind+"/"+c.Source)
	}
	if strings.Join(summary, " ") != "checkout/deploy/changes.json checkout/config/changes.json cart/deploy/kubernetes" {
		t.Errorf("changes = %v", summary)
	}
	if !strings.Contains(got[2].Description, "revision 3") || !strings.Contains(got[2].Description, "cart:v2") {
		t.Errorf("rollout description = %q", got[2].Description)
	}
	// Kubernetes alone still answers.
	env.Sources.Changes = nil
	out, err = call(t, env, "list_changes", `{"since": "2026-03-14T10:10:00Z", "service": "checkout"}`)
	if err != nil || len(out.([]evidence.Change)) != 1 {
		t.Errorf("k8s only = %+v, %v", out, err)
	}
}

type fakeK8s struct {
	evidence.Kubernetes
	rss []appsv1.ReplicaSet
}

func (f fakeK8s) ReplicaSets(ctx context.Context, ns string) ([]appsv1.ReplicaSet, error) {
	return f.rss, nil
}

func TestCloudWatchTools(t *testing.T) {
	env := miscEnv(t)
	out, err := call(t, env, "get_cloudwatch_logs", `{"log_group": "/aws/lambda/checkout", "filter_pattern": "?timed ?refused"}`)
	if err != nil || out.(*evidence.LogResult).Matched != 3 {
		t.Errorf("logs = %+v, %v", out, err)
	}
	out, err = call(t, env, "get_cloudwatch_metrics", `{"namespace": "AWS/Lambda", "metric_name": "Errors", "dimensions": {"FunctionName": "checkout"}, "stat": "Sum", "period": 300}`)
	if err != nil || len(out.([]evidence.Series)) != 1 || len(out.([]evidence.Series)[0].Points) != 9 {
		t.Errorf("metrics = %+v, %v", out, err)
	}
	out, err = call(t, env, "cloudwatch_insights_query", `{"log_group": "/aws/lambda/checkout, app", "query": "stats count(*) by bin(1h)", "start": "2h"}`)
	if err != nil || out.(*InsightsResult).Rows[0]["count(*)"] != "7" {
		t.Errorf("insights = %+v, %v", out, err)
	}
	out, err = call(t, env, "list_cloudwatch_metrics", `{}`)
	if err != nil || len(out.([]evidence.MetricID)) != 2 {
		t.Errorf("list metrics = %+v, %v", out, err)
	}
}

func TestCodeTools(t *testing.T) {
	env := miscEnv(t)
	out, err := call(t, env, "search_github_code", `{"query": "DB_POOL_MAX"}`)
	if err != nil || len(out.([]evidence.CodeMatch)) != 2 {
		t.Errorf("search = %+v, %v", out, err)
	}
	out, err = call(t, env, "read_file", `{"repo": "checkout", "path": "src/pool.go", "start_line": 6, "end_line": 8}`)
	if err != nil {
		t.Fatal(err)
	}
	fc := out.(*FileContent)
	if fc.StartLine != 6 || fc.EndLine != 8 || fc.TotalLines != 8 || !strings.HasPrefix(fc.Content, "func acquire() error {\n") {
		t.Errorf("read = %+v", fc)
	}
	out, err = call(t, env, "list_recent_commits", `{"repo": "checkout"}`)
	if err != nil || len(out.([]evidence.Commit)) != 2 {
		t.Errorf("commits (default 7d) = %+v, %v", out, err)
	}
	out, err = call(t, env, "list_pull_requests", `{"repo": "checkout", "since": "1d"}`)
	if err != nil || len(out.([]evidence.PullRequest)) != 2 {
		t.Errorf("pulls = %+v, %v", out, err)
	}
}

func TestSliceFile(t *testing.T) {
	text := strings.Repeat("line\n", 1000)
	tests := []struct {
		start, end, wantStart, wantEnd int
		trunc                          bool
	}{
		{0, 0, 1, 500, false},
		{990, 0, 990, 1000, false},
		{1, 900, 1, 500, true},
		{5, 3, 5, 5, false},
		{2000, 0, 2000, 1999, false},
	}
	for _, tt := range tests {
		fc := SliceFile("r", "p", text, tt.start, tt.end)
		if fc.StartLine != tt.wantStart || fc.EndLine != tt.wantEnd || fc.Truncated != tt.trunc || fc.TotalLines != 1000 {
			t.Errorf("(%d,%d) = %d..%d trunc %v", tt.start, tt.end, fc.StartLine, fc.EndLine, fc.Truncated)
		}
	}
}

func TestRunbookTool(t *testing.T) {
	out, err := call(t, miscEnv(t), "search_runbooks", `{"query": "oom memory limit"}`)
	if err != nil || out.([]evidence.Passage)[0].Location != "runbooks/oom.md#raising-the-memory-limit" {
		t.Errorf("runbooks = %+v, %v", out, err)
	}
}

type fakeHistory struct{}

func (fakeHistory) Similar(ctx context.Context, text string, limit int) ([]PastIncident, error) {
	return []PastIncident{{InvestigationID: "inv-1", Message: text, Score: 1}}, nil
}

func TestSimilarIncidents(t *testing.T) {
	env := miscEnv(t)
	env.History = fakeHistory{}
	out, err := call(t, env, "similar_incidents", `{"query": "checkout 502"}`)
	if err != nil || out.([]PastIncident)[0].Message != "checkout 502" {
		t.Errorf("similar = %+v, %v", out, err)
	}
}

func TestWriteToolsRefusedBySession(t *testing.T) {
	c := NewCatalog(writeTools())
	s := &Session{Catalog: c, Env: &Env{Sources: &evidence.Sources{}, Settings: map[string]map[string]any{"shell": {"allowed_commands": []any{"echo"}}}}, Toolkit: c.Names()}
	for _, name := range c.Names() {
		if s.Has(name) {
			t.Errorf("%s callable without write actions", name)
		}
		_, err := s.Call(context.Background(), name, map[string]string{"command": "echo hi"})
		if evidence.CodeOf(err) != evidence.CodeNotConfigured || !strings.Contains(err.Error(), "enable_write_actions") {
			t.Errorf("%s: %v", name, err)
		}
	}
	// The tools refuse on their own too, whoever calls them.
	if _, err := call(t, &Env{}, "shell", `{"command": "echo hi"}`); !strings.Contains(err.Error(), "enable_write_actions") {
		t.Errorf("direct shell: %v", err)
	}
}

func TestShell(t *testing.T) {
	if _, err := exec.LookPath("echo"); err != nil {
		t.Skip("no echo")
	}
	env := &Env{WriteActions: true, Sources: &evidence.Sources{}, Settings: map[string]map[string]any{"shell": {"allowed_commands": []any{"echo", "sleep", "sh"}, "timeout_seconds": 0.5}}}
	out, err := call(t, env, "shell", `{"command": "echo 'a  b' \"c;d\" $HOME | x"}`)
	if err != nil {
		t.Fatal(err)
	}
	co := out.(*CommandOutput)
	if co.Stdout != "a  b c;d $HOME | x\n" || co.ExitCode != 0 {
		t.Errorf("no shell interpretation expected: %+v", co)
	}
	out, err = call(t, env, "shell", `{"command": "sh -c 'exit 3'"}`)
	if err != nil || out.(*CommandOutput).ExitCode != 3 {
		t.Errorf("exit code: %+v, %v", out, err)
	}
	if _, err := call(t, env, "shell", `{"command": "rm -rf /tmp/x"}`); evidence.CodeOf(err) != evidence.CodeInvalid || !strings.Contains(err.Error(), "allowed_commands") {
		t.Errorf("not allowed: %v", err)
	}
	if _, err := call(t, env, "shell", `{"command": "/bin/echo hi"}`); err == nil {
		t.Error("a path to an allowed program must not pass as the program")
	}
	start := time.Now()
	_, err = call(t, env, "shell", `{"command": "sh -c 'sleep 30 & sleep 30'"}`)
	if err == nil || time.Since(start) > 5*time.Second {
		t.Errorf("timeout: %v after %s", err, time.Since(start))
	}
	out, err = call(t, env, "shell", `{"command": "sh -c 'yes | head -c 200000'"}`)
	if err != nil || len(out.(*CommandOutput).Stdout) != MaxCommandOutput || !out.(*CommandOutput).Truncated {
		t.Errorf("bounded output: %v", err)
	}
	env.Settings["shell"] = nil
	if _, err := call(t, env, "shell", `{"command": "echo hi"}`); evidence.CodeOf(err) != evidence.CodeNotConfigured {
		t.Errorf("no allowed list: %v", err)
	}
}

func TestDockerAndDB(t *testing.T) {
	env := &Env{WriteActions: true, Sources: &evidence.Sources{}, Settings: map[string]map[string]any{}}
	if _, err := call(t, env, "docker_exec", `{"container": "web", "command": "ls"}`); evidence.CodeOf(err) != evidence.CodeNotConfigured {
		t.Errorf("docker disabled: %v", err)
	}
	env.Settings["docker"] = map[string]any{"enabled": true}
	if _, err := call(t, env, "docker_exec", `{"container": "--privileged", "command": "ls"}`); evidence.CodeOf(err) != evidence.CodeInvalid {
		t.Errorf("flag as container: %v", err)
	}
	_, err := call(t, env, "db_write", `{"database": "orders", "statement": "DELETE FROM x"}`)
	if evidence.CodeOf(err) != evidence.CodeNotConfigured || !strings.Contains(err.Error(), "not available in this build") {
		t.Errorf("db_write: %v", err)
	}
}

func TestSplitCommand(t *testing.T) {
	tests := []struct {
		in   string
		want []string
		err  bool
	}{
		{"ls -la /tmp", []string{"ls", "-la", "/tmp"}, false},
		{`echo "a b" 'c d' e\ f`, []string{"echo", "a b", "c d", "e f"}, false},
		{`echo ""`, []string{"echo", ""}, false},
		{`echo "unterminated`, nil, true},
		{"   ", nil, true},
	}
	for _, tt := range tests {
		got, err := SplitCommand(tt.in)
		if (err != nil) != tt.err || !slices.Equal(got, tt.want) {
			t.Errorf("%q = %q, %v", tt.in, got, err)
		}
	}
}
