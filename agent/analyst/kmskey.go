package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// A customer-managed encryption key that can no longer be used: disabled,
// scheduled for deletion (AWS KMS PendingDeletion, Cloud KMS
// DESTROY_SCHEDULED), destroyed or gone. Every call that encrypts or
// decrypts with it fails — an S3 PutObject or GetObject on a bucket whose
// default encryption is SSE-KMS with that key, an EBS volume attach, a
// secret read — and the caller logs the provider's refusal
// (KMSInvalidStateException "... is pending deletion", DisabledException)
// at the end of its traceback, often as a generic upload or download
// failure. The key's state is the root, set by whoever disabled or
// scheduled it (CloudTrail: DisableKey, ScheduleKeyDeletion); the callers
// and their buckets are healthy. Deletion can still be cancelled while
// the key is pending.

// KindKMSKey is an encryption key disabled or pending deletion under its
// callers.
const KindKMSKey Kind = "kms_key"

var kmsKey = &mechanism{
	kind:    KindKMSKey,
	class:   classCause,
	label:   "encryption key disabled or pending deletion",
	detect:  detectKMSKeys,
	related: fromCaller,
	// Only a change to the key (disabled, scheduled for deletion, its
	// policy) triggers its refusals.
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		t := changeText(c)
		return matchLine(kmsChangeRE, t) || h.fact("key_id") != "" && strings.Contains(t, strings.ToLower(h.fact("key_id")))
	},
	strictTriggers: true,
	describe: func(h *Hypothesis, sc Scope) string {
		key := h.Subject
		if a := h.fact("alias"); a != "" {
			key = a + " (" + h.Subject + ")"
		}
		d := fmt.Sprintf("the KMS key %s is %s, so every %s with it is refused", key, orWord(h.fact("state"), "not usable"), orWord(h.fact("operations"), "call that encrypts or decrypts"))
		if b := h.fact("bucket"); b != "" {
			d += fmt.Sprintf(" (the default SSE-KMS key of bucket %s)", b)
		}
		d += ": " + quote(ReadableLine(h.fact("line")), 220)
		d += h.clause("; ", "scheduled")
		d += h.clause(". Its callers fail: ", "callers")
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		switch {
		case strings.Contains(h.fact("state"), "pending deletion"):
			r.high("Cancel the deletion of KMS key %s (aws kms cancel-key-deletion --key-id %s) and enable it again (aws kms enable-key): a key pending deletion can still be recovered", h.Subject, orWord(h.fact("key_id"), h.Subject))
		case strings.Contains(h.fact("state"), "disabled"):
			r.high("Enable KMS key %s again (aws kms enable-key --key-id %s)", h.Subject, orWord(h.fact("key_id"), h.Subject))
		default:
			r.high("Restore the encryption key %s its callers use, or point them (and the bucket's default encryption) to a key that exists", h.Subject)
		}
		if a := h.fact("actor"); a != "" {
			r.high("Stop %s from disabling or deleting keys that are in use: exclude keys with recent use in CloudTrail, require an owner tag, keep a dry run", a)
		}
		r.med("Tag the keys in use with their owner and service, and alarm on KMS DisableKey and ScheduleKeyDeletion events (CloudTrail, EventBridge)")
		r.low("Alert on KMS errors (KMSInvalidStateException, DisabledException) in the logs of %s", orWord(h.fact("callers"), "its callers"))
	},
}

var (
	// kmsStateRE is a provider refusing a call because of its key's state.
	kmsStateRE = regexp.MustCompile(`(?i)KMSInvalidStateException|KMS\.DisabledException|\bDisabledException\b.*\bkey\b|\bkey\b[^"]{0,200}\bis (pending deletion|pending import|disabled)\b|KMS key (is )?(disabled|pending deletion)|not allowed on a disabled key|cryptoKeyVersions/\d+ is not enabled, current state is: \w+|current state is: (DESTROY_SCHEDULED|DESTROYED|DISABLED)|KMS\.NotFoundException|customer master key that does not exist|KMS key .*does not exist`)
	kmsKeyIDRE = regexp.MustCompile(`(?i)arn:aws[\w-]*:kms:[\w-]+:\d+:key/([0-9a-f-]{36})|\bkey/([0-9a-f-]{36})|(cryptoKeys/[\w-]+)|\b([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\b`)
	kmsOpRE    = regexp.MustCompile(`(?i)when calling the (\w+) operation|\b(PutObject|GetObject|CopyObject|UploadPart|CreateMultipartUpload|GenerateDataKey|Decrypt|Encrypt)\b`)
	// kmsChangeRE is a change to a key's state or policy.
	kmsChangeRE = regexp.MustCompile(`(?i)ScheduleKeyDeletion|DisableKey|PutKeyPolicy|DeleteAlias|UpdateAlias|kms[^a-z].*(delet|disabl|schedul)|(delet|disabl|schedul)\w*.*\bkms\b`)
	kmsAliasRE  = regexp.MustCompile(`\balias/[\w/-]+`)
)

// kmsState names the key state a refusal states.
func kmsState(line string) string {
	l := strings.ToLower(line)
	switch {
	case strings.Contains(l, "pending deletion"), strings.Contains(l, "destroy_scheduled"), strings.Contains(l, "pendingdeletion"):
		return "pending deletion"
	case strings.Contains(l, "destroyed"), strings.Contains(l, "does not exist"), strings.Contains(l, "notfound"):
		return "deleted"
	case strings.Contains(l, "disabled"):
		return "disabled"
	}
	return "in a state that refuses its use (KMSInvalidStateException)"
}

// detectKMSKeys finds callers whose logs show a provider refusing their
// calls for the state of an encryption key: one finding per key, its
// callers related, with the key's state, the bucket it encrypts and the
// event that disabled or scheduled it (CloudTrail, a cleanup job's log, a
// describe-key output).
func detectKMSKeys(ev *Gathered, found []Finding) []Finding {
	byKey := map[string]*Finding{}
	var order []string
	for x := range incidentMatches(ev, kmsStateRE) {
		set, t, line := x.set, x.t, x.line
		if matchLine(cloudTrailEventRE, line) {
			continue // the trail's record of a refused call, not a caller
		}
		id := kmsKeyOf(line)
		f := byKey[id]
		if f == nil {
			f = &Finding{Kind: KindKMSKey, Subject: orWord(id, "kms key"), Namespace: set.Namespace, Source: set.Origin, Object: set.Origin + " " + set.Source,
				Time: orTime(t.FirstIncident, t.FirstSeen), Severity: SevCritical, Weight: 0.9}
			f.setFact("key_id", id)
			f.setFact("line", line)
			f.setFact("state", kmsState(line))
			f.setFact("bucket", bucketOf(line))
			byKey[id] = f
			order = append(order, id)
		}
		f.Time = earliest(f.Time, orTime(t.FirstIncident, t.FirstSeen))
		if RootCauseScore(line) > RootCauseScore(f.fact("line")) {
			f.Facts["line"] = line
		}
		if m := findSubmatch(kmsOpRE, line); m != nil {
			op := orWord(m[1], m[2])
			if ops := f.fact("operations"); !slices.Contains(strings.Split(ops, " and "), op) {
				if ops == "" {
					f.setFact("operations", op)
				} else {
					f.Facts["operations"] = ops + " and " + op
				}
			}
		}
		if !set.Host && set.Subject != "" && !slices.Contains(strings.Split(f.fact("callers"), ", "), set.Subject) {
			if f.fact("callers") == "" {
				f.setFact("callers", set.Subject)
			} else {
				f.Facts["callers"] += ", " + set.Subject
			}
			f.Related = appendNew(f.Related, set.Subject)
		}
		if len(f.Evidence) < 3 {
			f.Evidence = append(f.Evidence, templateEvidence(*set, t, line))
		}
	}
	var out []Finding
	for _, id := range order {
		f := byKey[id]
		kmsKeyHistory(ev, f)
		if f.fact("operations") != "" {
			f.Facts["operations"] += " call"
		}
		f.Summary = fmt.Sprintf("KMS key %s is %s: %s refused (from %s)", f.Subject, f.fact("state"), orWord(f.fact("operations"), "calls"), hm(f.Time))
		out = append(out, *f)
	}
	return out
}

// kmsKeyOf is the key a line names: its ID (from an ARN), a Cloud KMS
// key's name, or "".
func kmsKeyOf(line string) string {
	if m := findSubmatch(kmsKeyIDRE, line); m != nil {
		for _, g := range m[1:] {
			if g != "" {
				return g
			}
		}
	}
	return ""
}

// kmsKeyHistory adds what the key's own record says: the trail's event
// that disabled or scheduled it, a job's log line that did, the state a
// describe-key output shows, its alias.
func kmsKeyHistory(ev *Gathered, f *Finding) {
	id := f.fact("key_id")
	if id == "" {
		return
	}
	for _, c := range ev.Commands {
		for _, l := range c.Lines {
			if strings.Contains(l, id) && (strings.Contains(l, "PendingDeletion") || strings.Contains(l, "Disabled")) {
				f.Evidence = append(f.Evidence, fmt.Sprintf("%s: %s", truncate(c.Command, 80), strings.Join(strings.Fields(l), " ")))
				if a := findString(kmsAliasRE, c.Command); a != "" {
					f.setFact("alias", a)
				}
			}
		}
	}
	for _, set := range ev.Logs {
		for _, t := range set.Templates {
			for _, l := range t.Lines() {
				if !strings.Contains(l, id) || !matchLine(kmsChangeRE, l) && !matchLine(kmsScheduledLineRE, l) {
					continue
				}
				if e := parseCloudTrail(l); e != nil {
					if !matchLine(kmsChangeRE, e.EventName) || e.ErrorCode != "" {
						continue
					}
					// The deletion scheduled says more than the key disabled
					// on the way.
					if f.fact("scheduled") == "" || strings.Contains(e.EventName, "Deletion") {
						delete(f.Facts, "scheduled")
						f.setFact("scheduled", fmt.Sprintf("%s by %s at %s", e.EventName, e.actor(), ts(e.EventTime)))
					}
					delete(f.Facts, "actor")
					f.setFact("actor", e.actor())
					f.Evidence = appendNew(f.Evidence, fmt.Sprintf("CloudTrail: %s on key %s by %s at %s", e.EventName, id, e.actor(), ts(e.EventTime)))
				} else if matchLine(kmsScheduledLineRE, l) {
					f.Evidence = appendNew(f.Evidence, fmt.Sprintf("%s logs: %s", set.Source, quote(ReadableLine(l), 200)))
					if f.fact("actor") == "" {
						f.setFact("actor", set.Subject)
					}
				}
			}
		}
	}
}

var kmsScheduledLineRE = regexp.MustCompile(`(?i)schedul\w* (key )?deletion|disabled and scheduled|disabl\w* key|key \S+ disabled`)
