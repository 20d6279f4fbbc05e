package analyst

import (
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// TestSendingPaused reads a sender refused because the provider paused the
// account's sending, in each SDK's words (the JavaScript SDK v3's JSON
// error, boto3's ClientError of SES v1, the Java SDK v2's SESv2
// exceptions, a configuration set paused), the account's state (aws
// sesv2 get-account), the bounce rate a campaign's log reports and the
// bulk mailing before it. An address not verified or a sending rate
// exceeded is not a pause.
func TestSendingPaused(t *testing.T) {
	at := win.Start.Add(10 * time.Minute)
	sender := func(line string) LogSet {
		return LogSet{Source: "receipts-mailer-5c7d-q2", Subject: "receipts-mailer", Namespace: "mail",
			Templates: []analysis.LogTemplate{{Example: line, Incident: 30, FirstIncident: at, FirstSeen: at}}}
	}
	jsV3 := `{"level":50,"time":1795708371000,"msg":"send failed","err":{"type":"AccountSendingPausedException","message":"Email sending is disabled for your entire Amazon SES account.","$fault":"client","$metadata":{"httpStatusCode":400}}}`
	boto := `botocore.errorfactory.AccountSendingPausedException: An error occurred (AccountSendingPausedException) when calling the SendEmail operation: Sending paused for this account.`
	javaV2 := `software.amazon.awssdk.services.sesv2.model.SendingPausedException: The message can't be sent because the account's ability to send email is currently paused. (Service: SesV2, Status Code: 400, Request ID: 5b1e2f0a)`
	configSet := `ConfigurationSetSendingPausedException: Email sending is disabled for the configuration set transactional.`
	getAccount := evidence.CommandOutput{Command: "aws sesv2 get-account", Lines: []string{
		`{`, `    "EnforcementStatus": "SHUTDOWN",`, `    "ProductionAccessEnabled": true,`, `    "SendingEnabled": false`, `}`}}
	campaignLog := evidence.CommandOutput{Command: "kubectl -n growth logs job/spring-newsletter", Lines: []string{
		`2026-11-26T15:41:02Z WARN feedback: bounce rate for the spring newsletter is 12.4%`}}
	newsletter := evidence.Change{Timestamp: at.Add(-3 * time.Hour), Service: "growth-mailer", Kind: "config", Description: "spring newsletter to the 2020 prospects list"}
	cases := []struct {
		name     string
		line     string
		cmds     []evidence.CommandOutput
		earlier  []evidence.Change
		want     bool
		refusal  string
		says     []string
		provider string
	}{
		{"JavaScript SDK v3: the account paused, its state, the bounce rate and the newsletter", jsV3, []evidence.CommandOutput{getAccount, campaignLog}, []evidence.Change{newsletter},
			true, `AccountSendingPausedException: "Email sending is disabled for your entire Amazon SES account."`, []string{"EnforcementStatus SHUTDOWN", "a bounce rate of 12.4 %", "growth-mailer's config change"}, "Amazon SES"},
		{"boto3: SES v1's Sending paused", boto, nil, nil, true, `AccountSendingPausedException: "Sending paused for this account."`, []string{"for the whole account"}, "Amazon SES"},
		{"Java SDK v2: SESv2's SendingPausedException", javaV2, nil, nil, true, `SendingPausedException: "The message can't be sent because the account's ability to send email is currently paused."`, []string{"for the whole account"}, "Amazon SES"},
		{"a configuration set paused", configSet, nil, nil, true, `ConfigurationSetSendingPausedException: "Email sending is disabled for the configuration set transactional."`, []string{"for the configuration set"}, "Amazon SES"},
		{"an address not verified", `MessageRejected: Email address is not verified. The following identities failed the check in region EU-WEST-1: no-reply@example.com`, nil, nil, false, "", nil, ""},
		{"the sending rate exceeded", `Throttling: Maximum sending rate exceeded.`, nil, nil, false, "", nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := Gathered{Window: win, Logs: []LogSet{sender(c.line)}, Commands: c.cmds, Earlier: c.earlier}
			f, ok := oneFinding(t, detectSendingPaused(&ev, nil), c.want)
			if !ok {
				return
			}
			if f.Subject != "receipts-mailer" || f.fact("refusal") != c.refusal || f.fact("provider") != c.provider {
				t.Errorf("subject %q refusal %q provider %q, want receipts-mailer %q %q", f.Subject, f.fact("refusal"), f.fact("provider"), c.refusal, c.provider)
			}
			checkWritten(t, sendingPaused, &f, "Stop the mailing", append([]string{"paused sending", "rolling back receipts-mailer does nothing"}, c.says...)...)
		})
	}
}
