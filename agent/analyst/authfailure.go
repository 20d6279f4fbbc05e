package analyst

import (
	"fmt"
	"regexp"

	"github.com/rootcause/rootcause/finding"
)

// Credentials rejected (HTTP 401/403, expired or revoked tokens and API
// keys): every call of the caller to that service fails. A bare 401 or 403
// is a status only when it is not the fraction of a clock time or a
// number's decimals: "09:38:29.403 # Background saving error" (Redis),
// "10:02:11,401 ERROR" (logback) are milliseconds, not a refusal.
var authFailure = &mechanism{
	kind:       KindAuth,
	class:      classCause,
	label:      "authentication failure",
	lines:      regexp.MustCompile(`(?i)(?:^|[^\d.,:]|\D[.,:])40[13]\b|Unauthorized|Forbidden|permission denied|AccessDenied|access denied|invalid credentials|authentication failed|password authentication failed|invalid token|token (has )?expired|InvalidClientTokenId|ExpiredToken`),
	lineWeight: 0.7,
	describe: func(h *Hypothesis, sc Scope) string {
		s := h.Subject
		var d string
		if cred := h.fact("credential"); cred != "" {
			state := "expired"
			if cred != "expired" {
				state = "is invalid or revoked"
			}
			what := "the external service"
			if ext := h.fact("external"); ext != "" {
				what = "the external " + ext + " API"
			}
			status := "HTTP 401/403 (unauthorized)"
			if st := h.fact("status"); st != "" {
				status = "HTTP " + st + " (unauthorized)"
			}
			d = fmt.Sprintf("the credential (API key/token) that %s uses for %s %s: every call is rejected with %s, authentication fails — %s", orWord(h.fact("caller"), s), what, state, status, quote(ReadableLine(h.fact("line")), 200))
			return d
		}
		d = fmt.Sprintf("authentication or authorisation fails in %s (credentials rejected): %s", orWord(h.fact("caller"), s), quote(ReadableLine(h.fact("line")), 200))
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		s := h.Subject
		r.rollback()
		if h.fact("credential") != "" {
			r.add(finding.PriorityHigh, fmt.Sprintf("Issue a new API key/token for %s in the provider's console, update the secret %s reads it from and restart or reload it; then replay the failed work (dead-letter queue)", orWord(h.fact("external"), "the external service"), orWord(h.fact("caller"), s)))
			r.add(finding.PriorityMedium, "Track the expiry dates of third-party credentials and rotate them before they expire (secret manager rotation, calendar reminders)")
		}
		r.add(finding.PriorityHigh, fmt.Sprintf("Restore valid credentials for %s (rotate or re-sync the secret, check its expiry)", orWord(h.fact("caller"), s)))
		r.add(finding.PriorityLow, "Alert on credential expiry and on authentication failures")
	},
}
