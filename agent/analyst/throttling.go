package analyst

import (
	"fmt"
	"regexp"
	"strings"
)

// Calls rate-limited (HTTP 429, ThrottlingException): by an external API,
// by a dependency, or by the service's own misconfigured rate limiter.
var throttlingM = &mechanism{
	kind:  KindThrottling,
	class: classDependency,
	label: "throttling",
	// A counter of throttled calls at zero ("ses_throttled=0") is none.
	lines:      regexp.MustCompile(`(?i)(?:status(?:_?code)?|code|http_status|response_code)["']?\s*[=:]\s*["']?429\b|\b429 Too Many Requests|HTTP/[\d.]+"?\s+429\b|\bHTTP 429\b|Too Many Requests|rate[ -]limit(ed|ing)?|ThrottlingException|Rate exceeded|throttl(?:\w*\s*[=:]\s*[1-9]|\w*(?:[^=:\w]|$))|quota exceeded|` + cloudThrottleWords),
	lineWeight: 0.7,
	describe: func(h *Hypothesis, sc Scope) string {
		s := h.Subject
		var d string
		top := h.top()
		if ext := h.fact("external"); ext != "" && h.fact("line") != "" {
			d = fmt.Sprintf("the external API %s rate-limits (HTTP 429, too many requests) the calls from %s: %s", ext, orWord(h.fact("caller"), "the service"), quote(ReadableLine(h.fact("line")), 200))
		} else if cloud := h.fact("cloud"); cloud != "" && h.fact("line") != "" && (h.fact("target") == "" || h.fact("target") == h.fact("caller")) {
			// A cloud API's own throttle reply (S3's 503 SlowDown, DynamoDB's
			// ProvisionedThroughputExceeded): the service's requests exceed
			// the rate the provider serves for the resource it calls.
			if c := h.fact("contender"); c != "" && throttleLoadSource(h) {
				// The subject started (its own change) and its requests
				// fill the rate the resource is served at: the others on
				// it are refused for its load.
				res := orWord(h.fact("resource"), cloud)
				d = fmt.Sprintf("%s sends so many requests to %s that %s throttles everyone on it: since the %s of %s at %s (%s), %s answers the writers of %s with %s, %s among them — %s; %s's own requests are refused the same way",
					h.Subject, res, cloud, infoOf(h.Trigger.Kind).label, h.Subject, ts(h.Trigger.Time), quote(orWord(h.Trigger.fact("description"), h.Trigger.Summary), 160),
					cloud, res, throttleReply(h.fact("line")), c, quote(ReadableLine(h.fact("contender_line")), 200), h.Subject)
				if h.fact("contender_line") == "" {
					d = strings.Replace(d, " — \"\"", "", 1)
				}
				return d
			}
			d = fmt.Sprintf("%s is throttled by %s: its requests%s exceed the request rate %s serves, and are refused (%s) — %s", orWord(h.fact("caller"), "the service"), cloud, onWord(h.fact("resource")), cloud, throttleReply(h.fact("line")), quote(ReadableLine(h.fact("line")), 200))
			if c := h.fact("contender"); c != "" {
				d += fmt.Sprintf("; %s is throttled on the same %s at the same time: the two share its request rate", c, orWord(h.fact("resource"), cloud))
			}
		} else if h.fact("line") == "" {
			d = fmt.Sprintf("%s is throttled (rate limited): %s", s, top.Summary)
		} else if c := h.Trigger; c != nil && c.Kind == KindConfigChange && (h.fact("target") == "" || h.fact("target") == h.fact("caller") || h.fact("caller") == "") {
			// The service answers 429 itself, right after its own config
			// change: its rate limiter is misconfigured.
			d = fmt.Sprintf("rate-limit misconfiguration in %s (config change %s): its own rate limiter answers 429 (too many requests) to every client — %s", orWord(h.fact("caller"), s), orWord(c.fact("revision"), ts(c.Time)), quote(ReadableLine(h.fact("line")), 200))
		} else {
			d = fmt.Sprintf("%s is throttled (rate limited) by %s: %s", orWord(h.fact("caller"), "the service"), orWord(h.fact("target"), s), quote(ReadableLine(h.fact("line")), 200))
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		if cloud := h.fact("cloud"); cloud != "" {
			res := orWord(h.fact("resource"), cloud)
			if c := h.fact("contender"); c != "" && throttleLoadSource(h) {
				r.high("Throttle or pause %s's requests to %s (fewer parallel workers, a rate limit, or another prefix or bucket) so that %s gets its share of %s's request rate back", h.Subject, res, c, cloud)
			} else if c != "" {
				r.high("Throttle or pause %s's requests to %s (or move them to another prefix or bucket) so that %s gets its share of %s's request rate back", c, res, orWord(h.fact("caller"), h.Subject), cloud)
			} else {
				r.high("Lower %s's request rate to %s (fewer parallel workers, batching), or spread its keys over more prefixes", orWord(h.fact("caller"), h.Subject), res)
			}
			r.med("Retry %s's throttled calls with exponential backoff and jitter and a larger retry budget (SDK adaptive retry mode)", orWord(h.fact("caller"), h.Subject))
			r.low("Alert on %s's throttle replies (5xxErrors/SlowDown, ThrottledRequests) per resource", cloud)
			return
		}
		connRefused.recommend(h, sc, r)
	},
}

// cloudThrottleWords are the throttle replies of cloud APIs in their own
// words, which say neither 429 nor "throttled": S3's 503 SlowDown ("Please
// reduce your request rate."), DynamoDB's and Kinesis's exceeded
// throughput, EC2's request limit, Cosmos DB's "Request rate is large",
// Azure Storage's ServerBusy, Google APIs' rateLimitExceeded.
const cloudThrottleWords = `(?-i:\bSlowDown\b)|reduce your request rate|ProvisionedThroughputExceeded|RequestLimitExceeded|TooManyRequestsException|RequestThrottled|Request rate is large|(?-i:\bServerBusy\b)|rateLimitExceeded`

// cloudAPIs names the cloud service a throttled call went to, from the
// error code or the operation the SDK names.
var cloudAPIs = []struct {
	re   *regexp.Regexp
	name string
}{
	{regexp.MustCompile(`(?i)\bs3://|\.s3[.-][\w.-]*amazonaws\.com|\bSlowDown\b|\b(PutObject|GetObject|UploadPart|CompleteMultipartUpload|CreateMultipartUpload|HeadObject|ListObjects(V2)?|DeleteObjects?|CopyObject)\b`), "S3"},
	{regexp.MustCompile(`(?i)ProvisionedThroughputExceeded|\b(PutItem|GetItem|UpdateItem|BatchWriteItem|BatchGetItem|TransactWriteItems)\b|dynamodb`), "DynamoDB"},
	{regexp.MustCompile(`(?i)\b(PutRecords?|GetRecords|GetShardIterator)\b|kinesis`), "Kinesis"},
	{regexp.MustCompile(`(?i)Request rate is large|cosmos`), "Cosmos DB"},
	{regexp.MustCompile(`(?i)ServerBusy|\.blob\.core\.windows\.net`), "Azure Storage"},
	{regexp.MustCompile(`(?i)storage\.googleapis\.com|\bgs://`), "Cloud Storage"},
}

// cloudAPIOf names the cloud service a throttled call went to ("" when the
// line does not say).
func cloudAPIOf(line string) string {
	for _, c := range cloudAPIs {
		if matchLine(c.re, line) {
			return c.name
		}
	}
	return ""
}

var (
	bucketRE        = regexp.MustCompile(`\b(?:s3|gs)://([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])|(?i)\bbucket[=: "']+([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])`)
	throttleReplyRE = regexp.MustCompile(`(?i)\b(503 SlowDown|SlowDown|ProvisionedThroughputExceeded\w*|RequestLimitExceeded|TooManyRequestsException|ThrottlingException|RequestThrottled|ServerBusy|rateLimitExceeded|429 Too Many Requests|Request rate is large)\b`)
)

// throttleReply is the provider's throttle reply a line quotes.
func throttleReply(line string) string {
	if m := findString(throttleReplyRE, line); m != "" {
		return m
	}
	return "throttled"
}

// bucketOf is the bucket a line names (s3://bucket/..., bucket=...).
func bucketOf(line string) string {
	if m := findSubmatch(bucketRE, line); m != nil {
		return orWord(m[1], m[2])
	}
	return ""
}

func onWord(resource string) string {
	if resource == "" {
		return ""
	}
	return " on " + resource
}

// setBucket is the bucket a log source's lines name most (its uploads
// "s3://bucket/key"), when its throttled lines do not name it.
func setBucket(set *LogSet) string {
	n := map[string]int{}
	best := ""
	for _, t := range set.Templates {
		if b := bucketOf(t.Example); b != "" {
			n[b] += t.Count
			if best == "" || n[b] > n[best] || n[b] == n[best] && b < best {
				best = b
			}
		}
	}
	return best
}

// shareThrottledResource links the services a cloud API throttles on the
// same resource at the same time: the provider's request rate is shared
// (per bucket prefix, per table partition), and a new or busier caller
// throttles the others. Each names the others as contenders.
func shareThrottledResource(fs []Finding) {
	for i := range fs {
		a := &fs[i]
		if a.Kind != KindThrottling || a.fact("cloud") == "" {
			continue
		}
		// The throttled bucket or table is a system in its own right.
		if r := a.fact("resource"); r != "" && !strings.Contains(a.fact("affected"), r) {
			a.setFact("affected", strings.Trim(a.fact("affected")+","+r, ","))
		}
		for j := range fs {
			b := &fs[j]
			if i == j || b.Kind != KindThrottling || b.fact("cloud") != a.fact("cloud") || b.fact("caller") == a.fact("caller") {
				continue
			}
			if ra, rb := a.fact("resource"), b.fact("resource"); ra != "" && rb != "" && ra != rb {
				continue
			}
			if !containsStr(a.Related, b.fact("caller")) {
				a.Related = append(a.Related, b.fact("caller"))
			}
			if a.fact("contender") == "" {
				a.setFact("contender", b.fact("caller"))
				a.setFact("contender_line", b.fact("line"))
			}
		}
	}
}

// throttleLoadSource reports whether the subject of a cloud throttling
// hypothesis is the load that fills the shared request rate rather than
// one of its victims: it was triggered by a change of its own (a job
// started or scaled out, a backfill launched) while another caller of the
// same resource is throttled beside it.
func throttleLoadSource(h *Hypothesis) bool {
	c := h.Trigger
	return c != nil && h.fact("contender") != "" && strings.EqualFold(c.Subject, h.Subject)
}
