package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
)

// TestProviderInputRejected: a provider's rejections of invalid recipients
// (Twilio's 21211 in logfmt and JSON, Twilio's Python exception, SendGrid's
// invalid address) beside requests it keeps accepting are the input, not
// the provider; rejections with nothing accepted, a few stray ones, or a
// provider's server error are not read.
func TestProviderInputRejected(t *testing.T) {
	ok := `2026-05-02T10:00:01.120Z level=info msg="message created" template=otp_login sid=SM0554368582cca8d1b6fba1eb5cd79fe7 status=queued http_status=201`
	cases := []struct {
		name, line, prov, flow string
		n                      int
		accepted               string
		want                   bool
	}{
		{"twilio logfmt", `2026-05-02T10:02:11.286Z level=error msg="twilio create message failed" template=signup_verify to=+10000319803 http_status=400 twilio_code=21211 twilio_message="The 'To' number +10000319803 is not a valid phone number."`, "twilio", "template=signup_verify", 40, ok, true},
		{"twilio json", `{"level":"error","msg":"sms send failed","provider":"twilio","flow":"password_reset","status":400,"code":21211,"message":"The 'To' number +44000665675 is not a valid phone number."}`, "twilio", "flow=password_reset", 12, ok, true},
		{"twilio python", `twilio.base.exceptions.TwilioRestException: HTTP 400 error: Unable to create record: Invalid 'To' Phone Number: +1555000XXXX`, "twilio", "", 9, `INFO sms message sent sid=SM2dc76306a0cc6b2c7d50a92ccaa9a7bf`, true},
		{"sendgrid", `ERROR mailer: sendgrid send failed status=400 errors=[{"message":"Does not contain a valid address.","field":"personalizations.0.to.0.email"}] purpose=newsletter_optin`, "sendgrid", "purpose=newsletter_optin", 30, `INFO mailer: email accepted status=202 http_status=202`, true},
		{"nothing accepted", `2026-05-02T10:02:11.286Z level=error msg="twilio create message failed" http_status=400 twilio_code=21211 twilio_message="The 'To' number +10000319803 is not a valid phone number."`, "", "", 40, "", false},
		{"a few stray ones", `2026-05-02T10:02:11.286Z level=error msg="twilio create message failed" http_status=400 twilio_code=21211 twilio_message="The 'To' number +10000319803 is not a valid phone number."`, "", "", 2, ok, false},
		{"provider's server error", `2026-05-02T10:02:11.286Z level=error msg="twilio create message failed" http_status=503 twilio_message="Service Unavailable"`, "", "", 40, ok, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			at := time.Date(2026, 5, 2, 10, 2, 11, 0, time.UTC)
			ts := []analysis.LogTemplate{{Template: c.line, Example: c.line, Count: c.n, Incident: c.n, FirstSeen: at}}
			if c.accepted != "" {
				ts = append(ts, analysis.LogTemplate{Template: c.accepted, Example: c.accepted, Count: 300, Baseline: 200, Incident: 100, FirstSeen: at.Add(-time.Hour)})
			}
			ev := &Gathered{Logs: []LogSet{{Source: "notify-6c9d7b8f5-zq4hn", Subject: "notify", Namespace: "comms", Templates: ts}}}
			out := detectProviderInputRejected(ev, nil)
			if (len(out) > 0) != c.want {
				t.Fatalf("found %d, want %v", len(out), c.want)
			}
			if !c.want {
				return
			}
			f := out[0]
			if f.Subject != "notify" || f.fact("provider") != c.prov || f.fact("flow") != c.flow || !f.Time.Equal(at) || len(f.Evidence) < 2 {
				t.Errorf("finding %s provider %q flow %q at %s", f.Subject, f.fact("provider"), f.fact("flow"), f.Time)
			}
			d := providerInputRejected.describe(&Hypothesis{Kind: KindProviderInputRejected, Subject: f.Subject, Primary: []*Finding{&f}}, Scope{})
			if !strings.Contains(d, "invalid recipients") || !strings.Contains(d, "failing over") {
				t.Errorf("described %q", d)
			}
		})
	}
}
