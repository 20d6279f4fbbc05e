package analyst

import (
	"encoding/json"
	"fmt"
	"net"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
)

// LogSet is the mined templates of one log source (a pod, a host log file,
// a CloudWatch log group) attributed to a subject.
type LogSet struct {
	Source    string // pod name, file name or log group
	Subject   string // workload or service the source belongs to
	Namespace string
	Origin    string // SrcLogs or SrcCloudWatch
	Templates []analysis.LogTemplate
	// HasBaseline is false when the source had no lines before the incident
	// window, so New and Surge carry no meaning.
	HasBaseline bool
}

// logRule classifies a log line into a finding kind.
type logRule struct {
	kind   Kind
	re     *regexp.Regexp
	weight float64
	label  string
}

var logRules = []logRule{
	{KindCertificate, regexp.MustCompile(`(?i)certificate has expired|certificate expired|cert(ificate)? (is )?expir|x509: certificate has expired|not ?after|CERT_HAS_EXPIRED|expired certificate|certificate is not yet valid`), 0.95, "certificate expired"},
	{KindTLS, regexp.MustCompile(`(?i)x509:|certificate verify failed|CERTIFICATE_VERIFY_FAILED|tls: handshake|TLS handshake|SSL routines|unknown authority|SSLHandshakeException|certificate signed by unknown`), 0.8, "TLS handshake failure"},
	{KindDiskFull, regexp.MustCompile(`(?i)no space left on device|ENOSPC|disk (is )?full|disk quota exceeded|could not extend file|filesystem full`), 0.9, "disk full"},
	{KindOOMKilled, regexp.MustCompile(`(?i)OutOfMemoryError|out of memory|Cannot allocate memory|heap out of memory|MemoryError|memory limit exceeded|oom-kill|OOM ?Killed|OOMKilled`), 0.85, "out of memory"},
	{KindDatabase, regexp.MustCompile(`(?i)too many connections|remaining connection slots|deadlock (detected|found)|pool (is )?exhausted|connection pool|could not obtain (a )?connection|timeout waiting for (a )?connection|max_connections|QueuePool limit|HikariPool|lock wait timeout|sorry, too many clients|Too many open connections|ER_CON_COUNT_ERROR`), 0.85, "database connection/lock errors"},
	{KindDNS, regexp.MustCompile(`(?i)no such host|NXDOMAIN|Temporary failure in name resolution|could not resolve|Name or service not known|server misbehaving|ENOTFOUND|getaddrinfo|UnknownHostException|name resolution`), 0.85, "DNS resolution failure"},
	{KindConnRefused, regexp.MustCompile(`(?i)connection refused|ECONNREFUSED|connect: connection refused|Connection refused|actively refused|connection reset by peer|ECONNRESET|upstream connect error|no healthy upstream|503 Service Unavailable|Service Unavailable`), 0.8, "connection refused"},
	{KindTimeout, regexp.MustCompile(`(?i)i/o timeout|timed out|deadline exceeded|ETIMEDOUT|timeout (after|exceeded|while)|504 Gateway Time-?out|Read timed out|request timeout`), 0.75, "timeouts"},
	{KindThrottling, regexp.MustCompile(`(?i)\b429\b|Too Many Requests|rate limit(ed)?|ThrottlingException|Rate exceeded|throttl`), 0.7, "throttling"},
	{KindAuth, regexp.MustCompile(`(?i)\b401\b|Unauthorized|\b403\b|Forbidden|permission denied|AccessDenied|access denied|invalid credentials|authentication failed|password authentication failed|invalid token|token (has )?expired|InvalidClientTokenId|ExpiredToken`), 0.7, "authentication failure"},
	{KindAppCrash, regexp.MustCompile(`(?i)^panic:|\bpanic:|goroutine \d+ \[running\]|Traceback \(most recent call last\)|Exception in thread|NullPointerException|segmentation fault|SIGSEGV|Unhandled (exception|rejection)|fatal error:|\bFATAL\b|uncaught exception|nil pointer dereference`), 0.75, "application crash"},
}

var certWordRE = regexp.MustCompile(`(?i)cert|x509|tls|ssl`)

var errorWordRE = regexp.MustCompile(`(?i)\b(error|err|exception|fail(ed|ure)?|fatal|critical|crit|panic|severe|level=error|"level":"error")\b`)

// ClassifyLine returns the kind a log line points to ("" for none), and
// whether the line reads as an error.
func ClassifyLine(line string) (Kind, bool) {
	for _, r := range logRules {
		if r.re.MatchString(line) {
			// A certificate rule needs x509/TLS/cert words: "expired" alone
			// (an expired session) is not a certificate.
			if r.kind == KindCertificate && !regexp.MustCompile(`(?i)cert|x509|tls|ssl`).MatchString(line) {
				continue
			}
			if r.kind == KindAuth && !errorWordRE.MatchString(line) && !strings.Contains(strings.ToLower(line), "denied") {
				continue
			}
			return r.kind, true
		}
	}
	return "", errorWordRE.MatchString(line)
}

var (
	dialRE    = regexp.MustCompile(`(?i)dial (?:tcp|udp)[46]? ([\w.\-\[\]:]+?):(\d+)`)
	lookupRE  = regexp.MustCompile(`(?i)lookup ([\w.-]+)`)
	urlRE     = regexp.MustCompile(`(?i)\b(?:https?|grpcs?|postgres(?:ql)?|mysql|redis|amqp|mongodb)://(?:[^@/\s]+@)?([\w.-]+)(?::(\d+))?`)
	towardRE  = regexp.MustCompile(`(?i)\b(?:to|connect(?:ing)? to|upstream|host|server|calling|call to|reach|from|for|backend|endpoint|service)[ =:]+["'\[]?([a-zA-Z][\w-]*(?:\.[\w-]+)*)(?::(\d{2,5}))?`)
	hostPort  = regexp.MustCompile(`\b([a-zA-Z][\w-]*(?:\.[\w-]+)*):(\d{2,5})\b`)
	ipPortRE  = regexp.MustCompile(`\b(\d{1,3}(?:\.\d{1,3}){3}):(\d{2,5})\b`)
	stopHosts = map[string]bool{"localhost": false, "the": true, "a": true, "an": true, "server": true, "host": true, "upstream": true,
		"database": true, "db": false, "service": true, "backend": true, "request": true, "connection": true, "remote": true, "peer": true,
		"http": true, "https": true, "tcp": true, "udp": true, "error": true, "timeout": true, "context": true, "read": true, "write": true,
		"get": true, "post": true, "put": true, "delete": true, "user": true, "client": true, "it": true, "this": true, "all": true,
		"time": true, "port": true, "address": true}
)

// DependencyTarget extracts the dependency a failing call names, as
// "host:port" or "host" (cluster DNS names are shortened to the service
// name: "payments.shop.svc.cluster.local:8080" → "payments:8080").
func DependencyTarget(line string) string {
	try := func(host, port string) string {
		host = strings.Trim(host, "[]")
		if host == "" || stopHosts[strings.ToLower(host)] {
			return ""
		}
		host = ShortHost(host)
		if port != "" {
			return host + ":" + port
		}
		return host
	}
	// Names beat addresses: a URL's or a lookup's host name first, then
	// the address a dial names.
	if m := urlRE.FindStringSubmatch(line); m != nil && net.ParseIP(m[1]) == nil {
		if t := try(m[1], m[2]); t != "" {
			return t
		}
	}
	if m := lookupRE.FindStringSubmatch(line); m != nil {
		if t := try(m[1], ""); t != "" {
			return t
		}
	}
	if m := dialRE.FindStringSubmatch(line); m != nil {
		if t := try(m[1], m[2]); t != "" {
			return t
		}
	}
	if m := urlRE.FindStringSubmatch(line); m != nil {
		if t := try(m[1], m[2]); t != "" {
			return t
		}
	}
	if m := ipPortRE.FindStringSubmatch(line); m != nil {
		return m[1] + ":" + m[2]
	}
	for _, m := range hostPort.FindAllStringSubmatch(line, -1) {
		// Skip clock times and level prefixes.
		if t := try(m[1], m[2]); t != "" && !strings.EqualFold(m[1], "T") {
			return t
		}
	}
	for _, m := range towardRE.FindAllStringSubmatch(line, -1) {
		if strings.Contains(m[1], ".") || m[2] != "" || strings.Contains(m[1], "-") {
			if t := try(m[1], m[2]); t != "" {
				return t
			}
		}
	}
	return ""
}

// ShortHost shortens in-cluster DNS names to the service name; other names
// and addresses are kept.
func ShortHost(host string) string {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if net.ParseIP(h) != nil {
		return h
	}
	for _, suf := range []string{".svc.cluster.local", ".svc"} {
		if i := strings.Index(h, suf); i > 0 {
			h = h[:i]
			if j := strings.IndexByte(h, '.'); j > 0 {
				h = h[:j]
			}
			return h
		}
	}
	// service.namespace (two labels, no TLD-looking suffix)
	if parts := strings.Split(h, "."); len(parts) == 2 && !isTLD(parts[1]) {
		return parts[0]
	}
	return h
}

func isTLD(s string) bool {
	switch s {
	case "com", "net", "org", "io", "dev", "cloud", "co", "uk", "de", "fr", "internal", "local", "aws", "app", "ai":
		return true
	}
	return false
}

// DependencyName is the subject of a dependency target: the host without
// its port.
func DependencyName(target string) string {
	if h, _, err := net.SplitHostPort(target); err == nil {
		return h
	}
	return target
}

var notAfterRE = regexp.MustCompile(`(?i)(?:current time (\S+) is after (\S+))|(?:not ?after[=: ]+["']?([0-9TZ:\-+. ]{10,30}))|(?:expired (?:on|at) ["']?([0-9TZ:\-+.]{10,30}))`)

// certExpiry returns the expiry time a certificate error names, if any.
func certExpiry(line string) string {
	m := notAfterRE.FindStringSubmatch(line)
	if m == nil {
		return ""
	}
	for _, g := range []string{m[2], m[3], m[4]} {
		g = strings.TrimSpace(strings.Trim(g, `"',.`))
		if g != "" {
			for _, layout := range []string{time.RFC3339, "2006-01-02 15:04:05", "2006-01-02"} {
				if t, err := time.Parse(layout, g); err == nil {
					return t.UTC().Format(time.RFC3339)
				}
			}
			return g
		}
	}
	return ""
}

// DetectLogs turns mined templates into findings: templates naming a known
// failure (certificates, connection refused, timeouts, DNS, database,
// out-of-memory, disk full, panics), and other error templates new or
// surging in the incident window. Only templates with lines in the incident
// window count.
func DetectLogs(sets []LogSet, w Window) []Finding {
	type key struct {
		kind    Kind
		subject string
		target  string
	}
	merged := map[key]*Finding{}
	var order []key
	for _, set := range sets {
		for _, t := range set.Templates {
			if t.Incident == 0 {
				continue
			}
			line := t.Example
			kind, isErr := ClassifyLine(line)
			if kind == "" && t.Last != "" {
				kind, isErr = ClassifyLine(t.Last)
				if kind != "" {
					line = t.Last
				}
			}
			surging := set.HasBaseline && t.Surging(3, 3)
			steady := set.HasBaseline && t.Baseline > 0 && !surging
			if kind == "" {
				if !isErr || steady {
					continue
				}
				kind = KindLogErrors
			}
			w0 := 0.55
			switch {
			case surging && t.New:
				w0 = 0.95
			case surging:
				w0 = 0.85
			case !set.HasBaseline:
				w0 = 0.75
			case steady:
				w0 = 0.35 // the same errors happened before the incident
			}
			if t.Incident >= 10 {
				w0 = min(1, w0+0.05)
			}
			subject, target := set.Subject, ""
			var related []string
			if infoOf(kind).class == classDependency || kind == KindCertificate || kind == KindTLS || kind == KindDatabase {
				target = DependencyTarget(line)
				if dep := DependencyName(target); dep != "" && dep != set.Subject {
					subject = dep
					related = []string{set.Subject}
				}
			}
			k := key{kind, subject, target}
			f := merged[k]
			onset := t.FirstIncident
			if onset.IsZero() {
				onset = t.FirstSeen
			}
			if f == nil {
				f = &Finding{Kind: kind, Subject: subject, Namespace: set.Namespace, Source: set.Origin, Time: onset,
					Severity: SevWarning, Weight: w0, Related: related}
				f.Object = set.Origin + " " + set.Source
				merged[k] = f
				order = append(order, k)
			} else {
				f.Time = earliest(f.Time, onset)
				f.Weight = max(f.Weight, w0)
				for _, r := range related {
					if !containsStr(f.Related, r) {
						f.Related = append(f.Related, r)
					}
				}
			}
			if kind != KindLogErrors || len(f.Evidence) < 2 {
				f.Evidence = append(f.Evidence, templateEvidence(set, t, line))
			}
			f.setFact("line", line)
			f.setFact("template", t.Template)
			f.setFact("source", set.Source)
			f.setFact("caller", set.Subject)
			f.setFact("dependency", DependencyName(target))
			f.setFact("target", target)
			if kind == KindCertificate {
				f.setFact("not_after", certExpiry(line))
			}
			f.addCount(t.Incident)
		}
	}
	out := make([]Finding, 0, len(order))
	for _, k := range order {
		f := merged[k]
		if len(f.Evidence) > 3 {
			f.Evidence = f.Evidence[:3]
		}
		label := infoOf(f.Kind).label
		who := f.fact("caller")
		if f.Kind == KindLogErrors {
			f.Summary = fmt.Sprintf("%s logs: %s error lines new or surging since %s", who, f.fact("lines"), hm(f.Time))
		} else if dep := f.fact("dependency"); dep != "" && dep != who {
			f.Summary = fmt.Sprintf("%s logs %s to %s (%s lines from %s)", who, label, f.fact("target"), f.fact("lines"), hm(f.Time))
		} else {
			f.Summary = fmt.Sprintf("%s logs %s (%s lines from %s)", who, label, f.fact("lines"), hm(f.Time))
		}
		if f.Weight >= 0.8 {
			f.Severity = SevCritical
		}
		out = append(out, *f)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out
}

func (f *Finding) addCount(n int) {
	var cur int
	fmt.Sscan(f.fact("lines"), &cur)
	if f.Facts == nil {
		f.Facts = map[string]string{}
	}
	f.Facts["lines"] = fmt.Sprint(cur + n)
}

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func templateEvidence(set LogSet, t analysis.LogTemplate, line string) string {
	var when string
	switch {
	case !t.FirstIncident.IsZero():
		when = fmt.Sprintf("from %s to %s", ts(t.FirstIncident), ts(t.LastSeen))
	case !t.FirstSeen.IsZero():
		when = "since " + ts(t.FirstSeen)
	}
	trend := ""
	switch {
	case set.HasBaseline && t.New:
		trend = ", new in the incident window (0 in the baseline)"
	case set.HasBaseline && t.Surge >= 3:
		trend = fmt.Sprintf(", %.0f× the baseline rate (%d lines before)", t.Surge, t.Baseline)
	case set.HasBaseline && t.Baseline > 0:
		trend = fmt.Sprintf(", also %d lines in the baseline", t.Baseline)
	}
	return fmt.Sprintf("%s %s logged %s %s%s: %s", set.Origin, set.Source, plural(t.Incident, "line", "lines"), when, trend, quote(ReadableLine(line), 240))
}

// ReadableLine renders a JSON log line as its message fields ("level msg
// error=..."), other lines unchanged, for evidence strings.
func ReadableLine(line string) string {
	l := strings.TrimSpace(line)
	if !strings.HasPrefix(l, "{") {
		return line
	}
	var m map[string]any
	if json.Unmarshal([]byte(l), &m) != nil {
		return line
	}
	var parts []string
	for _, k := range []string{"ts", "time", "timestamp", "@timestamp", "level", "severity", "msg", "message", "error", "err", "exception"} {
		if v, ok := m[k]; ok {
			s := fmt.Sprint(v)
			if k == "error" || k == "err" || k == "exception" {
				s = k + "=" + s
			}
			parts = append(parts, s)
		}
	}
	if len(parts) == 0 {
		return line
	}
	return strings.Join(parts, " ")
}
