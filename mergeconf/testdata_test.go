package mergeconf

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// catalog stands in for agent/tools.Builtin().Names() (mergeconf must not
// import agent/): the tool names of docs/architecture.md.
var catalog = []string{
	"list_namespaces", "list_pods", "describe_pod", "get_pod_logs", "get_events",
	"list_deployments", "get_rollout_history", "list_services", "list_nodes",
	"prometheus_query", "prometheus_query_range", "list_metrics", "detect_anomalies",
	"find_change_points", "correlate_series", "list_log_sources", "search_logs",
	"get_log_context", "get_log_signatures", "list_changes", "list_cloudwatch_log_groups",
	"get_cloudwatch_logs", "cloudwatch_insights_query", "list_cloudwatch_metrics",
	"get_cloudwatch_metrics", "list_repositories", "search_github_code", "read_file",
	"list_recent_commits", "list_pull_requests", "search_runbooks", "similar_incidents",
	"shell", "docker_exec", "db_write", "restart_deployment", "scale_deployment",
}

// caseFile is one testdata/*.json case. Op selects the function under test:
//
//	merge      MergePatch(target, patch) == expect
//	effective  Effective(levels...) == expect
//	diff       Diff(old, new) == expect_diff, ChangedFields == expect_changed
//	patch      ValidatePatch(own, patch, options) == expect, or expect_error;
//	           with ancestors, Effective(ancestors..., result) == expect_effective
//	validate   Validate(doc, options) succeeds, or expect_error
type caseFile struct {
	Name            string            `json:"name"`
	Op              string            `json:"op"`
	Target          map[string]any    `json:"target"`
	Patch           map[string]any    `json:"patch"`
	Levels          []map[string]any  `json:"levels"`
	Old             map[string]any    `json:"old"`
	New             map[string]any    `json:"new"`
	Own             map[string]any    `json:"own"`
	Doc             map[string]any    `json:"doc"`
	Ancestors       []map[string]any  `json:"ancestors"`
	Options         caseOptions       `json:"options"`
	Expect          map[string]any    `json:"expect"`
	ExpectEffective map[string]any    `json:"expect_effective"`
	ExpectDiff      map[string]Change `json:"expect_diff"`
	ExpectChanged   []string          `json:"expect_changed"`
	ExpectError     *struct {
		Code    string `json:"code"`
		Field   string `json:"field"`
		Message string `json:"message"` // a substring of the message, when given
	} `json:"expect_error"`
}

type caseOptions struct {
	Level        string          `json:"level"`
	Admin        bool            `json:"admin"`
	ExtraTools   []string        `json:"extra_tools"`  // added to catalog
	Integrations []string        `json:"integrations"` // nil: the schema's
	ToolServers  map[string]bool `json:"tool_servers"` // name → enabled
	Peers        []string        `json:"peers"`
}

func (o caseOptions) options() Options {
	opts := Options{
		Level:     o.Level,
		Admin:     o.Admin,
		KnownTool: KnownSet(append(append([]string{}, catalog...), o.ExtraTools...)...),
		PeerAgent: KnownSet(o.Peers...),
		ToolServer: func(name string) (bool, bool) {
			enabled, ok := o.ToolServers[name]
			return ok, enabled
		},
	}
	if o.Integrations != nil {
		opts.KnownIntegration = KnownSet(o.Integrations...)
	}
	return opts
}

// TestData runs every testdata/*.json case (headscale's TestACLCompat style:
// the cases are data, reviewable without reading Go).
func TestData(t *testing.T) {
	files, err := filepath.Glob("testdata/*.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 25 {
		t.Fatalf("found %d cases, want at least 25", len(files))
	}
	ops := map[string]int{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var tc caseFile
		if err := decodeStrict(raw, &tc); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		ops[tc.Op]++
		t.Run(strings.TrimSuffix(filepath.Base(f), ".json"), func(t *testing.T) {
			if tc.Name == "" {
				t.Fatal("case has no name")
			}
			runCase(t, tc, string(raw))
		})
	}
	for _, op := range []string{"merge", "effective", "diff", "patch", "validate"} {
		if ops[op] == 0 {
			t.Errorf("no case exercises op %q", op)
		}
	}
}

func runCase(t *testing.T, tc caseFile, raw string) {
	t.Helper()
	switch tc.Op {
	case "merge":
		assertDoc(t, "MergePatch", MergePatch(tc.Target, tc.Patch), tc.Expect)
	case "effective":
		assertDoc(t, "Effective", Effective(tc.Levels...), tc.Expect)
	case "diff":
		got := Diff(tc.Old, tc.New)
		if !diffEqual(got, tc.ExpectDiff) {
			g, _ := json.MarshalIndent(got, "", "  ")
			w, _ := json.MarshalIndent(tc.ExpectDiff, "", "  ")
			t.Errorf("Diff =\n%s\nwant\n%s", g, w)
		}
		if tc.ExpectChanged != nil {
			if d := cmp.Diff(ChangedFields(got), tc.ExpectChanged); d != "" {
				t.Errorf("ChangedFields (-got +want):\n%s", d)
			}
		}
	case "patch":
		got, err := ValidatePatch(tc.Own, tc.Patch, tc.Options.options())
		if checkErr(t, err, tc, raw) {
			return
		}
		if tc.Expect != nil {
			assertDoc(t, "ValidatePatch", got, tc.Expect)
		}
		if tc.ExpectEffective != nil {
			assertDoc(t, "Effective", Effective(append(tc.Ancestors, got)...), tc.ExpectEffective)
		}
	case "validate":
		err := Validate(tc.Doc, tc.Options.options())
		checkErr(t, err, tc, raw)
	default:
		t.Fatalf("unknown op %q", tc.Op)
	}
}

// checkErr asserts err against expect_error and reports whether the case
// ended in an error.
func checkErr(t *testing.T, err error, tc caseFile, raw string) bool {
	t.Helper()
	want := tc.ExpectError
	if want == nil {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return false
	}
	fe, ok := err.(*FieldError)
	if !ok {
		t.Fatalf("error = %v (%T), want *FieldError{%s %s}", err, err, want.Code, want.Field)
	}
	t.Logf("error: %s %s: %s", fe.Code, fe.Field, fe.Message)
	if fe.Code != want.Code || fe.Field != want.Field {
		t.Fatalf("error = {%s %s %q}, want {%s %s}", fe.Code, fe.Field, fe.Message, want.Code, want.Field)
	}
	if want.Message != "" && !strings.Contains(fe.Message, want.Message) {
		t.Errorf("message %q does not contain %q", fe.Message, want.Message)
	}
	// No message may echo a value of the input: scan every string value
	// longer than a few characters that is not also a key or tool name.
	for _, s := range stringValues(tc.Patch, tc.Doc) {
		if len(s) >= 6 && strings.Contains(fe.Message, s) && !strings.Contains(raw, `"`+s+`":`) && !isName(s) {
			t.Errorf("message %q echoes the value %q", fe.Message, s)
		}
	}
	return true
}

// isName reports whether s looks like a tool, server or peer name, which
// messages do quote.
func isName(s string) bool {
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == ':' || c == '-') {
			return false
		}
	}
	return true
}

func stringValues(docs ...map[string]any) []string {
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			out = append(out, x)
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	for _, d := range docs {
		walk(d)
	}
	return out
}

func assertDoc(t *testing.T, what string, got, want map[string]any) {
	t.Helper()
	if !Equal(got, want) {
		g, _ := json.MarshalIndent(got, "", "  ")
		w, _ := json.MarshalIndent(want, "", "  ")
		t.Errorf("%s =\n%s\nwant\n%s", what, g, w)
	}
}

// diffEqual compares diffs with Equal on the values (json.Number against
// the float64 or int a diff may carry).
func diffEqual(a, b map[string]Change) bool {
	if len(a) != len(b) {
		return false
	}
	for k, ca := range a {
		cb, ok := b[k]
		if !ok || !Equal(ca.Old, cb.Old) || !Equal(ca.New, cb.New) {
			return false
		}
	}
	return true
}

func decodeStrict(raw []byte, v any) error {
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
