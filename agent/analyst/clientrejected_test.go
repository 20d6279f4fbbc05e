package analyst

import (
	"fmt"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
)

// A service refusing a client's bad request (its own 4xx, logged as a
// warning) is the service working: a handful of such lines at normal
// volume is no new error of it; a surge of them at volume still is, and
// a warning of a failure of its own is too.
func TestClientRejectionIsNoFault(t *testing.T) {
	tests := []struct {
		name  string
		line  string
		count int
		want  bool // a finding of the service expected
	}{
		{"json status 400", `{"level":"warn","msg":"signature check failed","psp":"stripe","remote":"203.0.113.77","status":400,"dur_ms":2}`, 1, false},
		{"logfmt 401", `level=warn msg="invalid api key" client=10.0.3.4 status=401`, 2, false},
		{"status_code 422", `WARN  request validation failed: field amount must be positive status_code=422`, 3, false},
		{"access log HTTP/1.1 400", `warning: request failed "POST /hooks HTTP/1.1" 400 from 198.51.100.4 (malformed body)`, 1, false},
		{"bare 400 Bad Request", `[warn] upload failed: 400 Bad Request (malformed multipart body)`, 2, false},
		{"surge of rejections at volume", `{"level":"warn","msg":"signature check failed","status":400}`, 40, true},
		{"a 503 is the service's own failure", `{"level":"warn","msg":"publish failed","status":503}`, 2, true},
		{"429 says the server was full", `level=warn msg="request failed" status=429`, 2, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := analysis.NewMiner(win.BaselineStart, win.Start, win.End)
			for i := 0; i < 120; i++ {
				at := win.BaselineStart.Add(time.Duration(i) * time.Minute)
				m.Add(at, "hooks-1", fmt.Sprintf(`{"level":"info","msg":"webhook accepted","status":202,"dur_ms":%d}`, 10+i%7))
			}
			for i := 0; i < tt.count; i++ {
				m.Add(win.Start.Add(time.Duration(5+i)*time.Second), "hooks-1", tt.line)
			}
			base, _ := m.Lines()
			set := LogSet{Source: "hooks-1", Subject: "hooks", Origin: SrcLogs, Templates: m.Templates(), HasBaseline: base >= 10}
			got := false
			for _, f := range DetectLogs([]LogSet{set}, win) {
				got = got || f.Subject == "hooks"
			}
			if got != tt.want {
				t.Errorf("finding of hooks = %v, want %v", got, tt.want)
			}
		})
	}
}
