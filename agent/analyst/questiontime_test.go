package analyst

import (
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent"
)

func TestStatedOnset(t *testing.T) {
	now := time.Date(2026, 6, 30, 16, 45, 0, 0, time.UTC)
	at := func(h, m int) time.Time { return time.Date(2026, 6, 30, h, m, 0, 0, time.UTC) }
	cases := []struct {
		msg  string
		want time.Time // zero: none stated
	}{
		{"cart-api p99 jumped to ~5s around 15:20, p50 is fine", at(15, 5)},
		{"checkout has been slow since about 14:10, p99 went from ~400ms to 4-5s", at(13, 55)},
		{"Alert HostDiskWillFillIn4Hours fired for pg-main-01 at 02:41", at(2, 26)},
		{"errors since 3:05pm", at(14, 50)},
		{"Customer CSV exports are failing or taking forever since about 1pm. What's going on?", at(12, 45)},
		{"broken since 11 am", at(10, 45)},
		{"started at 12pm", at(11, 45)},
		{"it failed at 11 p.m.", at(22, 45).Add(-24 * time.Hour)}, // later than now: yesterday's
		{"runs 5 replicas at 2 CPUs", time.Time{}},
		{"it failed at 22:30", at(22, 15).Add(-24 * time.Hour)}, // later than now: yesterday's
		{"started about 2 hours ago", at(14, 30)},
		{"in the last 3 hours", at(13, 45)},
		{"emails arrive late since last night", at(18, 0).Add(-24 * time.Hour)},
		{"the import has failed every night since monday, the task dies with SIGKILL", at(18, 0).Add(-24 * time.Hour)},
		{"broken since yesterday", at(0, 0).Add(-24 * time.Hour)},
		{"the nightly run at 01:00 and the retry at 03:00", at(0, 45)},
		{"search felt slow this morning", time.Time{}},
		// A morning the trouble has lasted through starts at 06:00.
		{"The billing portal's invoice history page has been timing out for lots of customers this morning. What happened?", at(6, 0)},
		{"checkout errors since this morning", at(6, 0)},
		{"p99 went from 400ms to 4.5s", time.Time{}},
		// A change of state in a part of today: the part of the day it
		// happened in opens the window.
		{"notifications p99 went from 40ms to 2s+ this afternoon but no errors", at(12, 0)},
		{"error rate jumped this morning, nothing deployed", at(6, 0)},
		{"queue depth from 0 to 40k this afternoon", at(12, 0)},
		{"orders failing since this afternoon", at(12, 0)},
		// Reports counted over today: the trouble has lasted since the day began.
		{"support has ~60 tickets today of customers getting the email twice", at(6, 0)},
		{"we got 200 complaints so far today about missing receipts", at(6, 0)},
		{"Zendesk shows 35 customer tickets today about double charges", at(6, 0)},
		{"checkout-worker restarted four times today", time.Time{}},
		{"nothing was deployed today", time.Time{}},
		{"quote latency looks a bit higher this afternoon", time.Time{}},
		{"search-api got slow after this morning's release (p95 went from ~180ms to 2s+)", time.Time{}},
		{"version 3.10.2 is out", time.Time{}},
		{"latency of 1:2 ratio", time.Time{}},
	}
	for _, c := range cases {
		got, ok := statedOnset(c.msg, now)
		if c.want.IsZero() {
			if ok {
				t.Errorf("%q: stated onset %s, want none", c.msg, got)
			}
			continue
		}
		if !ok || !got.Equal(c.want) {
			t.Errorf("%q: stated onset %s (%v), want %s", c.msg, got, ok, c.want)
		}
	}
}

func TestScopeWidensToStatedOnset(t *testing.T) {
	now := time.Date(2026, 6, 30, 16, 45, 0, 0, time.UTC)
	cases := []struct {
		msg, window string
		start       time.Time
		baseline    time.Time
	}{
		// The stated start is older than the default hour: the window reaches it.
		{"p99 jumped around 15:20", "", time.Date(2026, 6, 30, 15, 5, 0, 0, time.UTC), time.Date(2026, 6, 30, 13, 25, 0, 0, time.UTC)},
		// Within the default hour: the hour stays.
		{"failing since 16:30", "", now.Add(-time.Hour), now.Add(-2 * time.Hour)},
		// A window given in the context wins.
		{"p99 jumped around 15:20", "30m", now.Add(-30 * time.Minute), now.Add(-time.Hour)},
		{"no time stated", "", now.Add(-time.Hour), now.Add(-2 * time.Hour)},
	}
	for _, c := range cases {
		req := &agent.Request{Message: c.msg, Context: map[string]string{"service": "cart-api"}}
		if c.window != "" {
			req.Context["time_window"] = c.window
		}
		w := ScopeOf(req, now).Window
		if !w.Start.Equal(c.start) || !w.BaselineStart.Equal(c.baseline) || !w.End.Equal(now) {
			t.Errorf("%q (%q): window %s..%s baseline %s, want %s..%s baseline %s", c.msg, c.window, w.Start, w.End, w.BaselineStart, c.start, now, c.baseline)
		}
	}
}
