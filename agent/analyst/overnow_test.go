package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/finding"
)

func TestPresentAsk(t *testing.T) {
	for _, c := range []struct {
		q    string
		want bool
	}{
		{"We had a burst of 500s from profile-service around 9:12 this morning. Is it still a problem, or can I close the incident?", true},
		{"Are we still seeing errors? Is it over?", true},
		{"checkout failed for ten minutes at 14:00; has it recovered?", true},
		{"Can we close the ticket for the payments outage?", true},
		{"Why is checkout still slow since the deploy?", false},
		{"What happened to profile-service at 9:12?", false},
		{"orders-api keeps failing, what is wrong?", false},
	} {
		if got := presentAskRE.MatchString(c.q); got != c.want {
			t.Errorf("presentAsk(%q) = %v", c.q, got)
		}
	}
}

// TestAnswerOverNow turns a found cause into "healthy now" only when the
// question asks about the present, the subject's errors stopped long ago
// and it served normally since, and no alert about it still fires.
func TestAnswerOverNow(t *testing.T) {
	now := win.End
	errLine := `2026-06-02T09:12:03Z ERROR request failed: MongoServerError: not primary`
	okLine := `2026-06-02T09:12:03Z INFO request completed status=200`
	// errors from errAt to errEnd before now, normal lines from 70
	// minutes before now until okEnd before now.
	set := func(errAt, errEnd, okEnd time.Duration) LogSet {
		m := analysis.NewMiner(win.BaselineStart, win.Start, win.End)
		for d := errAt; d >= errEnd; d -= 2 * time.Second {
			m.Add(now.Add(-d), "profile-service", MiningText(errLine))
		}
		for d := 70 * time.Minute; d >= okEnd; d -= time.Minute {
			m.Add(now.Add(-d), "profile-service", MiningText(okLine))
		}
		return LogSet{Source: "profile-service.log", Subject: "profile-service", Origin: SrcLogs, Host: true, HasBaseline: true, Templates: m.Templates()}
	}
	ask := "We had a burst of 500s from profile-service around 9:12 this morning. Is it still a problem, or can I close the incident?"
	resolved := evidence.Alert{Name: "ProfileServiceHighErrorRate", Status: "resolved", Labels: map[string]string{"service": "profile-service"},
		StartsAt: now.Add(-55 * time.Minute), EndsAt: now.Add(-50 * time.Minute)}
	firing := resolved
	firing.Status, firing.EndsAt = "firing", time.Time{}
	for _, c := range []struct {
		name   string
		q      string
		set    LogSet
		alerts []evidence.Alert
		want   bool
	}{
		{"burst an hour ago, served since", ask, set(50*time.Minute+20*time.Second, 50*time.Minute, 0), []evidence.Alert{resolved}, true},
		{"the question asks why, not whether", "What caused the burst of 500s from profile-service at 9:12?", set(50*time.Minute+20*time.Second, 50*time.Minute, 0), nil, false},
		{"errors until five minutes ago", ask, set(40*time.Minute, 5*time.Minute, 0), nil, false},
		{"errors for 40 minutes, quiet for 16", ask, set(56*time.Minute, 16*time.Minute, 0), nil, false},
		{"quiet but no normal lines since", ask, set(50*time.Minute+20*time.Second, 50*time.Minute, 49*time.Minute), nil, false},
		{"an alert about it still fires", ask, set(50*time.Minute+20*time.Second, 50*time.Minute, 0), []evidence.Alert{firing}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := &finding.Result{Verdict: finding.VerdictIdentified, RootCause: finding.RootCause{Description: "writes were refused while the replica set elected a new primary", Confidence: 74}}
			sc := Scope{Message: c.q, Service: "profile-service", Window: win}
			got := answerOverNow(res, []LogSet{c.set}, c.alerts, sc)
			if got != c.want {
				t.Fatalf("answerOverNow = %v, want %v (%s)", got, c.want, res.RootCause.Description)
			}
			if !got {
				if res.Verdict != finding.VerdictIdentified {
					t.Errorf("verdict changed to %s", res.Verdict)
				}
				return
			}
			d := res.RootCause.Description
			if res.Verdict != finding.VerdictHealthy || res.RootCause.Confidence > 70 || !strings.Contains(d, "healthy now") || !strings.Contains(d, "elected a new primary") {
				t.Errorf("verdict %s confidence %v: %s", res.Verdict, res.RootCause.Confidence, d)
			}
			if len(c.alerts) > 0 && !strings.Contains(d, "resolved at") {
				t.Errorf("the resolved alert is not said: %s", d)
			}
		})
	}
}

// TestBurstVersions reads a burst whose errors all name the version a
// rollout replaced, while the lines of normal work name the new one, as
// a version skew of the rollout; errors of the running version, or lines
// naming no version, are not.
func TestBurstVersions(t *testing.T) {
	mk := func(lines ...string) []LogSet {
		m := analysis.NewMiner(win.BaselineStart, win.Start, win.End)
		for i, l := range lines {
			m.Add(win.Start.Add(time.Duration(i)*time.Minute), "cart", MiningText(l))
		}
		return []LogSet{{Source: "cart.log", Subject: "cart", Origin: SrcLogs, Templates: m.Templates()}}
	}
	for _, c := range []struct {
		name     string
		sets     []LogSet
		old, cur string
	}{
		{"slog JSON", mk(
			`{"time":"2026-11-26T09:58:18Z","level":"ERROR","msg":"load cart failed","err":"decode cart: Time.UnmarshalJSON: input is not a JSON string","version":"8.2.4"}`,
			`{"time":"2026-11-26T10:00:06Z","level":"INFO","msg":"starting","service":"cart","version":"8.3.0"}`,
		), "8.2.4", "8.3.0"},
		{"logfmt", mk(
			`time=2026-11-26T09:58:18Z level=error msg="read session" err="unknown field ttl_s" app_version=v3.1.0`,
			`time=2026-11-26T10:00:06Z level=info msg="listening" app_version=v3.2.0 addr=:8080`,
		), "3.1.0", "3.2.0"},
		{"the new version fails", mk(
			`{"level":"ERROR","msg":"load failed","version":"8.3.0"}`,
			`{"level":"INFO","msg":"starting","version":"8.3.0"}`,
		), "", ""},
		{"no version named", mk(
			`{"level":"ERROR","msg":"load failed"}`,
			`{"level":"INFO","msg":"starting"}`,
		), "", ""},
	} {
		old, cur := burstVersions(c.sets, []string{"cart"})
		if old != c.old || cur != c.cur {
			t.Errorf("%s: %q %q, want %q %q", c.name, old, cur, c.old, c.cur)
		}
	}
}
