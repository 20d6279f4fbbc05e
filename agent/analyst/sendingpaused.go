package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A sending provider that paused the whole account. Amazon SES watches an
// account's bounce and complaint rates and, past its limits (a bounce
// rate of about 10 %, complaints of 0.5 %), pauses sending for the whole
// account: every SendEmail of every sender on it is refused
// (AccountSendingPausedException, "Email sending is disabled for your
// entire Amazon SES account"; SES v1's "Sending paused for this
// account"), and the account reads SendingEnabled false with an
// EnforcementStatus of SHUTDOWN (aws sesv2 get-account; aws ses
// get-account-sending-enabled: Enabled false). A configuration set can be
// paused alike (SendingPausedException). The service that sends the
// transactional mail (password resets, receipts) is refused although
// nothing of it changed: the bounces came from another sender on the same
// account, typically a bulk campaign to an old list. The answer names the
// pause, the account's state, the rate that caused it and the mailing
// that drove it; rolling back or restarting the refused sender does
// nothing.

// KindSendingPaused is a sending provider that paused an account's (or a
// configuration set's) sending.
const KindSendingPaused Kind = "sending_paused"

var sendingPaused = &mechanism{
	kind:   KindSendingPaused,
	class:  classCause,
	label:  "the sending provider paused the account's sending",
	detect: detectSendingPaused,
	related: exceptOwnAndChanges(KindSendingPaused, func(h *Hypothesis, f *Finding) bool {
		return refusalOf(h, f, false)
	}),
	// A bulk mailing on the same account drives the bounces.
	fitsChange:     func(h *Hypothesis, c *Finding) bool { return matchLine(bulkMailingRE, changeText(c)) },
	strictTriggers: true,
	describe:       describeSendingPaused,
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		p := orWord(h.fact("provider"), "the provider")
		r.high("Stop the mailing that drove the bounces (%s) and open a case with %s to resume sending (for SES: the account's review case, with the list cleaned and the cause fixed); until then route %s's transactional mail through another account or provider", orWord(h.fact("campaign"), "the bulk sender on the account"), p, h.Subject)
		r.med("Separate transactional mail (password resets, receipts) from marketing: its own account or dedicated configuration set and IP pool, so a campaign's reputation cannot stop it")
		r.med("Suppress bounced and unsubscribed addresses and validate old lists before a campaign; do not roll back or restart %s for this", h.Subject)
		r.low("Alert on the account's bounce and complaint rates (SES Reputation.BounceRate above 5 %%, Reputation.ComplaintRate above 0.1 %%) and on refused sends")
	},
}

var (
	// A provider refusing a send because the account's (or a
	// configuration set's) sending is paused.
	sendingPausedRE = regexp.MustCompile(`(?i)AccountSendingPaused|AccountSuspendedException|\bSendingPausedException|ConfigurationSetSendingPaused|sending is disabled for your entire [\w ]*account|sending is disabled for the configuration set|sending paused for this account|account's ability to send email (?:is currently paused|has been permanently restricted)`)
	// The refusal's own words: the exception and the provider's message.
	pausedNameRE = regexp.MustCompile(`\b\w*(?:SendingPaused|AccountSuspended)\w*`)
	pausedTextRE = regexp.MustCompile(`(?i)[^"\\:]*(?:sending is disabled|sending paused|ability to send email)[^"\\.]*\.?`)
	// The account's state as the provider's API reads it.
	sendingDisabledRE   = regexp.MustCompile(`(?i)"(?:SendingEnabled|Enabled)"\s*:\s*false`)
	enforcementStatusRE = regexp.MustCompile(`(?i)"EnforcementStatus"\s*:\s*"(\w+)"`)
	// A bounce or complaint rate a sender or the provider reports.
	reputationRateRE = regexp.MustCompile(`(?i)\b(bounce|complaint)s?\s+(?:rate|ratio)\b[^%\n]{0,60}?(\d+(?:\.\d+)?)\s*%`)
	// A bulk mailing: a campaign, a newsletter, an audience sent to.
	bulkMailingRE = regexp.MustCompile(`(?i)\bcampaign|newsletter|mailing|\baudience\b|bulk (?:send|mail|e-?mail)|\bblast\b`)
	// A reputation metric of the provider (SES's Reputation.BounceRate).
	reputationMetricRE = regexp.MustCompile(`(?i)reputation\.?(bounce|complaint)rate`)
)

// detectSendingPaused finds senders refused because the provider paused
// the account's sending.
func detectSendingPaused(ev *Gathered, _ []Finding) []Finding {
	configSet := false
	clients, names := refusedByPattern(ev, sendingPausedRE, func(line string) {
		if m := findSubmatch(sendingPausedRE, line); m != nil && strings.Contains(strings.ToLower(m[0]), "configuration") {
			configSet = true
		}
	})
	if len(names) == 0 {
		return nil
	}
	subject, c := names[0], clients[names[0]]
	f := c.workloadFinding(KindSendingPaused, subject)
	refusal := strings.TrimSpace(pausedNameRE.FindString(c.line))
	if m := pausedTextRE.FindString(ReadableLine(c.line)); m != "" {
		refusal = strings.TrimPrefix(refusal+": \""+strings.TrimSpace(m)+"\"", ": ")
	}
	f.setFact("refusal", refusal)
	if strings.Contains(c.line, "SES") || matchLine(pausedNameRE, c.line) {
		f.setFact("provider", "Amazon SES")
	}
	if configSet {
		f.setFact("scope", "configuration set")
	}
	f.Related = slices.Clone(names[1:])
	f.Evidence = append(f.Evidence, fmt.Sprintf("%s's sends are refused from %s (%d lines): %s", subject, ts(c.first), c.n, quote(ReadableLine(c.line), 220)))
	// The account's state, and the rates the outputs report.
	for _, cmd := range ev.Commands {
		text := strings.Join(cmd.Lines, "\n")
		if matchLine(sendingDisabledRE, text) {
			f.setFact("sending_enabled", "false")
		}
		if m := findSubmatch(enforcementStatusRE, text); m != nil && !strings.EqualFold(m[1], "HEALTHY") {
			f.setFact("enforcement", m[1])
		}
		if f.fact("sending_enabled") != "" || f.fact("enforcement") != "" {
			if f.fact("account_cmd") == "" {
				f.setFact("account_cmd", strings.TrimSpace(cmd.Command))
			}
		}
		for _, l := range cmd.Lines {
			if m := findSubmatch(reputationRateRE, l); m != nil && f.fact(strings.ToLower(m[1])+"_rate") == "" {
				f.setFact(strings.ToLower(m[1])+"_rate", m[2]+" %")
				f.setFact("rate_line", strings.TrimSpace(l))
			}
		}
	}
	if f.fact("account_cmd") != "" {
		st := "sending disabled"
		if e := f.fact("enforcement"); e != "" {
			st += ", EnforcementStatus " + e
		}
		f.Evidence = append(f.Evidence, fmt.Sprintf("the account reads %s (%s)", st, f.fact("account_cmd")))
	}
	// The provider's reputation metrics: the highest rate in the window.
	for name, s := range metricSeries(ev.Metrics) {
		m := findSubmatch(reputationMetricRE, name)
		if m == nil {
			continue
		}
		peak := 0.0
		for _, p := range s.Points {
			peak = max(peak, p.V)
		}
		if peak <= 0 {
			continue
		}
		if peak <= 1 {
			peak *= 100
		}
		k := strings.ToLower(m[1]) + "_rate"
		f.setFact(k, fmt.Sprintf("%.1f %% (%s)", peak, lastDotted(name)))
	}
	for _, k := range []string{"bounce_rate", "complaint_rate"} {
		if v := f.fact(k); v != "" {
			f.Evidence = append(f.Evidence, fmt.Sprintf("the %s rate: %s", strings.TrimSuffix(k, "_rate"), v))
		}
	}
	if l := f.fact("rate_line"); l != "" {
		f.Evidence = append(f.Evidence, "reported: "+quote(ReadableLine(l), 200))
	}
	// The bulk mailing on the account: the latest change naming one
	// within two days before the refusals.
	for _, ch := range append(append([]evidence.Change{}, ev.Earlier...), ev.Changes...) {
		if ch.Timestamp.After(c.first) || c.first.Sub(ch.Timestamp) > 48*time.Hour || !matchLine(bulkMailingRE, ch.Description) {
			continue
		}
		f.setFact("campaign", fmt.Sprintf("%s's %s change at %s (%s)", ch.Service, strings.ReplaceAll(ch.Kind, "_", " "), ts(ch.Timestamp), quote(ch.Description, 180)))
	}
	if v := f.fact("campaign"); v != "" {
		f.Evidence = append(f.Evidence, "a bulk mailing on the account before it: "+v)
	}
	f.Summary = fmt.Sprintf("%s: %s paused the account's sending, every send is refused from %s", subject, orWord(f.fact("provider"), "the provider"), hm(c.first))
	return []Finding{f}
}

func describeSendingPaused(h *Hypothesis, sc Scope) string {
	p := orWord(h.fact("provider"), "the sending provider")
	scope := "the whole account"
	if h.fact("scope") != "" {
		scope = "the configuration set"
	}
	d := fmt.Sprintf("%s paused sending for %s: every send of %s is refused from %s", p, scope, h.Subject, h.fact("refused_from"))
	if r := h.fact("refusal"); r != "" {
		d += " (" + r + ")"
	} else {
		d += " (" + quote(ReadableLine(h.fact("line")), 200) + ")"
	}
	if cmd := h.fact("account_cmd"); cmd != "" {
		d += "; the account reads sending disabled"
		if e := h.fact("enforcement"); e != "" {
			d += fmt.Sprintf(", EnforcementStatus %s", e)
		}
		d += " (" + cmd + ")"
	}
	var rates []string
	for _, k := range []string{"bounce_rate", "complaint_rate"} {
		if v := h.fact(k); v != "" {
			rates = append(rates, fmt.Sprintf("a %s rate of %s", strings.TrimSuffix(k, "_rate"), v))
		}
	}
	d += ". A provider pauses an account whose bounce or complaint rate passed its limits (SES: about 10 % bounces, 0.5 % complaints)"
	if len(rates) > 0 {
		d += ": " + strings.Join(rates, " and ")
	}
	// A trigger is told by the engine; a mailing older than the window
	// only here.
	if c := h.fact("campaign"); c != "" && h.Trigger == nil {
		d += "; the bounces came with the bulk mailing of " + c
	}
	d += fmt.Sprintf(". Every sender on the account is refused, whatever its own code: restarting or rolling back %s does nothing until the provider resumes sending", h.Subject)
	return d
}
