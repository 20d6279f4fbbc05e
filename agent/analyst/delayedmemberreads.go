package analyst

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// Reads served by a delayed replica-set member. A MongoDB member
// configured with a delay (secondaryDelaySecs, slaveDelay before 5.0)
// applies the primary's writes that long after they happened: a recovery
// copy against a bad write. It is meant to be hidden (hidden: true, so no
// client reads from it); a delayed member left visible is eligible for
// secondary reads, and a client whose read preference lets it read from
// secondaries (secondary, secondaryPreferred, nearest) is sent there for a
// share of its reads. Those reads return the data as it was a delay ago:
// a change a user just made is gone on one refresh and back on the next,
// for as long as the delay. Nothing fails and nothing is logged. The answer
// names the client and its read preference, the member, its delay and
// that it is not hidden, and the change that moved the reads.

// KindDelayedMemberReads is a client's reads served by a delayed replica.
const KindDelayedMemberReads Kind = "delayed_member_reads"

var delayedMemberReads = &mechanism{
	kind:   KindDelayedMemberReads,
	class:  classCause,
	label:  "reads served by a delayed replica-set member that is not hidden",
	detect: detectDelayedMemberReads,
	related: exceptOwnAndChanges(KindDelayedMemberReads, func(h *Hypothesis, f *Finding) bool {
		m := h.fact("member")
		return m != "" && (f.Subject == m || strings.HasPrefix(m, f.Subject+"."))
	}),
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		t := strings.ToLower(changeText(c))
		return strings.Contains(t, "readpreference") || strings.Contains(t, "read preference") || strings.Contains(t, "secondar") || strings.Contains(t, "delay")
	},
	// Wrong data fails nothing: its subject's pods, probes and errors are
	// their own story, not consequences of it.
	unrelated: func(h *Hypothesis, f *Finding) bool {
		return f.Kind != KindDelayedMemberReads && infoOf(f.Kind).class != classChange
	},
	describe:  describeDelayedMemberReads,
	recommend: recommendDelayedMemberReads,
}

var (
	rsHostRE        = regexp.MustCompile(`["']?host["']?\s*:\s*["']([^"']+)["']`)
	rsDelayRE       = regexp.MustCompile(`["']?(secondaryDelaySecs|slaveDelay)["']?\s*:\s*(?:(?:Number)?Long\(\s*)?["']?(\d+)`)
	rsHiddenRE      = regexp.MustCompile(`["']?hidden["']?\s*:\s*(true|false)`)
	readPrefRE      = regexp.MustCompile(`(?i)read_?preference["']?\s*[=:]\s*["']?(secondaryPreferred|secondary|nearest)\b`)
	readPrefPhrase  = regexp.MustCompile(`(?i)\b(secondaryPreferred|nearest)\b`)
	replLagSecsRE   = regexp.MustCompile(`replLag:\s*'?(\d+) secs`)
	rsReplSourceRE  = regexp.MustCompile(`^source:\s*(\S+)`)
	memberShortName = regexp.MustCompile(`^([^.:]+)`)
)

type rsMember struct {
	host   string
	delay  int
	hidden bool
	field  string
}

// readRSMembers reads the members of a replica set's configuration as
// mongosh, the legacy shell or a driver's JSON prints them.
func readRSMembers(text string) []rsMember {
	locs := rsHostRE.FindAllStringSubmatchIndex(text, -1)
	var out []rsMember
	for i, l := range locs {
		end := len(text)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		seg := text[l[0]:end]
		m := rsMember{host: text[l[2]:l[3]]}
		if d := rsDelayRE.FindStringSubmatch(seg); d != nil {
			m.field = d[1]
			m.delay, _ = strconv.Atoi(d[2])
		}
		if h := rsHiddenRE.FindStringSubmatch(seg); h != nil {
			m.hidden = h[1] == "true"
		}
		out = append(out, m)
	}
	return out
}

func detectDelayedMemberReads(ev *Gathered, _ []Finding) []Finding {
	// A delayed member not hidden.
	var member rsMember
	lag := ""
	for _, c := range ev.Commands {
		text := strings.Join(c.Lines, "\n")
		for _, m := range readRSMembers(text) {
			if m.delay > 0 && !m.hidden && member.host == "" {
				member = m
			}
		}
	}
	if member.host == "" {
		return nil
	}
	short := memberShortName.FindString(member.host)
	// Its lag as the replication info shows it.
	for _, c := range ev.Commands {
		src := ""
		for _, l := range c.Lines {
			if m := rsReplSourceRE.FindStringSubmatch(strings.TrimSpace(l)); m != nil {
				src = m[1]
			}
			if m := replLagSecsRE.FindStringSubmatch(l); m != nil && src == member.host {
				lag = m[1]
			}
		}
	}

	// The client that reads from secondaries: its environment, its log, a
	// change.
	client, pref, where := "", "", ""
	var at time.Time
	note := func(subject, text, how string, t time.Time) {
		m := readPrefRE.FindStringSubmatch(text)
		if m == nil || subject == "" {
			return
		}
		if client == "" || subject == ev.Scope.Service && client != ev.Scope.Service {
			client, pref, where = subject, m[1], how
			if !t.IsZero() {
				at = t
			}
		}
	}
	for _, p := range ev.K8s.Pods {
		for _, c := range p.Spec.Containers {
			for _, e := range c.Env {
				note(workloadOfPodName(p.Name), e.Name+"="+e.Value, "its environment ("+e.Name+")", time.Time{})
			}
		}
	}
	for _, set := range ev.Logs {
		for _, t := range set.Templates {
			for _, l := range t.Lines() {
				note(set.Subject, l, "its log", time.Time{})
			}
		}
	}
	var change *evidence.Change
	for _, c := range append(append([]evidence.Change{}, ev.Earlier...), ev.Changes...) {
		if readPrefRE.MatchString(c.Description) || readPrefPhrase.MatchString(c.Description) && strings.Contains(strings.ToLower(c.Description), "read") {
			cc := c
			change = &cc
			if client == "" {
				m := readPrefPhrase.FindStringSubmatch(c.Description)
				client, pref, where = c.Service, m[1], "its change"
			}
		}
	}
	if client == "" {
		return nil
	}
	if change != nil && change.Service == client {
		at = change.Timestamp
	}
	if at.IsZero() {
		at = ev.Window.Start
	}
	f := Finding{Kind: KindDelayedMemberReads, Subject: client, Object: "member " + member.host, Time: at, Severity: SevCritical, Weight: 0.9, Source: SrcLogs}
	f.setFact("member", member.host)
	f.setFact("short", short)
	f.setFact("delay", strconv.Itoa(member.delay))
	f.setFact("field", member.field)
	f.setFact("pref", pref)
	f.setFact("lag", lag)
	if change != nil {
		f.setFact("change", fmt.Sprintf("%s's change at %s (%s)", change.Service, change.Timestamp.UTC().Format(time.RFC3339), quote(change.Description, 160)))
	}
	f.Related = append(f.Related, short)
	f.Evidence = append(f.Evidence, fmt.Sprintf("%s reads with readPreference=%s (%s)", client, pref, where))
	f.Evidence = append(f.Evidence, fmt.Sprintf("the replica set's member %s has %s: %d and hidden: false: it is delayed and eligible for reads", member.host, member.field, member.delay))
	if lag != "" {
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s is %s s behind the primary", short, lag))
	}
	f.Summary = fmt.Sprintf("%s: reads with %s served by the delayed member %s (%s s behind, not hidden)", client, pref, short, strconv.Itoa(member.delay))
	return []Finding{f}
}

func describeDelayedMemberReads(h *Hypothesis, sc Scope) string {
	delay, _ := strconv.Atoi(h.fact("delay"))
	d := fmt.Sprintf("%s reads with readPreference=%s, and the replica set has a delayed member, %s, with %s %s (%s behind the primary on purpose) that is not hidden: a delayed member that is not hidden is eligible for secondary reads, so part of %s's reads are served by it and return the data as it was %s ago; a write is applied on the primary and then seems to revert on the next read and flip back and forth on refresh, for as long as the delay. Nothing fails: the data read is old, not lost",
		h.Subject, orWord(h.fact("pref"), "secondaryPreferred"), orWord(h.fact("short"), h.fact("member")), orWord(h.fact("field"), "secondaryDelaySecs"), h.fact("delay"), delayWords(delay), h.Subject, delayWords(delay))
	if c := h.fact("change"); c != "" {
		d += "; the reads moved to secondaries with " + c
	} else if t := h.Trigger; t != nil {
		d += fmt.Sprintf("; the reads moved to secondaries with %s's change at %s (%s)", t.Subject, t.Time.UTC().Format(time.RFC3339), quote(t.Summary, 160))
	}
	return d
}

// delayWords says a delay in seconds as people do (1 h, 30 min, 45 s).
func delayWords(s int) string {
	switch {
	case s >= 3600 && s%3600 == 0:
		return fmt.Sprintf("%d h", s/3600)
	case s >= 60 && s%60 == 0:
		return fmt.Sprintf("%d min", s/60)
	}
	return fmt.Sprintf("%d s", s)
}

func recommendDelayedMemberReads(h *Hypothesis, sc Scope, r *recommender) {
	m := orWord(h.fact("short"), "the delayed member")
	r.high("Hide the delayed member %s (rs.reconfig with hidden: true, priority 0) so no client reads from it", m)
	r.high("Or read from the primary in %s (readPreference=primary, or primaryPreferred) until the delayed member is hidden; reads that must see the user's own writes need the primary or causal consistency", h.Subject)
	r.med("Where secondary reads stay, set maxStalenessSeconds in %s's connection string so lagging members are skipped", h.Subject)
	r.low("Alert on a replica-set member with a delay that is not hidden, and review read-preference changes against the replica set's configuration")
}
