package analyst

import (
	"fmt"
	"maps"
	"regexp"
	"strings"
	"time"
)

// A certificate refused because it is not valid yet: its notBefore lies
// after the time the client checks it at. Go folds both ends of the
// validity into one message ("x509: certificate has expired or is not yet
// valid: current time T is before NOTBEFORE"; "is after NOTAFTER" is the
// expiry), OpenSSL, curl and Python say "certificate is not yet valid",
// Java throws CertificateNotYetValidException ("NotBefore: …"), Node
// CERT_NOT_YET_VALID, rustls NotValidYet. Nothing expired and nothing is
// misconfigured in the certificate: a freshly issued certificate whose
// start lies hours ahead was signed by an issuer whose clock runs ahead (a
// CA host back from a reboot with its hardware clock read as local time,
// its time service off), or the clients' clock runs behind. A host in the
// evidence whose clock is not synchronised (timedatectl, chronyc) and
// reads ahead names the clock to fix; the change that stopped its time
// service is the trigger, not the certificate tooling beside it.

// KindCertNotYetValid is a certificate whose notBefore lies after its
// clients' current time.
const KindCertNotYetValid Kind = "cert_not_yet_valid"

var (
	// notYetValidRE is a certificate refused as not yet valid, in the
	// forms TLS libraries print.
	notYetValidRE = regexp.MustCompile(`(?i)current time \S+ is before \S+|certificate is not yet valid|CertificateNotYetValidException|CERT_NOT_YET_VALID|\bNotValidYet\b|certificate not yet valid`)
	// notBeforeTimesRE reads the client's current time and the notBefore
	// from Go's message, or the notBefore alone (Java's "NotBefore: …").
	notBeforeTimesRE = regexp.MustCompile(`(?i)current time (\S+) is before ([0-9][0-9T:\-+.Z]+)|NotBefore:\s*([A-Z][a-z]{2} [A-Z][a-z]{2} +\d{1,2} \d{2}:\d{2}:\d{2} [A-Z]{2,5} \d{4})`)
	// unsyncedClockRE is a host's time service reporting the clock
	// unsynchronised: timedatectl, chronyc tracking, ntpstat.
	unsyncedClockRE = regexp.MustCompile(`(?i)^\s*(?:System clock synchronized:\s*no|NTP service:\s*inactive|NTP synchronized:\s*no|RTC in local TZ:\s*yes|Leap status\s*:\s*Not synchronised|unsynchronised)\s*$`)
	// universalTimeRE is timedatectl's UTC reading of the host's clock.
	universalTimeRE = regexp.MustCompile(`^\s*Universal time:\s*\w{3} (\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}) UTC`)
	// dateUTCRE is `date -u`'s output.
	dateUTCRE = regexp.MustCompile(`^\s*(\w{3} \w{3} +\d{1,2} \d{2}:\d{2}:\d{2}) UTC (\d{4})\s*$`)
)

var certNotYetValid = &mechanism{
	kind:    KindCertNotYetValid,
	class:   classCause,
	label:   "certificate not yet valid (issuer's clock ahead)",
	detect:  detectCertNotYetValid,
	related: kindsOnSubject(KindCertificate, KindTLS, KindLogErrors, KindErrorRate, KindCertExpiring),
	refines: []Kind{KindCertificate, KindTLS},
	// Only a change to time keeping (a time service disabled, a clock
	// set) triggers it; the certificate tooling upgraded beside it did
	// not move a certificate's start hours ahead.
	fitsChange:     changeSays(regexp.MustCompile(`(?i)\b(?:chronyd?|ntpd?|timesyncd?|time ?sync|clock|rtc|hwclock|time ?zone)\b`)),
	strictTriggers: true,
	describe: func(h *Hypothesis, sc Scope) string {
		target := orWord(h.fact("target"), h.Subject)
		caller := orWord(h.fact("caller"), "its clients")
		d := fmt.Sprintf("the TLS certificate %s presents is not yet valid", target)
		nb, now := h.fact("not_before"), h.fact("current_time")
		switch {
		case nb != "" && now != "":
			d += fmt.Sprintf(": its notBefore (%s) lies %s after the current time %s checks it at (%s)", nb, orWord(h.fact("ahead"), "hours"), caller, now)
		case nb != "":
			d += fmt.Sprintf(": its notBefore is %s", nb)
		}
		d += fmt.Sprintf(", so every TLS handshake from %s fails; the certificate has not expired", caller)
		if host := h.fact("clock_host"); host != "" {
			d += fmt.Sprintf(". It was signed by a clock running ahead: the clock of %s is not synchronised (%s)", host, h.fact("clock_state"))
			if a := h.fact("clock_ahead"); a != "" {
				d += fmt.Sprintf(" and reads %s ahead", a)
			}
			d += ", and a certificate issued there starts in the future"
		} else {
			d += ". A certificate whose start lies in the future was signed by an issuer whose clock runs ahead (or the clients' clock runs behind): the issuer's time sync (NTP/chrony) is the place to look"
		}
		return d + h.quoteClause(" — ", "line", 220)
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		host := orWord(h.fact("clock_host"), "the issuing CA's host")
		r.high("Fix the clock of %s: enable its time sync (chrony or systemd-timesyncd), step the clock, and keep the hardware clock in UTC (timedatectl set-local-rtc 0)", host)
		r.high("Re-issue the certificate of %s once the clock is right (cmctl renew, or delete its Secret) so that its notBefore lies in the past", orWord(h.fact("target"), h.Subject))
		r.med("Backdate issued certificates by a margin (Vault's not_before_duration, an issuer's backdate option) so that small skews do not reject them")
		r.low("Alert on hosts with node_timex_sync_status == 0 and on certificates whose notBefore lies in the future")
	},
}

// detectCertNotYetValid turns a certificate or handshake failure whose
// line says the certificate is not yet valid into this mechanism's
// finding, with the certificate's notBefore, the client's time, and the
// host whose clock is not synchronised, if the evidence shows one.
func detectCertNotYetValid(ev *Gathered, found []Finding) []Finding {
	var out []Finding
	host, state, ahead := unsyncedClockHost(ev)
	for _, f := range found {
		if f.Kind != KindCertificate && f.Kind != KindTLS {
			continue
		}
		line := f.fact("line")
		if !matchLine(notYetValidRE, line) || matchLine(notAfterRE, line) {
			continue
		}
		g := f
		g.Facts = maps.Clone(f.Facts)
		g.Kind, g.Weight, g.Severity = KindCertNotYetValid, max(f.Weight, 0.9), SevCritical
		g.Evidence = append([]string(nil), f.Evidence...)
		if m := findSubmatch(notBeforeTimesRE, line); m != nil {
			nb, now := parseCertTime(m[2]), parseCertTime(m[1])
			if m[3] != "" {
				nb = parseCertTime(m[3])
			}
			if !nb.IsZero() {
				g.setFact("not_before", nb.UTC().Format(time.RFC3339))
			}
			if !now.IsZero() {
				g.setFact("current_time", now.UTC().Format(time.RFC3339))
			}
			if !nb.IsZero() && !now.IsZero() && nb.After(now) {
				g.setFact("ahead", humanDuration(nb.Sub(now)))
			}
		}
		if host != "" {
			g.setFact("clock_host", host)
			g.setFact("clock_state", state)
			g.setFact("clock_ahead", ahead)
			g.Related = append(append([]string(nil), f.Related...), host)
			g.Evidence = append(g.Evidence, fmt.Sprintf("%s: clock not synchronised (%s)%s", host, state, map[bool]string{true: ", reading " + ahead + " ahead", false: ""}[ahead != ""]))
		}
		g.Summary = fmt.Sprintf("%s presents a certificate not yet valid to %s", orWord(f.fact("target"), f.Subject), orWord(f.fact("caller"), "its clients"))
		out = append(out, g)
	}
	return out
}

// unsyncedClockHost finds, in the commands run on hosts, one whose time
// service reports the clock unsynchronised: the host, what its time
// service says, and how far ahead of the investigation's end its UTC
// clock read, when it printed it and that is more than two minutes.
func unsyncedClockHost(ev *Gathered) (host, state, ahead string) {
	for _, c := range ev.Commands {
		var says []string
		var read time.Time
		for _, l := range c.Lines {
			if matchLine(unsyncedClockRE, l) {
				says = append(says, strings.TrimSpace(l))
			}
			if m := findSubmatch(universalTimeRE, l); m != nil && read.IsZero() {
				read, _ = time.Parse("2006-01-02 15:04:05", m[1])
			}
			if m := findSubmatch(dateUTCRE, l); m != nil && read.IsZero() {
				read, _ = time.Parse("Mon Jan _2 15:04:05 2006", strings.Join(strings.Fields(m[1]), " ")+" "+m[2])
			}
		}
		if len(says) == 0 {
			continue
		}
		if c.Host == "" || (host != "" && ahead != "") {
			continue
		}
		a := ""
		if end := ev.Window.End; !read.IsZero() && !end.IsZero() && read.Sub(end) > 2*time.Minute && read.Sub(end) < 72*time.Hour {
			a = humanDuration(read.Sub(end))
		}
		// The first unsynchronised host, or the first that reads ahead.
		if host == "" || a != "" {
			host, state, ahead = c.Host, strings.Join(says, ", "), a
		}
	}
	return host, state, ahead
}

// parseCertTime reads a certificate time as TLS libraries print it.
func parseCertTime(s string) time.Time {
	s = strings.TrimSpace(strings.Trim(s, `"',.\`))
	for _, layout := range []string{time.RFC3339Nano, time.RFC3339, "Mon Jan _2 15:04:05 MST 2006", "Mon Jan 2 15:04:05 MST 2006"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t
		}
	}
	return time.Time{}
}
