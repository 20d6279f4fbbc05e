package analyst

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// A provider refusing a service's requests because of what they carry: an
// SMS API answering 400 with "The 'To' number … is not a valid phone
// number" (Twilio's 21211, 21614), a mail API refusing an address that is
// not one. The error rate of the provider's calls rises and an alert on it
// fires, yet the provider is healthy: its other calls are accepted and
// delivered as before, and failing over to another provider changes
// nothing, since the other one refuses the same numbers. What changed is
// the input: numbers typed into a form that does not check them, often a
// bot or automated sign-ups filling a flow that sends a message to any
// number. Read from the caller's log: the provider's rejections of the
// recipient, the flow or template they come from (a field common to
// them) and the caller's calls that keep succeeding.

// KindProviderInputRejected is a provider refusing a service's requests
// for invalid recipients while it accepts the others.
const KindProviderInputRejected Kind = "provider_input_rejected"

var (
	// invalidRecipientRE is a provider refusing a request's recipient as
	// not a valid number or address.
	invalidRecipientRE = regexp.MustCompile(`(?i)is not a valid (?:phone|mobile) number|is not a mobile number|\binvalid ['"]?(?:to|recipient)['"]? (?:phone )?number\b|\binvalid phone number\b|does not contain a valid (?:email )?address|\binvalid (?:email|recipient) address\b`)
	// acceptedCallRE is a provider accepting a request: created, queued,
	// sent or delivered, or a 2xx status.
	acceptedCallRE = regexp.MustCompile(`(?i)\b(?:message|sms|email|mail) (?:created|queued|sent|accepted|delivered)\b|\bstatus=(?:queued|sent|delivered|accepted)\b|\bhttp_status[=:]"?20[012]\b`)
	// flowFieldRE is a field naming the flow, template or purpose of a
	// request.
	flowFieldRE = regexp.MustCompile(`(?i)\b(template|flow|purpose|message_type|campaign|use_case)["']?[=:]\s*["']?([\w.-]+)`)
	// messageProviders are the providers whose name a line may give.
	messageProviders = []string{"twilio", "vonage", "nexmo", "messagebird", "plivo", "sinch", "sns", "sendgrid", "mailgun", "postmark", "mailchimp", "mandrill", "ses", "infobip", "telnyx", "bandwidth"}
)

var providerInputRejected = &mechanism{
	kind:   KindProviderInputRejected,
	class:  classCause,
	label:  "provider refusing invalid recipients",
	detect: detectProviderInputRejected,
	related: func(h *Hypothesis, f *Finding) bool {
		return strings.EqualFold(f.Subject, h.Subject) || h.fact("provider") != "" && strings.EqualFold(f.Subject, h.fact("provider"))
	},
	strictTriggers: true,
	fitsChange:     func(h *Hypothesis, c *Finding) bool { return false },
	describe: func(h *Hypothesis, sc Scope) string {
		p := orWord(h.fact("provider"), "the provider")
		d := fmt.Sprintf("%s's failing calls to %s are %s refusing invalid recipients, not a fault of %s: %d requests since %s were rejected as not a valid number or address (a client error)",
			h.Subject, p, p, p, atoiOr(h.fact("rejected")), h.fact("onset"))
		d += h.quoteClause(" — ", "line", 240)
		if fl := h.fact("flow"); fl != "" {
			d += fmt.Sprintf("; they all come from %s, a flow that sends to whatever number it is given (bogus input, a bot or automated sign-ups)", fl)
		}
		d += fmt.Sprintf(". %s keeps accepting %s's other requests (%s), so %s is healthy and failing over to another provider would not help: the other one refuses the same recipients", p, h.Subject, h.fact("accepted"), p)
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		p := orWord(h.fact("provider"), "the provider")
		r.high("Do not fail over from %s: it answers; the rejected requests carry invalid recipients", p)
		r.high("Find who submits the invalid numbers or addresses to %s (the clients, IPs and user agents of the requests that start it) and stop them: validate the number before sending, rate-limit or challenge (CAPTCHA) the flow", orWord(h.fact("flow"), "the flow"))
		r.med("Count the provider's client errors (4xx, invalid recipient) apart from its server errors in the alert on %s's error rate", p)
	},
}

// detectProviderInputRejected reads, per workload, provider rejections of
// invalid recipients new in the incident, beside calls the provider keeps
// accepting in the same time.
func detectProviderInputRejected(ev *Gathered, found []Finding) []Finding {
	var out []Finding
	for si := range ev.Logs {
		set := &ev.Logs[si]
		// A log file named after its service (Host) is read too: the
		// calls are the service's wherever its log was kept.
		if set.Subject == "" {
			continue
		}
		var line string
		n, ok := 0, 0
		flows := map[string]int{}
		var onset time.Time
		for _, t := range set.Templates {
			if t.Incident == 0 {
				continue
			}
			switch {
			case matchLine(invalidRecipientRE, t.Example):
				at := orTime(t.FirstIncident, t.FirstSeen)
				if line == "" || at.Before(onset) {
					onset = at
				}
				if line == "" {
					line = t.Example
				}
				n += t.Incident
				if m := flowFieldRE.FindStringSubmatch(t.Example); m != nil {
					flows[strings.ToLower(m[1])+"="+m[2]] += t.Incident
				} else {
					flows[""] += t.Incident
				}
			case matchLine(acceptedCallRE, t.Example):
				ok += t.Incident
			}
		}
		if line == "" || n < 5 || ok == 0 {
			continue
		}
		flow := ""
		for k, c := range flows {
			if k != "" && c == n {
				flow = k
			}
		}
		prov := ""
		low := strings.ToLower(line)
		for _, p := range messageProviders {
			if strings.Contains(low, p) {
				prov = p
				break
			}
		}
		f := Finding{Kind: KindProviderInputRejected, Subject: set.Subject, Namespace: orWord(set.Namespace, ev.Scope.Namespace), Source: SrcLogs, Time: onset, Severity: SevWarning,
			Weight: 0.85, Object: "calls of " + set.Subject + " to " + orWord(prov, "the provider"),
			Summary: fmt.Sprintf("%s rejects %d of %s's requests as invalid recipients; %d accepted in the same time", orWord(prov, "the provider"), n, set.Subject, ok)}
		if prov != "" {
			f.Related = []string{prov}
		}
		f.setFact("provider", prov)
		f.setFact("rejected", fmt.Sprint(n))
		f.setFact("onset", onset.UTC().Format("15:04 UTC"))
		f.setFact("line", line)
		f.setFact("flow", flow)
		f.setFact("accepted", fmt.Sprintf("%d accepted in the same time", ok))
		f.Evidence = append(f.Evidence,
			fmt.Sprintf("%s's requests rejected as invalid recipients: %d since %s%s: %s", set.Subject, n, onset.UTC().Format("15:04 UTC"), map[bool]string{true: ", all with " + flow, false: ""}[flow != ""], quote(ReadableLine(line), 220)),
			fmt.Sprintf("%s's requests accepted by %s in the same time: %d", set.Subject, orWord(prov, "the provider"), ok))
		out = append(out, f)
	}
	return out
}
