package finding

import (
	"strings"
	"testing"
)

func TestRenderSections(t *testing.T) {
	r := &Result{
		Summary: "Root cause: checkout OOMKilled",
		RootCause: RootCause{Description: "checkout containers are OOMKilled", Confidence: 91,
			Evidence: []string{"pod shop/checkout-1 last terminated OOMKilled", "memory limit 256Mi"}},
		Timeline:        []TimelineEvent{{Timestamp: "2026-03-14T10:01:00Z", Event: "deploy v2.3.1"}},
		AffectedSystems: []string{"checkout", "frontend"},
		Recommendations: []Recommendation{{Priority: PriorityHigh, Action: "Raise the memory limit"}},
		RuledOut:        []RuledOut{{Hypothesis: "payments: timeouts", Reason: "weaker evidence"}},
		DataGaps:        []string{"cloudwatch not configured"},
		Verdict:         VerdictIdentified,
		Runbooks:        []RunbookRef{{Title: "OOM", Location: "runbooks/oom.md#fix"}},
	}
	var b strings.Builder
	if err := Render(&b, r, ReportMeta{Title: "checkout is down", Agent: "planner", ToolsUsed: []string{"list_pods"}}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"Investigation: checkout is down", "verdict identified", "confidence 91%",
		"Summary\n-------", "Root cause (confidence 91%)", "  - memory limit 256Mi",
		"Timeline", "2026-03-14T10:01:00Z  deploy v2.3.1", "Affected systems", "checkout, frontend",
		"[high] Raise the memory limit", "Ruled out", "payments: timeouts: weaker evidence",
		"Data gaps", "cloudwatch not configured", "OOM (runbooks/oom.md#fix)", "Tools used", "list_pods",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "Notes") {
		t.Error("empty Notes section printed")
	}
}

func TestWrap(t *testing.T) {
	tests := []struct {
		in     string
		width  int
		indent string
		want   string
	}{
		{"a b c", 10, "", "a b c"},
		{"aaaa bbbb cccc", 9, "  ", "aaaa bbbb\n  cccc"},
		{"  - one two three", 10, "    ", "  - one\n    two\n    three"},
		{"", 10, "", ""},
		{"averyveryverylongword x", 5, "", "averyveryverylongword\nx"},
	}
	for _, tt := range tests {
		if got := wrap(tt.in, tt.width, tt.indent); got != tt.want {
			t.Errorf("wrap(%q, %d) = %q, want %q", tt.in, tt.width, got, tt.want)
		}
	}
}
