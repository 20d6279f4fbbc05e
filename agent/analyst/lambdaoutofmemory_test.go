package analyst

import (
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// TestLambdaOOM: the platform's REPORT lines of a function's log (text and
// JSON log formats, the newer Runtime.OutOfMemory and the older "signal:
// killed" with every MB used) say its invocations ran out of memory;
// earlier REPORT lines with a larger size and a rightsizing change say why.
// A function using part of its memory is not out of memory.
func TestLambdaOOM(t *testing.T) {
	w := testWindow()
	at := w.Start.Add(10 * time.Minute)
	before := w.Start.Add(-30 * time.Minute)
	tpl := func(l string, first time.Time, incident int) analysis.LogTemplate {
		return analysis.LogTemplate{Template: l, Example: l, Count: 5 + incident, Incident: incident, FirstSeen: first, FirstIncident: at, LastSeen: w.End}
	}
	set := func(fn string, ts ...analysis.LogTemplate) LogSet {
		return LogSet{Source: "/aws/lambda/" + fn, Subject: fn, Origin: SrcCloudWatch, HasBaseline: true, Templates: ts}
	}
	newer := set("thumbs",
		analysis.LogTemplate{Template: "REPORT", Example: "REPORT RequestId: 8f1c3a10-2b7e-4a55-9c1d-3e0f6a7b8c9d\tDuration: 812.40 ms\tBilled Duration: 813 ms\tMemory Size: 1769 MB\tMax Memory Used: 1210 MB\t",
			Last: "REPORT RequestId: 1a2b3c4d-2b7e-4a55-9c1d-3e0f6a7b8c9d\tDuration: 402.10 ms\tBilled Duration: 403 ms\tMemory Size: 1024 MB\tMax Memory Used: 610 MB\t", Count: 40, Incident: 10, FirstSeen: before, FirstIncident: at, LastSeen: w.End},
		tpl("REPORT RequestId: 9e8d7c6b-2b7e-4a55-9c1d-3e0f6a7b8c9d\tDuration: 2210.03 ms\tBilled Duration: 2211 ms\tMemory Size: 1024 MB\tMax Memory Used: 1024 MB\tStatus: error\tError Type: Runtime.OutOfMemory\t", at, 7))
	older := set("pdf-export",
		tpl("RequestId: 4c5d6e7f-1111-4a55-9c1d-3e0f6a7b8c9d Error: Runtime exited with error: signal: killed\nRuntime.ExitError", at, 4),
		tpl("REPORT RequestId: 4c5d6e7f-1111-4a55-9c1d-3e0f6a7b8c9d\tDuration: 5120.00 ms\tBilled Duration: 5120 ms\tMemory Size: 256 MB\tMax Memory Used: 256 MB\t", at, 4))
	jsonFmt := set("resize",
		tpl(`{"time":"2026-09-01T09:10:02.310Z","type":"platform.report","record":{"requestId":"6d7e","metrics":{"durationMs":912.3,"memorySizeMB":512,"maxMemoryUsedMB":512},"status":"error","errorType":"Runtime.OutOfMemory"}}`, at, 3),
		tpl("REPORT RequestId: 6d7e\tDuration: 912.30 ms\tBilled Duration: 913 ms\tMemory Size: 512 MB\tMax Memory Used: 512 MB\tStatus: error\tError Type: Runtime.OutOfMemory", at, 3))
	healthy := set("thumbs", tpl("REPORT RequestId: 8f1c3a10-2b7e-4a55-9c1d-3e0f6a7b8c9d\tDuration: 812.40 ms\tBilled Duration: 813 ms\tMemory Size: 1024 MB\tMax Memory Used: 610 MB\t", at, 9))
	rightsize := evidence.Change{Timestamp: w.Start, Service: "platform", Kind: "infra", Description: "apply Compute Optimizer memory recommendations to Lambda functions"}
	cases := []struct {
		name    string
		set     LogSet
		subject string
		says    []string
	}{
		{"Runtime.OutOfMemory after a rightsizing", newer, "thumbs", []string{"runs out of memory", "1024 MB", "was 1769 MB before", "cut from 1769 to 1024 MB", "Compute Optimizer"}},
		{"signal: killed with every MB used", older, "pdf-export", []string{"Max Memory Used 256 MB of Memory Size 256 MB", "signal: killed"}},
		{"JSON log format's REPORT", jsonFmt, "resize", []string{"512 MB"}},
		{"memory partly used", healthy, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := detectLambdaOOM(&Gathered{Logs: []LogSet{c.set}, Changes: []evidence.Change{rightsize}, Window: w}, nil)
			f := onlyFinding(t, fs, c.subject)
			if f == nil {
				return
			}
			wantDescribed(t, &Hypothesis{Kind: KindLambdaOOM, Subject: f.Subject, Primary: []*Finding{f}, Onset: f.Time}, Scope{}, c.says...)
		})
	}
}
