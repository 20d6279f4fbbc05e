package analyst

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A provider's limit shared by several workloads (an API key's or an
// account's credits, a cloud project's quota per minute, an AWS account's
// API request rate) used up by one of them: a batch Job or a backfill
// started, or a release that calls the provider far more often, takes the
// whole allowance, and the other workloads on the same account are
// refused with the provider's quota answer (SendGrid's "Maximum credits
// exceeded", Google's 429 RESOURCE_EXHAUSTED "Quota exceeded for quota
// metric", AWS's ThrottlingException "Rate exceeded", OpenAI's
// insufficient_quota). The victim changed nothing that explains it and
// the provider is healthy: the cause is the other workload's volume,
// which its own log shows at the same limit (its retries on the quota, its
// own refusals) since it started.

// KindQuotaNeighbour is a workload refused by a provider's shared quota
// that another workload, started or changed just before, uses up.
const KindQuotaNeighbour Kind = "quota_neighbour"

var (
	// quotaRefusedRE is a provider refusing a call for a used-up quota,
	// credit balance or account request rate.
	quotaRefusedRE = regexp.MustCompile(`(?i)Maximum credits exceeded|\bRESOURCE_EXHAUSTED\b|\bResourceExhausted\b|Quota exceeded for (?:quota )?metric|\bRATE_LIMIT_EXCEEDED\b|\brateLimitExceeded\b|\binsufficient_quota\b|exceeded your current quota|\bquota (?:exceeded|exhausted)\b|\bexceeded (?:the |your )?(?:daily |monthly )?quota\b|\bThrottlingException\b|\bRate exceeded\b|\bTooManyRequestsException\b|Daily (?:user )?sending quota exceeded|Maximum sending rate exceeded|\bcredits? (?:exhausted|exceeded|depleted)\b|\bout of credits\b`)
	// quotaUseRE is a workload's own line about the same limit: its
	// refusals or its retries and waits on the quota.
	quotaUseRE = regexp.MustCompile(`(?i)\bquota\w*|\bthrottl\w+|\bcredits?\b|\brate[ _-]?limit\w*|\bRate exceeded\b|\bRESOURCE_EXHAUSTED\b|\b429\b`)
	// quotaServiceRE is the provider a quota answer names: Google's
	// "of service 'x'", the AWS SDK's "operation error SSM:".
	quotaServiceRE = regexp.MustCompile(`of service '([a-z0-9.-]+)'|operation error ([A-Za-z0-9 ]+?):`)
)

var quotaNeighbour = &mechanism{
	kind:   KindQuotaNeighbour,
	class:  classCause,
	label:  "a provider quota shared with another workload, used up by it",
	detect: detectQuotaNeighbour,
	// Only the other workload's start or change is the trigger; the
	// victim's own deploys near the onset are coincidences.
	strictTriggers: true,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return c.Subject != "" && sameWorkloadName(c.Subject, h.fact("consumer"))
	},
	related: func(h *Hypothesis, f *Finding) bool {
		if f.Subject != h.Subject && !sameWorkloadName(f.Subject, h.fact("consumer")) {
			return false
		}
		switch f.Kind {
		case KindThrottling, KindAuth, KindLogErrors, KindErrorRate, KindCrashLoop, KindAppCrash, KindJobFailed, KindQuota:
			return true
		}
		return false
	},
	describe: func(h *Hypothesis, sc Scope) string {
		c := h.fact("consumer")
		prov := orWord(h.fact("provider"), "the provider")
		d := fmt.Sprintf("%s uses up the quota of %s that %s shares with it: %s refuses %s's calls (%s)", c, prov, h.Subject, prov, h.Subject, quotaReply(h.fact("line")))
		d += h.quoteClause(" — ", "line", 220)
		if ch := h.fact("change"); ch != "" {
			d += fmt.Sprintf("; the refusals began after %s", ch)
		}
		if cl := h.fact("consumer_line"); cl != "" {
			d += fmt.Sprintf(", and %s's own log shows it at the same limit: %s", c, quote(ReadableLine(cl), 200))
		}
		d += fmt.Sprintf(". %s is not at fault and %s's own changes do not explain it: the shared allowance is spent by %s's volume", capitalize(prov), h.Subject, c)
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		c := h.fact("consumer")
		prov := orWord(h.fact("provider"), "the provider")
		r.high("Stop or slow %s (suspend the Job, scale it down, roll back the release that raised its calls) so that %s gets its share of %s's quota back; then replay %s's failed work", c, h.Subject, prov, h.Subject)
		r.med("Give %s and %s separate quotas (another API key, subuser, project or account), or reserve %s's share", c, h.Subject, h.Subject)
		r.low("Alert on the provider's quota use (credits left, quota per minute) and rate-limit batch work so it cannot take the whole allowance")
	},
}

// quotaReply is the quota answer a line quotes.
func quotaReply(line string) string {
	if m := findString(quotaRefusedRE, line); m != "" {
		return m
	}
	return "quota exceeded"
}

// sameWorkloadName reports whether two names are one workload's: equal,
// or one the other's name with a run's suffix (a Job of a CronJob, a
// one-off run named after its campaign).
func sameWorkloadName(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	a, b = strings.ToLower(a), strings.ToLower(b)
	return a == b || strings.HasPrefix(a, b+"-") || strings.HasPrefix(b, a+"-")
}

// quotaUser is another workload seen at the same limit.
type quotaUser struct {
	name, line string
}

// detectQuotaNeighbour finds workloads a provider refuses for a used-up
// quota while another workload, started or changed shortly before, is
// seen at the same limit.
func detectQuotaNeighbour(ev *Gathered, _ []Finding) []Finding {
	type victim struct {
		f    *Finding
		line string
	}
	var by keyed[victim]
	users := map[string]string{} // workload -> its line at the limit
	refused := func(subject, ns, object, origin, line string, at time.Time, n int) {
		v := by.get(subject)
		if v.f == nil {
			v.f = &Finding{Kind: KindQuotaNeighbour, Subject: subject, Namespace: ns, Object: object,
				Time: at, Severity: SevCritical, Weight: 0.85, Source: origin, Facts: map[string]string{}}
			v.f.setFact("line", line)
		} else if !at.IsZero() && (v.f.Time.IsZero() || at.Before(v.f.Time)) {
			v.f.Time = at
		}
		v.f.Evidence = append(v.f.Evidence, fmt.Sprintf("%s logged %s refused for the quota from %s: %s", object, plural(n, "call", "calls"), hm(at), quote(ReadableLine(line), 240)))
	}
	for i := range ev.Logs {
		set := &ev.Logs[i]
		// an audit trail records every caller's calls: it is no victim
		if set.Subject == "" || strings.Contains(strings.ToLower(set.Source), "cloudtrail") {
			continue
		}
		for _, t := range set.Templates {
			if t.Incident == 0 {
				continue
			}
			if line := templateLine(t, quotaRefusedRE); line != "" {
				refused(set.Subject, set.Namespace, set.Source, set.Origin, line, earliest(t.FirstSeen, t.FirstIncident), t.Incident)
			}
			if line := templateLine(t, quotaUseRE); line != "" && users[set.Subject] == "" {
				users[set.Subject] = line
			}
		}
	}
	// Logs kept as text (kubectl logs deploy/NAME or job/NAME whose pod
	// is not known): read line by line.
	for _, c := range ev.Commands {
		if !strings.Contains(c.Command, " logs ") {
			continue
		}
		_, name, _ := strings.Cut(c.Target, "/")
		if name == "" {
			continue
		}
		var first time.Time
		line, n := "", 0
		for _, l := range c.Lines {
			if matchLine(quotaRefusedRE, l) {
				at := evidence.ParseLogTime(l, ev.Window.End)
				if at.IsZero() || at.After(ev.Window.End) || at.Before(ev.Window.Start) {
					continue
				}
				if line == "" || at.Before(first) {
					first = at
				}
				if line == "" {
					line = l
				}
				n++
			}
			if users[name] == "" && (matchLine(quotaRefusedRE, l) || matchLine(quotaUseRE, l)) {
				users[name] = l
			}
		}
		if line != "" {
			refused(name, c.Namespace, c.Target, SrcLogs, line, first, n)
		}
	}
	var out []Finding
	for _, s := range by.order {
		v := by.m[s]
		f := v.f
		// The other workload at the same limit that started or changed
		// in the hours before the refusals: the latest such change.
		var best *evidence.Change
		consumer := ""
		for i := range ev.Changes {
			c := &ev.Changes[i]
			if c.Timestamp.After(f.Time.Add(time.Minute)) || c.Timestamp.Before(f.Time.Add(-6*time.Hour)) || sameWorkloadName(c.Service, s) {
				continue
			}
			for u := range users {
				if sameWorkloadName(u, s) || !sameWorkloadName(u, c.Service) {
					continue
				}
				if best == nil || c.Timestamp.After(best.Timestamp) {
					best, consumer = c, u
				}
			}
		}
		if best == nil {
			continue
		}
		f.setFact("consumer", best.Service)
		f.setFact("consumer_line", users[consumer])
		f.setFact("change", fmt.Sprintf("the %s of %s at %s: %s", changeWord(best.Kind), best.Service, ts(best.Timestamp), quote(best.Description, 180)))
		f.Related = append(f.Related, best.Service)
		if consumer != best.Service {
			f.Related = append(f.Related, consumer)
		}
		if m := findSubmatch(quotaServiceRE, f.fact("line")); m != nil {
			f.setFact("provider", strings.TrimSpace(orWord(m[1], m[2])))
		}
		f.Evidence = append(f.Evidence,
			fmt.Sprintf("the %s of %s at %s, before the refusals: %s", changeWord(best.Kind), best.Service, ts(best.Timestamp), quote(best.Description, 200)),
			fmt.Sprintf("%s at the same limit: %s", consumer, quote(ReadableLine(users[consumer]), 220)))
		// The cause began when the other workload did.
		f.Time = best.Timestamp
		f.Summary = fmt.Sprintf("%s uses up the quota %s shares (refused: %s)", best.Service, s, quotaReply(f.fact("line")))
		out = append(out, *f)
	}
	// Two workloads refused at the same limit, each changed before the
	// other's refusals: the one that changed first started the contention,
	// and the reading with the later change as the cause is dropped.
	var kept []Finding
	for i := range out {
		a := &out[i]
		drop := false
		for j := range out {
			b := &out[j]
			if i != j && sameWorkloadName(a.fact("consumer"), b.Subject) && sameWorkloadName(b.fact("consumer"), a.Subject) && a.Time.After(b.Time) {
				drop = true
			}
		}
		if !drop {
			kept = append(kept, *a)
		}
	}
	return kept
}
