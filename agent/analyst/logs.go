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
	"github.com/rootcause/rootcause/agent/evidence"
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
	// Host is true for a host's own log (a file or syslog of a machine),
	// whose subject is the host, not a caller.
	Host bool
	// Completed is true when every pod of the source has completed
	// successfully (a finished Job): its errors were got past.
	Completed bool
	// Lines are raw lines read for a question that templates cannot
	// answer (a grouped log search, durations in request lines): those
	// of the pod logs read that match lineSearch, or what a search of a
	// host log returned. Nil for other questions.
	Lines []evidence.LogLine
	// classes memoises the classification of each template, in Templates
	// order: every template is classified once per investigation.
	classes []lineClass
}

// lineClass is what ClassifyLine said about a template: the kind, whether
// it reads as an error, and the line that said so (its example or its last
// line).
type lineClass struct {
	kind  Kind
	isErr bool
	line  string
}

// classified returns the classification of template i, computing every
// template's once.
func (s *LogSet) classified(i int) lineClass {
	if s.classes == nil {
		s.classes = make([]lineClass, len(s.Templates))
		for j, t := range s.Templates {
			c := lineClass{line: t.Example}
			c.kind, c.isErr = ClassifyLine(t.Example)
			if c.kind == "" && t.Last != "" && t.Last != t.Example {
				if k, e := ClassifyLine(t.Last); k != "" {
					c = lineClass{kind: k, isErr: e, line: t.Last}
				}
			}
			s.classes[j] = c
		}
	}
	return s.classes[i]
}

// logRule classifies a log line into a finding kind.
type logRule struct {
	kind   Kind
	re     *regexp.Regexp
	weight float64
	label  string
}

var logRules = []logRule{
	// A peer's alert that the client's own certificate expired: before
	// the server's certificate expired.
	lineRule(clientCertExpired),
	lineRule(certificateExpired),
	// A setting's value refused (before TLS: "failed to configure TLS
	// (sslmode is invalid)" is the setting, not a handshake).
	lineRule(settingInvalid),
	// Plaintext against TLS, or no TLS version in common: before the
	// handshake's other failures ("first record does not look like a TLS
	// handshake" is no certificate's fault).
	lineRule(tlsMismatch),
	// A certificate that does not name the host dialed: before the
	// generic handshake failure.
	lineRule(certNameMismatch),
	lineRule(tlsHandshake),
	// A host out of source ports for new outgoing connections.
	lineRule(ephemeralPorts),
	// A process at its file-descriptor limit: sockets and files fail.
	lineRule(fdExhaustion),
	// A clock off its reference: tokens rejected as not yet valid, the
	// time daemon unable to synchronise.
	lineRule(clockSkew),
	// Every worker of an HTTP server busy: requests queue.
	lineRule(workerPool),
	// A runtime's thread pool starved by blocked threads.
	lineRule(threadPoolStarvation),
	// A runtime's event loop blocked by synchronous work, with for how
	// long (before the CPU's lag lines).
	lineRule(eventLoopBlocked),
	// Slow database statements: seq scans, statement timeouts.
	lineRule(slowQuery),
	// A required environment variable not set.
	lineRule(missingEnv),
	lineRule(diskFull),
	// A message or request refused for its size.
	lineRule(payloadTooLarge),
	// A thread or process that cannot be created: PIDs, not memory
	// ("OutOfMemoryError: unable to create native thread").
	lineRule(pidExhaustion),
	// A JVM out of direct (off-heap) memory: its own cap, not the
	// container's (before the generic out of memory).
	lineRule(directMemory),
	// A JVM out of Metaspace: its own cap, not the container's (before
	// the generic out of memory).
	lineRule(metaspace),
	// A runtime out of its own heap (Java heap space, V8's heap limit):
	// before the generic out of memory, which is the kernel's kill.
	lineRule(heapExhausted),
	// Code calling a name its installed library lacks (a dependency
	// resolved to another version): before the generic crash.
	lineRule(depConflict),
	// The kernel out of TCP socket memory: not the OOM killer.
	lineRule(tcpMemory),
	{KindOOMKilled, regexp.MustCompile(`(?i)(?:^|[^nN])OutOfMemoryError|out of memory|Cannot allocate memory|heap out of memory|\bMemoryError|memory limit exceeded|oom-kill|OOM ?Killed|OOMKilled`), 0.85, "out of memory"},
	{KindDatabase, regexp.MustCompile(`(?i)too many connections|remaining connection slots are reserved|deadlock (detected|found)|pool (is )?exhausted|exhausted (the )?connection pool|connection is not available, request timed out|could not obtain (a )?connection|timeout waiting for (a )?(idle )?connection|unable to acquire (a )?(jdbc )?connection|max_connections|QueuePool limit|lock wait timeout|canceling statement due to lock timeout|lock timeout|could not obtain lock|LockNotAvailable|waiting for (an )?AccessExclusiveLock|sorry, too many clients|too many clients already|Too many open connections|ER_CON_COUNT_ERROR|query_wait_timeout|client_wait_timeout|no more connections allowed|max_client_conn|pool_size limit reached`), 0.85, "database connection/lock errors"},
	// A JVM whose heap is full: long GC pauses, circuit breakers.
	lineRule(gcPressure),
	// A JVM or runtime that cannot get CPU time: a symptom of CPU
	// starvation or throttling, not of the database it mentions.
	lineRule(cpuThrottling),
	lineRule(dnsResolution),
	lineRule(connRefused),
	lineRule(connReset),
	lineRule(timeoutM),
	lineRule(throttlingM),
	// A token signed with a key the validator's cached key set lacks:
	// before the generic 401.
	lineRule(signingKeyUnknown),
	// A token whose signature does not verify against the validator's
	// key (a pinned key the issuer rotated away from): before the
	// generic 401.
	lineRule(tokenSignatureInvalid),
	// A mesh proxy refusing the configuration pushed to it.
	lineRule(xdsRejected),
	lineRule(headerTooBig),
	// A provider refusing the caller's source address (not on its IP
	// allowlist): before the generic 403.
	lineRule(sourceIPNotAllowed),
	// A cloud action the caller's IAM policy does not grant: before the
	// generic 403.
	lineRule(cloudDenied),
	// A server refused the bind of its listening port ("bind() to
	// 0.0.0.0:80 failed (13: Permission denied)"): before the generic
	// "permission denied".
	lineRule(privilegedPort),
	lineRule(authFailure),
	// A consumer whose poll loop is too slow: the group coordinator
	// evicts it and the group rebalances.
	lineRule(consumerStall),
	// Data fetched or consumed that no longer parses (before a
	// configuration file that does not).
	lineRule(decodeFailure),
	// A request handler's panic or exception that the server survives
	// (before the generic crash).
	lineRule(handlerPanic),
	// A configuration file the application cannot parse.
	lineRule(configInvalid),
	// A host's service manager reporting a dead or given-up service.
	{KindAppCrash, regexp.MustCompile(`(?i)Failed with result '|Start request repeated too quickly|Failed to start |Main process exited, code=(killed|dumped)`), 0.8, "service failed"},
	{KindAppCrash, regexp.MustCompile(`(?i)^panic:|\bpanic:|goroutine \d+ \[running\]|Traceback \(most recent call last\)|Exception in thread|NullPointerException|segmentation fault|SIGSEGV|Unhandled (exception|rejection)|fatal error:|\bFATAL\b|uncaught exception|nil pointer dereference`), 0.75, "application crash"},
}

// lookupMissRE matches a lookup that found nothing ("cart not found",
// "404 Not Found").
var lookupMissRE = regexp.MustCompile(`(?i)\b(not found|404)\b`)

// clientRejectedRE matches a request line whose answer is a client error
// (4xx other than 408 and 429, which say the server was slow or full), in
// the structured forms services log it: "status":400, status=403,
// status_code: 422, "HTTP/1.1 400", a bare "400 Bad Request".
var clientRejectedRE = regexp.MustCompile(`(?i)(?:\b(?:status|status_?code|http_?status|response_?code|code)"?\s*[:=]\s*"?|\bHTTP/\d(?:\.\d)?"?\s+)4(?:0[0-79]|1\d|2[0-8]|3\d|5\d)\b|\b4(?:00 Bad Request|01 Unauthorized|03 Forbidden|09 Conflict|13 Payload Too Large|15 Unsupported Media Type|22 Unprocessable)`)

var certWordRE = regexp.MustCompile(`(?i)cert|x509|tls|ssl`)

var errorWordRE = regexp.MustCompile(`(?i)\b(error|err|exception|fail(ed|ure)?|fatal|critical|crit|panic|severe|level=error|"level":"error")\b`)

// ruleMatchers holds each log rule's expression with its keyword
// prefilter, in logRules order.
var ruleMatchers = func() []matcher {
	ms := make([]matcher, len(logRules))
	for i, r := range logRules {
		ms[i] = newMatcher(r.re)
	}
	return ms
}()

var (
	errorWordM = newMatcher(errorWordRE)
	certWordM  = newMatcher(certWordRE)
)

// ClassifyLine returns the kind a log line points to ("" for none), and
// whether the line reads as an error.
func ClassifyLine(line string) (Kind, bool) {
	lower := lowerASCII(line)
	for i, r := range logRules {
		if !ruleMatchers[i].match(line, lower) {
			continue
		}
		// A certificate rule needs x509/TLS/cert words: "expired" alone
		// (an expired session) is not a certificate.
		if r.kind == KindCertificate && !certWordM.match(line, lower) {
			continue
		}
		if r.kind == KindAuth && !errorWordM.match(line, lower) && !strings.Contains(strings.ToLower(line), "denied") {
			continue
		}
		// A server's refusal its client raises under a memory error's
		// name (redis-py's OutOfMemoryError for Redis's "OOM command not
		// allowed when used memory > 'maxmemory'") is the server at its
		// limit, not the process out of memory (resourcealarm.go).
		if r.kind == KindOOMKilled && strings.Contains(lower, "command not allowed when used memory") {
			continue
		}
		return r.kind, true
	}
	return "", errorWordM.match(line, lower)
}

var (
	dialRE    = regexp.MustCompile(`(?i)dial (?:tcp|udp)[46]? ([\w.\-\[\]:]+?):(\d+)`)
	lookupRE  = regexp.MustCompile(`(?i)lookup (?:for host "?)?([\w.-]+)`)
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

// unresolvedHostRE is the host name a resolver failure names, as the
// runtimes print it: Node's "getaddrinfo ENOTFOUND redis" (EAI_AGAIN too),
// Java's "UnknownHostException: redis", curl's "Could not resolve host:
// redis", libpq's "could not translate host name "db" to address",
// Ruby's and Python's "getaddrinfo: Name or service not known" carry none.
var unresolvedHostRE = regexp.MustCompile(`(?i)(?:getaddrinfo (?:ENOTFOUND|EAI_AGAIN)|UnknownHostException:|Could not resolve host:|could not translate host name|unable to resolve host)[ :"']+([A-Za-z0-9][\w.-]*)`)

// connArrowRE is the remote end of a Go network error on a socket
// ("read tcp 10.0.3.17:48211->10.40.0.10:53").
var connArrowRE = regexp.MustCompile(`(?i)(?:read|write) (?:tcp|udp)[46]? [\w.\-\[\]:%]+:\d+->([\w.\-\[\]:%]+?):(\d+)`)

// DependencyTarget extracts the dependency a failing call names, as
// "host:port" or "host" (cluster DNS names are shortened to the service
// name: "payments.shop.svc.cluster.local:8080" → "payments:8080").
func DependencyTarget(line string) string {
	line = withoutDocLinks(line)
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
	// A client failing over names the server that failed and the one it
	// moved to: the failed one is the dependency (failoverwait.go).
	if matchLine(failoverRE, line) {
		if server, host := failedServer(line); host != "" {
			_, port, _ := strings.Cut(strings.TrimPrefix(server[strings.Index(server, host):], host), ":")
			if _, p, ok := strings.Cut(server, " port "); ok {
				port = p
			}
			if t := try(host, port); t != "" {
				return t
			}
		}
	}
	// A resolver's refusal names the host it could not resolve: that name
	// is the dependency, whatever else the line holds (a stack frame
	// "node:dns:120:26" is no host).
	if m := findSubmatch(unresolvedHostRE, line); m != nil {
		if t := try(strings.TrimRight(m[1], "."), ""); t != "" {
			return t
		}
	}
	// Names beat addresses: a URL's or a lookup's host name first, then
	// the address a dial names.
	if m := findSubmatch(urlRE, line); m != nil && net.ParseIP(m[1]) == nil {
		if t := try(m[1], m[2]); t != "" {
			return t
		}
	}
	if m := findSubmatch(lookupRE, line); m != nil {
		if t := try(m[1], ""); t != "" {
			return t
		}
	}
	if m := findSubmatch(dialRE, line); m != nil {
		if t := try(m[1], m[2]); t != "" {
			return t
		}
	}
	// Go's "read udp LOCAL->REMOTE: i/o timeout": the remote end is the
	// dependency, the local address only the caller's socket.
	if m := findSubmatch(connArrowRE, line); m != nil {
		if t := try(m[1], m[2]); t != "" {
			return t
		}
	}
	if m := findSubmatch(urlRE, line); m != nil {
		if t := try(m[1], m[2]); t != "" {
			return t
		}
	}
	if m := findSubmatch(ipPortRE, line); m != nil {
		return m[1] + ":" + m[2]
	}
	// A stack frame's source position (JavaScript's "(node:dns:120:26)",
	// "at /app/server.js:41:13") is no host and port.
	for _, m := range findAllSubmatch(hostPort, stackPosRE.ReplaceAllString(line, " "), -1) {
		// Skip clock times, level prefixes and source references
		// (main.go:42, Foo.java:118).
		if isCodeRef(m[1]) {
			continue
		}
		if t := try(m[1], m[2]); t != "" && !strings.EqualFold(m[1], "T") {
			return t
		}
	}
	for _, m := range findAllSubmatch(towardRE, line, -1) {
		if (strings.Contains(m[1], ".") || m[2] != "" || strings.Contains(m[1], "-")) && !isCodeRef(m[1]) {
			if t := try(m[1], m[2]); t != "" {
				return t
			}
		}
	}
	// A wrapped error whose first link is the callee's name, as Go's
	// fmt.Errorf("%s: %w", callee, err) and many clients print it:
	// err="address-book: 429 Too Many Requests".
	if m := findSubmatch(errPrefixRE, line); m != nil {
		if t := try(m[1], ""); t != "" {
			return t
		}
	}
	return ""
}

// envoyInboundRE is an Envoy (Istio) access log line of the inbound
// listener: its upstream cluster "inbound|8080||" (or "inbound|8080|http|svc").
var envoyInboundRE = regexp.MustCompile(`"\s[\d-]+\s+[\d-]+\s.*\binbound\|\d+\|`)

// errPrefixRE is an error field whose value starts with a hyphenated
// service name and a colon ("err":"rate-card: 503 Service Unavailable",
// error="user-api: context deadline exceeded"). The hyphen keeps out the
// one-word prefixes of libraries and operations (sql:, dial tcp:, redis:).
var errPrefixRE = regexp.MustCompile(`(?i)["']?\b(?:err|error|cause)["']?\s*[:=]\s*["']([a-z][a-z0-9]*(?:-[a-z0-9]+)+)(?:\.[\w-]+)*:\s`)

// stackPosRE is a stack frame's file:line:column, in parentheses or after
// "at " (V8's and most runtimes' forms).
var stackPosRE = regexp.MustCompile(`\((?:node:|file://)?[^()\s]+:\d+:\d+\)|\bat (?:node:|file://)?[^()\s]+:\d+:\d+`)

var codeRefRE = regexp.MustCompile(`(?i)\.(go|java|kt|scala|py|rb|js|mjs|cjs|ts|tsx|jsx|cs|cpp|cc|c|h|hpp|rs|php|swift|ex|exs|erl|clj|groovy)$`)

// isCodeRef reports whether a host:port candidate is a source file and
// line ("handler.go:212", "OrderService.java:88").
func isCodeRef(host string) bool { return matchLine(codeRefRE, host) }

// wellKnownPorts names the dependency behind a well-known port.
var wellKnownPorts = map[string]string{
	"6379": "redis", "6380": "redis", "26379": "redis", "5432": "postgresql", "3306": "mysql", "9092": "kafka", "27017": "mongodb",
	"11211": "memcached", "5672": "rabbitmq", "9200": "elasticsearch", "2181": "zookeeper", "9042": "cassandra", "1433": "sqlserver",
	"1521": "oracle", "4222": "nats", "8500": "consul", "2379": "etcd", "25": "smtp", "465": "smtp", "587": "smtp",
}

var clientNames = []struct {
	re   *regexp.Regexp
	name string
}{
	{regexp.MustCompile(`(?i)\bioredis\b|\blettuce\b|\bjedis\b|\bredis\b|RedisConnection|go-redis`), "redis"},
	{regexp.MustCompile(`(?i)\bpq: |\bpgx\b|PSQLException|org\.postgresql|psycopg|\bpostgres(ql)?\b|\bpsql\b|SQLSTATE|\bpg_wal\b`), "postgresql"},
	// MySQL's error names are upper case and stand alone (ER_LOCK_DEADLOCK):
	// "cluster_block_exception" does not name MySQL.
	{regexp.MustCompile(`(?i)\bmysql\b|\bmariadb\b|(?-i:\bER_[A-Z_]+)|Error 1[0-9]{3}`), "mysql"},
	{regexp.MustCompile(`(?i)\bkafka\b|sarama|librdkafka`), "kafka"},
	{regexp.MustCompile(`(?i)\bmongo(db)?\b|MongoNetworkError`), "mongodb"},
	{regexp.MustCompile(`(?i)\bmemcache(d)?\b`), "memcached"},
	{regexp.MustCompile(`(?i)\brabbitmq\b|\bamqp\b`), "rabbitmq"},
	{regexp.MustCompile(`(?i)\belasticsearch\b|\bopensearch\b`), "elasticsearch"},
}

// WellKnownDependency names the kind of dependency a failing call talks
// to, from the port of its target (6379 → redis) or the client library the
// line names (ioredis, Lettuce, pq:); "" when neither says.
func WellKnownDependency(line, target string) string {
	if _, port, err := net.SplitHostPort(target); err == nil {
		if n := wellKnownPorts[port]; n != "" {
			return n
		}
	}
	for _, c := range clientNames {
		if matchLine(c.re, line) {
			return c.name
		}
	}
	return ""
}

// processNames maps a host process to the dependency it serves.
func processDependency(proc string) string {
	p := strings.ToLower(proc)
	switch {
	case strings.HasPrefix(p, "redis"):
		return "redis"
	case strings.HasPrefix(p, "postgres") || strings.HasPrefix(p, "postmaster"):
		return "postgresql"
	case strings.HasPrefix(p, "mysqld") || strings.HasPrefix(p, "mariadbd"):
		return "mysql"
	case strings.HasPrefix(p, "mongod"):
		return "mongodb"
	case strings.HasPrefix(p, "memcached"):
		return "memcached"
	case strings.HasPrefix(p, "rabbitmq") || p == "beam.smp":
		return "rabbitmq"
	}
	return ""
}

var (
	killedProcRE = regexp.MustCompile(`(?i)Killed process \d+ \(([^)]+)\)`)
	syslogProcRE = regexp.MustCompile(`^\S+\s+\S+\s+([a-zA-Z][\w.-]*?)(?:\[\d+\])?:|^\S+\s+\S+\s+systemd\[\d+\]:\s+([\w.-]+?)\.service:`)
	unitRE       = regexp.MustCompile(`([\w.-]+?)\.service:`)
	// dbClientRE marks a database server's error quoted by its client
	// (the Go pq driver, JDBC, psycopg, MySQL error codes).
	dbClientRE = regexp.MustCompile(`(?i)\bpq: |PSQLException|org\.postgresql|psycopg2?\.|SQLSTATE|\bERROR \d{4} \(|Error 1[0-9]{3}:|(?-i:\bER_[A-Z_]{4,})|MySQLSyntaxError|SQLException`)
	numLevelRE = regexp.MustCompile(`"level"\s*:\s*([1-6]0)\s*[,}]`)
	levelRE    = regexp.MustCompile(`(?i)(?:"(?:level|severity|lvl|log\.level)"\s*:\s*"|\b(?:level|lvl|severity)=["']?|\[|\s|^)(TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|ERR|FATAL|CRITICAL|CRIT|PANIC|SEVERE)\b`)
)

// LineLevel returns the log level a line declares ("info", "warn",
// "error", "debug", "fatal"), or "" when it declares none.
func LineLevel(line string) string {
	head := line
	if len(head) > 160 {
		head = head[:160]
	}
	// pino and bunyan write the level as a number: 10 trace, 20 debug,
	// 30 info, 40 warn, 50 error, 60 fatal.
	if m := findSubmatch(numLevelRE, head); m != nil {
		if name := pinoLevel(m[1]); name != "" {
			return LineLevel(name)
		}
	}
	m := findSubmatch(levelRE, head)
	if m == nil {
		return ""
	}
	switch strings.ToUpper(m[1]) {
	case "TRACE", "DEBUG":
		return "debug"
	case "INFO", "NOTICE":
		return "info"
	case "WARN", "WARNING":
		return "warn"
	case "FATAL", "CRITICAL", "CRIT", "PANIC", "SEVERE":
		return "fatal"
	}
	return "error"
}

// pinoLevel names a numeric level as pino and bunyan write it (10 trace,
// 20 debug, 30 info, 40 warn, 50 error, 60 fatal), or "".
func pinoLevel(n string) string {
	switch n {
	case "10":
		return "TRACE"
	case "20":
		return "DEBUG"
	case "30":
		return "INFO"
	case "40":
		return "WARN"
	case "50":
		return "ERROR"
	case "60":
		return "FATAL"
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
	m := findSubmatch(notAfterRE, line)
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
	evScore := map[string]int{}
	var order []key
	for si := range sets {
		set := &sets[si]
		// A database server's own log in a pod (a Postgres StatefulSet):
		// like a host's, its failures are what its callers see. (Read
		// only when the set shows a cause: hostRole reads every template.)
		server, serverKnown := "", false
		dbServer := func() string {
			if !serverKnown {
				serverKnown = true
				if r := hostRole(*set); !set.Host && set.Origin == SrcLogs && (r == "postgresql" || r == "mysql") {
					server = r
				}
			}
			return server
		}
		for ti, t := range set.Templates {
			if t.Incident == 0 {
				continue
			}
			c := set.classified(ti)
			line, kind, isErr := c.line, c.kind, c.isErr
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
			// The level a line declares: INFO lines are not errors, and a
			// handful of lines is weaker than a stream of them.
			switch LineLevel(line) {
			case "debug", "info":
				if kind == KindLogErrors {
					continue
				}
				if !levelless(line) {
					w0 *= 0.5
				}
			case "warn":
				// A warning that something asked for was not found (a
				// lookup answered 404) is the service working.
				if kind == KindLogErrors && matchLine(lookupMissRE, line) {
					continue
				}
				// A warning that the service refused a client's request
				// (its own answer a 4xx: a bad signature, a malformed
				// body) is the service doing its job; only a surge of
				// them at volume says something changed.
				if kind == KindLogErrors && matchLine(clientRejectedRE, line) && !(surging && t.Incident >= 10) {
					continue
				}
				w0 *= 0.9
			}
			if t.Incident < 5 && !(surging && t.New && t.Incident >= 3) {
				w0 *= 0.75
			}
			if set.Completed {
				w0 *= 0.4
			}
			subject, target := set.Subject, ""
			var related []string
			wellKnown := ""
			if infoOf(kind).class == classDependency || kind == KindCertificate || kind == KindTLS || kind == KindDatabase {
				target = DependencyTarget(line)
				// A mesh sidecar's access log of a request coming in
				// (Envoy's "inbound|PORT||" cluster) is the logging
				// service answering: its addresses are its own pod's
				// and the caller's, not a dependency's.
				if matchLine(envoyInboundRE, line) {
					target = ""
				}
				if dep := DependencyName(target); dep != "" && dep != set.Subject {
					subject = dep
					related = []string{set.Subject}
					if net.ParseIP(dep) != nil {
						wellKnown = WellKnownDependency(line, target)
					}
				}
			}
			// A caller carrying on without its dependency (fallback.go)
			// reports the dependency's failure, not one of its own.
			fallbackOf := ""
			if subject != set.Subject && fallbackLine(line) {
				fallbackOf, related = set.Subject, nil
			}
			// A database server's error quoted in a client's log (pq:,
			// SQLSTATE, MySQL error codes) describes the database.
			if !set.Host && subject == set.Subject && matchLine(dbClientRE, line) && kind != KindLogErrors && kind != KindAppCrash && kind != KindSlowQuery {
				if target == "" {
					target = DependencyTarget(line)
				}
				dep := DependencyName(target)
				if dep == "" || dep == set.Subject || net.ParseIP(dep) != nil {
					dep = orWord(WellKnownDependency(line, target), "database")
				}
				subject, related = dep, []string{set.Subject}
			}
			var process string
			cause := infoOf(kind).class == classCause && !set.Host && set.Origin == SrcLogs && dbServer() != ""
			if cause && !containsStr(related, server) {
				related = append(related, server)
			}
			if set.Host {
				// A host's log: the processes it names (a database, a
				// cache) are what its callers call.
				if m := findSubmatch(killedProcRE, line); m != nil {
					process = m[1]
				} else if m := findSubmatch(unitRE, line); m != nil {
					process = m[1]
				}
				if d := processDependency(process); d != "" {
					related = append(related, d)
				}
				if d := hostRole(*set); d != "" && !containsStr(related, d) {
					related = append(related, d)
				}
				if kind == KindOOMKilled && process != "" {
					w0 = max(w0, 0.9)
				}
			}
			// A caller's errors that report its callee's server error
			// are the callee's failure as the caller saw it.
			callee := ""
			if kind == KindLogErrors {
				if callee = calleeFailure(line); callee == set.Subject {
					callee = ""
				}
				if callee != "" && !containsStr(related, callee) {
					related = append(related, callee)
				}
			}
			k := key{kind, subject, target}
			f := merged[k]
			onset := t.FirstIncident
			if onset.IsZero() {
				onset = t.FirstSeen
			}
			// A template that ran at a low rate before and jumps later
			// began at its change point, not at its first line.
			if t.Onset.After(onset) {
				onset = t.Onset
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
			// The line that names the failure (a "Caused by:", an
			// exception with its message, "panic:") represents it, not
			// the header of a multi-line error ("threw exception").
			score := RootCauseScore(line)
			ev := templateEvidence(*set, t, line)
			switch {
			case kind != KindLogErrors || len(f.Evidence) < 2:
				f.Evidence = append(f.Evidence, ev)
				evScore[ev] = score
			case score > evScore[f.Evidence[len(f.Evidence)-1]]:
				f.Evidence[len(f.Evidence)-1] = ev
				evScore[ev] = score
			}
			if old, ok := f.Facts["line"]; ok && score > RootCauseScore(old) {
				f.Facts["line"] = line
				f.Facts["template"] = t.Template
			}
			f.setFact("line", line)
			f.setFact("template", t.Template)
			f.setFact("source", set.Source)
			if fallbackOf != "" {
				f.setFact("fallback_of", fallbackOf)
			} else {
				f.setFact("caller", set.Subject)
			}
			f.setFact("dependency", DependencyName(target))
			f.setFact("target", target)
			f.setFact("well_known", wellKnown)
			if callee != "" {
				f.setFact("callee", callee)
			} else if kind == KindLogErrors {
				f.setFact("own", "true")
			}
			f.setFact("process", process)
			if kind == KindOOMKilled && set.Host {
				oomHostFacts(f, *set, t, line)
			}
			if set.Completed {
				f.setFact("resolved", "true")
			}
			if set.Host || cause {
				f.setFact("host", set.Subject)
			}
			if kind == KindThrottling {
				f.setFact("external", externalHost(line))
				if c := cloudAPIOf(line); c != "" {
					f.setFact("cloud", c)
					f.setFact("resource", orWord(bucketOf(line), setBucket(set)))
				}
			}
			// A proxy out of source ports fails the requests of the
			// services it routes to.
			if kind == KindEphemeralPorts {
				if s := proxiedService(line); s != "" && s != f.Subject && !containsStr(f.Related, s) {
					f.Related = append(f.Related, s)
				}
			}
			if kind == KindAuth {
				if c := CredentialProblem(line); c != "" {
					f.setFact("credential", c)
					f.setFact("external", orWord(externalHost(line), providerTag(line)))
					f.setFact("status", authStatus(line))
					f.Weight = max(f.Weight, min(1, w0+0.1))
				}
			}
			if kind == KindCertificate {
				f.setFact("not_after", certExpiry(line))
			}
			f.addCount(t.Incident)
		}
	}
	out := make([]Finding, 0, len(order))
	for _, k := range order {
		f := merged[k]
		sort.SliceStable(f.Evidence, func(i, j int) bool { return evScore[f.Evidence[i]] > evScore[f.Evidence[j]] })
		if len(f.Evidence) > 3 {
			f.Evidence = f.Evidence[:3]
		}
		label := infoOf(f.Kind).label
		who := f.fact("caller")
		if c := f.fact("fallback_of"); c != "" && who == "" {
			f.Summary = fmt.Sprintf("%s logs %s to %s and carries on without it (%s lines from %s)", c, label, f.fact("target"), f.fact("lines"), hm(f.Time))
		} else if f.Kind == KindLogErrors {
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
	shareThrottledResource(out)
	return out
}

// hostRole names the dependency a host's log shows it runs (a PostgreSQL
// server logs "LOG:", "checkpoint", "pg_wal"; Redis "redis-server").
func hostRole(set LogSet) string {
	for _, t := range set.Templates {
		for _, l := range []string{t.Example, t.Template} {
			if m := findSubmatch(syslogProcRE, l); m != nil {
				if d := processDependency(m[1] + m[2]); d != "" {
					return d
				}
			}
			// A client quoting the server's refusal ("psycopg...:
			// connection failed: FATAL:  password authentication
			// failed") is not the server.
			if matchLine(pgServerRE, l) && !matchLine(pgClientQuoteRE, l) {
				return "postgresql"
			}
		}
	}
	return ""
}

// pgClientQuoteRE is a PostgreSQL client library's wording around the
// server's message it quotes.
var pgClientQuoteRE = regexp.MustCompile(`(?i)psycopg|OperationalError|PSQLException|\bpq: |asyncpg|Npgsql|sqlalchemy|connection (?:to server at .*)?failed:|could not connect to server|connect failed`)

var pgServerRE = regexp.MustCompile(`\b(LOG|ERROR|FATAL|PANIC|HINT|STATEMENT|DETAIL):\s\s|\bpg_wal/|checkpoint (starting|complete)|autovacuum`)

var externalURLRE = regexp.MustCompile(`(?i)\bhttps?://([a-z0-9][\w-]*(?:\.[\w-]+)+)`)

// externalHost is the host of a URL a line names when it looks external
// (a public domain, not a cluster service).
func externalHost(line string) string {
	for _, m := range findAllSubmatch(externalURLRE, withoutDocLinks(line), -1) {
		h := strings.ToLower(m[1])
		if net.ParseIP(h) != nil || strings.Contains(h, ".svc") || strings.HasSuffix(h, ".local") || strings.HasSuffix(h, ".internal") || strings.HasSuffix(h, ".cluster") {
			continue
		}
		return h
	}
	return ""
}

var (
	linkRE = regexp.MustCompile(`(?i)\bhttps?://[^\s"'<>\\)\]]+`)
	// docLinkRE is a documentation page: a docs or help host, a guide's
	// path, a short link (aka.ms, go.microsoft.com/fwlink).
	docLinkRE = regexp.MustCompile(`(?i)^https?://(?:(?:docs?|help|learn|developer|support|kb)\.|aka\.ms/|go\.microsoft\.com/fwlink|[^/]+/(?:[^?#]*/)?(?:docs?|documentation|developerguide|userguide|troubleshoot\w*|reference|help|errors?)(?:/|\.html|$))`)
)

// withoutDocLinks drops from a line the documentation links an error
// message carries ("check if you have a hot key:
// https://docs.aws.amazon.com/...", "see https://learn.microsoft.com/..."):
// the page explains the error, it is not what was called.
func withoutDocLinks(line string) string {
	if !strings.Contains(line, "://") {
		return line
	}
	return linkRE.ReplaceAllStringFunc(line, func(u string) string {
		if matchLine(docLinkRE, u) {
			return ""
		}
		return u
	})
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
	// The pod (or file) that logged the template, when one did: a
	// workload's set is named after the first of its pods read.
	src := set.Source
	if len(t.Sources) == 1 && t.Sources[0] != "" {
		src = t.Sources[0]
	}
	return fmt.Sprintf("%s %s logged %s %s%s: %s", set.Origin, src, plural(t.Incident, "line", "lines"), when, trend, quote(ReadableLine(line), 240))
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

// MiningText is the form of a log line the template miner reads. A JSON
// line is flattened: its time, level and message first, then its other
// fields as key=value in key order, string values unquoted. The miner
// masks a quoted value as a whole, so a JSON line kept as it is loses its
// level and message, and a warning folds into the template of the
// service's access lines. Other lines are returned as they are.
func MiningText(line string) string {
	l := strings.TrimSpace(line)
	if !strings.HasPrefix(l, "{") || !strings.HasSuffix(l, "}") {
		return line
	}
	d := json.NewDecoder(strings.NewReader(l))
	d.UseNumber()
	var m map[string]any
	if d.Decode(&m) != nil || len(m) == 0 {
		return line
	}
	val := func(v any) string {
		switch x := v.(type) {
		case string:
			return x
		case json.Number:
			return x.String()
		}
		b, _ := json.Marshal(v)
		return string(b)
	}
	var parts []string
	used := map[string]bool{}
	for _, group := range [][]string{{"ts", "time", "timestamp", "@timestamp"}, {"level", "severity", "lvl", "log.level"}, {"msg", "message"}} {
		for _, k := range group {
			if v, ok := m[k]; ok && !used[k] {
				if n, isNum := v.(json.Number); isNum && k == "level" {
					// pino and bunyan: a numeric level, named so
					// the level reads as one.
					if name := pinoLevel(n.String()); name != "" {
						v = name
					}
				}
				parts = append(parts, val(v))
				used[k] = true
				break
			}
		}
	}
	if len(parts) == 0 {
		return line
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		if !used[k] {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		parts = append(parts, k+"="+val(m[k]))
	}
	return strings.Join(parts, " ")
}

var (
	credExpiredRE = regexp.MustCompile(`(?i)(api[ _-]?key|token|credential|secret|password|key)[^.;]{0,40}\bexpired|expired[ _-]?(api[ _-]?key|token|credential|key)|ExpiredToken|token (has )?expired|key (has )?expired`)
	credInvalidRE = regexp.MustCompile(`(?i)invalid[ _-]?(api[ _-]?key|token|credentials?|key)|(api[ _-]?key|token|credentials?) (is )?(invalid|revoked|not valid)|unauthori[sz]ed|authentication failed|InvalidClientTokenId|\b401\b|\b403\b`)
	providerRE    = regexp.MustCompile(`(?i)\b(?:provider|vendor|upstream|api|partner)[=:]\s*"?([a-z][\w.-]+)`)
	bracketTagRE  = regexp.MustCompile(`\[([a-z][\w-]{2,})\]`)
	authStatusRE  = regexp.MustCompile(`(?i)(?:status(?:_?code)?|code|http)[=: ]+"?(40[13])\b|\b(40[13]) (Unauthorized|Forbidden)`)
)

// CredentialProblem reports what is wrong with a credential a rejected
// call used: "expired" (an API key or token past its expiry), "invalid"
// (unauthorized, invalid or revoked), or "" when the line does not say.
func CredentialProblem(line string) string {
	switch {
	case matchLine(credExpiredRE, line):
		return "expired"
	case matchLine(credInvalidRE, line):
		return "invalid"
	}
	return ""
}

// providerTag names the external provider a line is about when it gives
// no URL: provider=X, or a leading [x] tag.
func providerTag(line string) string {
	if m := findSubmatch(providerRE, line); m != nil {
		return m[1]
	}
	if m := findSubmatch(bracketTagRE, line); m != nil {
		return m[1]
	}
	return ""
}

func authStatus(line string) string {
	if m := findSubmatch(authStatusRE, line); m != nil {
		return orWord(m[1], m[2])
	}
	return ""
}

var (
	// causedByRE is a cause's line with its message; a bare "Caused by:"
	// (Ruby prints the cause's message on the next line) is a header.
	causedByRE  = regexp.MustCompile(`(?i)^\s*Caused by:\s*\S`)
	exceptionRE = regexp.MustCompile(`(^|[\s.:])[A-Z]\w*(Exception|Error|Fault)\b:\s*\S`)
	// rubyExceptionRE is Ruby's exception line: the message between the
	// class and the class again ("PG::ConnectionBad: could not translate
	// host name ... (PG::ConnectionBad)").
	rubyExceptionRE = regexp.MustCompile(`^\s*([A-Z]\w*(?:::[A-Z]\w*)+): \S.* \((?:[A-Z]\w*(?:::[A-Z]\w*)+)\)\s*$`)
	panicLineRE     = regexp.MustCompile(`^\s*(panic:|fatal error:)`)
	dbErrorRE       = regexp.MustCompile(`\b(ERROR|FATAL):\s+\S|SQLSTATE|\b42[0-9A-Z]{3}\b`)
	// headerLineRE is a line that frames an error without saying it: a
	// header ("Traceback", a bare "Caused by:", "rake aborted!", Python's
	// "The above exception was the direct cause..."), a stack frame (Java,
	// Python, Go, Ruby, Node) or a runner's trailer ("Tasks: TOP =>").
	headerLineRE = regexp.MustCompile(`(?i)threw exception|with root cause|Traceback \(most recent call last\)|^\s*Exception in thread|^\s+at [\w$.]+\(|^\s*File "[^"]+", line \d+|^goroutine \d+ \[|^\s*\.\.\. \d+ (more|common frames)` +
		`|^\s*Caused by:\s*$|^\s*[\w:-]+ aborted!\s*$|^\s*(The above exception was the direct cause|During handling of the above exception)|^\s*Tasks: TOP =>|^\s*\(See full trace by running` +
		`|^\s*(from\s+)?[\w./-]+:\d+:in\s|^\s+at \S.*\((node:|file://|/)[^)]*:\d+:\d+\)\s*$|^\s+at (async )?(file://)?/\S+:\d+:\d+\s*$|^\s+/[^:]+\.go:\d+( \+0x[0-9a-f]+)?\s*$`)
)

// RootCauseScore ranks how well a log line names the failure of a
// multi-line error: the "Caused by:" line, an exception class with its
// message, a Python traceback's last line, "panic:" rank above the
// header of the error ("Servlet.service() ... threw exception",
// "Traceback (most recent call last)") and its stack frames.
func RootCauseScore(line string) int {
	switch {
	case matchLine(causedByRE, line):
		return 4
	case matchLine(panicLineRE, line):
		return 3
	case matchLine(headerLineRE, line):
		return -1
	case matchLine(exceptionRE, line), matchLine(rubyExceptionRE, line):
		return 3
	case matchLine(dbErrorRE, line):
		return 2
	}
	return 0
}
