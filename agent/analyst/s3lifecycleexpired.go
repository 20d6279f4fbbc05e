package analyst

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// Objects a reader needs deleted by the bucket's own lifecycle rule. S3
// does not lose objects: a GetObject answered NoSuchKey for keys that were
// there means they were deleted, and a lifecycle rule whose Expiration
// applies to them deletes every object older than its Days. A rule meant
// for one prefix (temporary uploads) whose filter is empty ("Prefix": "",
// or no filter at all) applies to the whole bucket; the server access log
// records its deletes as S3.EXPIRE.OBJECT by AmazonS3. The answer names the
// reader, the bucket, the rule, its days and its filter, and the expired
// keys the log shows.

// KindS3LifecycleExpired is objects deleted by a bucket's lifecycle rule.
const KindS3LifecycleExpired Kind = "s3_lifecycle_expired"

var s3LifecycleExpired = &mechanism{
	kind:   KindS3LifecycleExpired,
	class:  classCause,
	label:  "objects deleted by the bucket's lifecycle expiration rule (NoSuchKey)",
	detect: detectS3LifecycleExpired,
	related: exceptOwnAndChanges(KindS3LifecycleExpired, func(h *Hypothesis, f *Finding) bool {
		b := h.fact("bucket")
		return b != "" && (f.Subject == b || strings.Contains(f.Summary, b))
	}),
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		t := strings.ToLower(changeText(c))
		return strings.Contains(t, "lifecycle") || h.fact("rule") != "" && strings.Contains(t, strings.ToLower(h.fact("rule"))) || h.fact("bucket") != "" && strings.Contains(t, h.fact("bucket"))
	},
	strictTriggers: true,
	describe: func(h *Hypothesis, sc Scope) string {
		b := h.fact("bucket")
		d := h.Subject + " fails on NoSuchKey for objects of the bucket " + b
		if n := h.fact("missing"); n != "" {
			d += " (" + n + " keys, e.g. " + h.fact("example") + ")"
		}
		d += ": S3 is not losing them, the bucket's lifecycle rule " + h.fact("rule") + " deleted them: its expiration deletes objects after " + h.fact("days") + " days"
		if h.fact("whole") != "" {
			d += " and its filter has an empty prefix, so it applies to the whole bucket (all objects), not only to the prefix it was meant for: every object older than " + h.fact("days") + " days is expired"
		} else if p := h.fact("prefix"); p != "" {
			d += " under the prefix " + p
		}
		if x := h.fact("expired"); x != "" {
			d += "; the bucket's access log records the deletes as S3.EXPIRE.OBJECT (" + x + ")"
		}
		if t := h.Trigger; t != nil {
			d += fmt.Sprintf("; the rule came with %s's change at %s (%s)", t.Subject, t.Time.UTC().Format(time.RFC3339), quote(t.Summary, 160))
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Scope the lifecycle rule %s of %s to the prefix it is meant for (Filter.Prefix, e.g. tmp/) or disable it now, before it expires more objects", h.fact("rule"), h.fact("bucket"))
		r.high("Restore the expired objects from their source or a backup (without versioning, expired objects are gone), then re-run %s", h.Subject)
		r.med("Enable versioning (with a noncurrent-version expiration) on buckets that hold records, and review lifecycle changes for an empty filter")
		r.low("Alert on S3.EXPIRE.OBJECT of prefixes that must be kept, and on NoSuchKey in readers")
	},
}

var (
	noSuchKeyRE    = regexp.MustCompile(`NoSuchKey|The specified key does not exist`)
	s3URIRE        = regexp.MustCompile(`s3://([a-z0-9][a-z0-9.-]+)/(\S+?)(?:[\s'",:]|$)`)
	s3ExpireLogRE  = regexp.MustCompile(`^\S+ ([a-z0-9][a-z0-9.-]+) \[([^\]]+)\] \S+ \S+ \S+ S3\.EXPIRE\.OBJECT (\S+)`)
	lifecycleCmdRE = regexp.MustCompile(`(?:get-bucket-lifecycle(?:-configuration)?|GetBucketLifecycleConfiguration)\b.*?--bucket[ =]([a-z0-9][a-z0-9.-]+)`)
)

type lifecycleRule struct {
	ID         string `json:"ID"`
	Status     string `json:"Status"`
	Prefix     *string
	Expiration *struct {
		Days int `json:"Days"`
	} `json:"Expiration"`
	Filter *struct {
		Prefix *string `json:"Prefix"`
		And    *struct {
			Prefix *string `json:"Prefix"`
		} `json:"And"`
		Tag *struct{} `json:"Tag"`
	} `json:"Filter"`
}

func detectS3LifecycleExpired(ev *Gathered, _ []Finding) []Finding {
	// The readers' NoSuchKey, with the bucket and keys they name.
	missing := map[string]bool{}
	bucket, example, reader := "", "", ""
	var at time.Time
	note := func(l, subject string, t time.Time) {
		if !matchLine(noSuchKeyRE, l) {
			return
		}
		m := findSubmatch(s3URIRE, l)
		if m == nil || bucket != "" && m[1] != bucket {
			return
		}
		bucket = m[1]
		missing[m[2]] = true
		if example == "" {
			example = m[2]
		}
		if reader == "" {
			reader = subject
		}
		if lt, ok := evidence.LineTime([]byte(l), ev.Window.End); ok {
			t = lt
		}
		if !t.IsZero() && (at.IsZero() || t.Before(at)) {
			at = t
		}
	}
	for _, set := range ev.Logs {
		for _, t := range set.Templates {
			for _, l := range t.Lines() {
				note(l, set.Subject, firstOf(t.FirstIncident, t.FirstSeen))
			}
		}
	}
	// A terminated container's log (a failed Job's pod).
	for key, lines := range ev.K8s.PreviousLogs {
		parts := strings.Split(key, "/")
		for _, l := range lines {
			note(l.Text, workloadOfPodName(parts[min(1, len(parts)-1)]), l.Time)
		}
	}
	for _, c := range ev.Commands {
		for _, l := range c.Lines {
			note(l, "", time.Time{})
		}
	}
	if bucket == "" {
		return nil
	}
	// The bucket's lifecycle rules, as the CLI prints them.
	var rule lifecycleRule
	found := false
	for _, c := range ev.Commands {
		m := findSubmatch(lifecycleCmdRE, c.Command)
		if m == nil || m[1] != bucket {
			continue
		}
		var doc struct {
			Rules []lifecycleRule `json:"Rules"`
		}
		if json.Unmarshal([]byte(strings.Join(c.Lines, "\n")), &doc) != nil {
			continue
		}
		for _, r := range doc.Rules {
			// A rule filtered on tags reaches only tagged objects.
			if r.Filter != nil && r.Filter.Tag != nil {
				continue
			}
			if r.Status == "Enabled" && r.Expiration != nil && r.Expiration.Days > 0 {
				rule, found = r, true
				if rulePrefix(r) == "" {
					break
				}
			}
		}
	}
	if !found {
		return nil
	}
	prefix := rulePrefix(rule)
	// The rule must reach the missing keys.
	reach := false
	for k := range missing {
		if strings.HasPrefix(k, prefix) {
			reach = true
		}
	}
	if !reach {
		return nil
	}
	// Its deletes in the bucket's server access log.
	expired, firstExpired := []string{}, time.Time{}
	for _, c := range ev.Commands {
		for _, l := range c.Lines {
			if m := findSubmatch(s3ExpireLogRE, l); m != nil && m[1] == bucket {
				if len(expired) < 2 {
					expired = append(expired, m[3])
				}
				if t, err := time.Parse("02/Jan/2006:15:04:05 -0700", m[2]); err == nil && (firstExpired.IsZero() || t.Before(firstExpired)) {
					firstExpired = t
				}
			}
		}
	}
	subject := orWord(ev.Scope.Service, reader)
	if subject == "" {
		subject = bucket
	}
	if at.IsZero() {
		at = ev.Window.Start
	}
	f := Finding{Kind: KindS3LifecycleExpired, Subject: subject, Object: "bucket " + bucket, Time: at, Severity: SevCritical, Weight: 0.9, Source: SrcLogs}
	f.setFact("bucket", bucket)
	f.setFact("example", example)
	f.setFact("missing", fmt.Sprint(len(missing)))
	f.setFact("rule", orWord(rule.ID, "(unnamed)"))
	f.setFact("days", fmt.Sprint(rule.Expiration.Days))
	f.setFact("prefix", prefix)
	if prefix == "" {
		f.setFact("whole", "true")
	}
	f.Related = append(f.Related, bucket)
	f.Evidence = append(f.Evidence, fmt.Sprintf("%s: NoSuchKey for %d keys of s3://%s (e.g. %s)", subject, len(missing), bucket, example))
	scope := "the prefix " + prefix
	if prefix == "" {
		scope = "an empty prefix filter: the whole bucket"
	}
	f.Evidence = append(f.Evidence, fmt.Sprintf("the lifecycle rule %s of %s expires objects after %d days, with %s", f.fact("rule"), bucket, rule.Expiration.Days, scope))
	if len(expired) > 0 {
		f.setFact("expired", strings.Join(expired, ", "))
		f.Evidence = append(f.Evidence, fmt.Sprintf("the access log of %s records S3.EXPIRE.OBJECT by AmazonS3 from %s: %s", bucket, firstExpired.UTC().Format(time.RFC3339), strings.Join(expired, ", ")))
	}
	f.Summary = fmt.Sprintf("%s: NoSuchKey on s3://%s, objects expired by its lifecycle rule %s", subject, bucket, f.fact("rule"))
	return []Finding{f}
}

// rulePrefix is the prefix a lifecycle rule applies to ("" for the whole
// bucket).
func rulePrefix(r lifecycleRule) string {
	switch {
	case r.Filter != nil && r.Filter.Prefix != nil:
		return *r.Filter.Prefix
	case r.Filter != nil && r.Filter.And != nil && r.Filter.And.Prefix != nil:
		return *r.Filter.And.Prefix
	case r.Prefix != nil:
		return *r.Prefix
	}
	return ""
}
