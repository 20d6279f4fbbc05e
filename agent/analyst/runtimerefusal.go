package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A runtime's new major version refusing what its old one allowed, under
// an application whose code did not change. A base image moved under its
// tag (a shared "jre:lts" or "python:stable" retagged, a Debian release
// bump from Renovate), and the next rebuild of the same commit ships the
// new runtime: Java 17+ denies the reflective access into the JDK that
// Java 9-16 only warned about (InaccessibleObjectException), Java 11 no
// longer ships JAXB, OpenSSL 3 refuses servers without secure
// renegotiation and legacy digests, Python 3.12 and 3.13 removed
// modules, Go no longer falls back to a certificate's Common Name. The
// error is the runtime's own wording, and it names what changed; the
// version the container now runs (java -version, ssl.OPENSSL_VERSION,
// python --version, compared with a pod or image that still works) and
// the change that moved the base image are the chain to the root. The
// dependency the question blames (Kafka, the bank, the database) is
// innocent: the client refuses before it talks to it.

// KindRuntimeRefusal is a runtime's new version refusing what the old one
// allowed.
const KindRuntimeRefusal Kind = "runtime_refusal"

// runtimeBreak is one refusal a runtime's major version brought.
type runtimeBreak struct {
	line    *regexp.Regexp // the runtime's own error wording
	runtime string         // "Java", "OpenSSL"
	since   string         // the version that brought it
	what    string         // what changed, in words
	// version reads the runtime's version series from a command's output
	// (group 1: "21", "3.0", "3.12").
	version *regexp.Regexp
	// change is what a change says when it moves this runtime.
	change *regexp.Regexp
	fix    string // the fix, with %s for the subject
	// warned is the old version's warning of the same thing, if it had
	// one.
	warned *regexp.Regexp
}

var (
	javaVersionRE    = regexp.MustCompile(`(?i)(?:openjdk|java) version "(\d+)[\d._+-]*"|Temurin-(\d+)[\d.+]*|Corretto-(\d+)[\d.]*`)
	javaChangeRE     = regexp.MustCompile(`(?i)\b(?:jre|jdk|java|temurin|openjdk|corretto|zulu|graalvm)\b|jre:|jdk:|java:`)
	opensslVersionRE = regexp.MustCompile(`OpenSSL (\d+\.\d+)\.\w+`)
	opensslChangeRE  = regexp.MustCompile(`(?i)openssl|bookworm|bullseye|trixie|debian|ubuntu|alpine|ubi ?9|rhel ?9|base image|-slim|distroless`)
	pythonVersionRE  = regexp.MustCompile(`Python (3\.\d+)\.\d+`)
	pythonChangeRE   = regexp.MustCompile(`(?i)\bpython\b|python:`)
	goVersionRE      = regexp.MustCompile(`\bgo(1\.\d+)(?:\.\d+)?\b`)
	goChangeRE       = regexp.MustCompile(`(?i)\bgo ?1\.\d+|golang|toolchain`)
	nodeVersionRE    = regexp.MustCompile(`(?m)^v(\d+)\.\d+\.\d+$|Node\.js v?(\d+)\.`)
	nodejsChangeRE   = regexp.MustCompile(`(?i)\bnode(?:js|\.js)?\b|node:`)
)

var runtimeBreaks = []runtimeBreak{
	{line: regexp.MustCompile(`InaccessibleObjectException|module java\.\w+ does not "(?:opens|exports) java\.`), runtime: "Java", since: "17",
		what:    `since Java 17 the JDK strongly encapsulates its internals (JEP 403): reflective access into java.base (setAccessible on ClassLoader.defineClass and the like, as older cglib, Spring, Lombok or Groovy versions do) that Java 9-16 allowed with an "Illegal reflective access" warning now throws InaccessibleObjectException`,
		version: javaVersionRE, change: javaChangeRE, warned: regexp.MustCompile(`(?i)illegal reflective access`),
		fix: "Upgrade the library of %s that reflects into the JDK to a version that supports the new Java, or start the JVM with --add-opens java.base/java.lang=ALL-UNNAMED (JDK_JAVA_OPTIONS) as a stopgap; until then build it on the Java base image it was tested with"},
	{line: regexp.MustCompile(`(?:NoClassDefFoundError|ClassNotFoundException):? javax[./](?:xml[./]bind|activation|annotation[./]|jws|xml[./]ws)`), runtime: "Java", since: "11",
		what:    "Java 11 removed the Java EE modules from the JDK (JEP 320: JAXB, JAX-WS, JAF, javax.annotation), which Java 8 shipped",
		version: javaVersionRE, change: javaChangeRE,
		fix: "Add the removed APIs to %s as dependencies (jakarta.xml.bind-api with its runtime, jakarta.activation), or build it on the Java base image it was tested with until then"},
	{line: regexp.MustCompile(`(?i)UNSAFE_LEGACY_RENEGOTIATION_DISABLED|unsafe legacy renegotiation disabled`), runtime: "OpenSSL", since: "3.0",
		what:    "OpenSSL 3.0 refuses to connect to a TLS server that does not support secure renegotiation (RFC 5746), which OpenSSL 1.1.1 allowed (SSL_OP_LEGACY_SERVER_CONNECT is no longer set by default); the server is up, the client refuses its handshake",
		version: opensslVersionRE, change: opensslChangeRE,
		fix: "Ask the server's owner to enable secure renegotiation (RFC 5746); until then let %s connect with legacy server connect for that host only (ssl.OP_LEGACY_SERVER_CONNECT on its SSL context, or Options = UnsafeLegacyServerConnect in an OpenSSL config it alone loads), or pin its previous base image"},
	{line: regexp.MustCompile(`(?i)CA_MD_TOO_WEAK|ca md too weak|EE_KEY_TOO_SMALL|ee key too small`), runtime: "OpenSSL", since: "3.0",
		what:    "OpenSSL 3 (Debian bookworm, Ubuntu 22.04, RHEL 9) defaults to security level 2 and rejects certificates signed with SHA-1 or with RSA keys under 2048 bits, which the previous base image accepted",
		version: opensslVersionRE, change: opensslChangeRE,
		fix: "Have the peer's certificate reissued with SHA-256 and a 2048-bit key; until then lower the security level for that connection of %s only (@SECLEVEL=1 in its cipher string), or pin its previous base image"},
	{line: regexp.MustCompile(`(?i)0308010C|digital envelope routines::unsupported|ERR_OSSL_EVP_UNSUPPORTED`), runtime: "Node.js", since: "17",
		what:    "Node.js 17+ is built on OpenSSL 3, which no longer provides legacy algorithms such as MD4 by default (webpack 4 and older loaders hash with it)",
		version: nodeVersionRE, change: nodejsChangeRE,
		fix: "Upgrade the build tooling of %s (webpack 5, current loaders), or run it with NODE_OPTIONS=--openssl-legacy-provider as a stopgap, or build it on the Node.js image it was tested with"},
	{line: regexp.MustCompile(`No module named '(?:distutils|imp|asynchat|asyncore|smtpd)'`), runtime: "Python", since: "3.12",
		what:    "Python 3.12 removed distutils (PEP 632), imp, asynchat, asyncore and smtpd (PEP 594), which Python 3.11 still shipped",
		version: pythonVersionRE, change: pythonChangeRE,
		fix: "Replace the removed module in %s (setuptools or packaging for distutils, importlib for imp; strtobool is three lines), or pin its base image to the Python it was tested with"},
	{line: regexp.MustCompile(`No module named '(?:cgi|cgitb|crypt|imghdr|telnetlib|pipes|nntplib|audioop|sndhdr|xdrlib|mailcap|nis|spwd|sunau|uu|chunk|msilib|ossaudiodev|lib2to3)'`), runtime: "Python", since: "3.13",
		what:    "Python 3.13 removed the \"dead batteries\" (PEP 594: cgi, crypt, imghdr, telnetlib, pipes and others) and lib2to3, which Python 3.12 still shipped",
		version: pythonVersionRE, change: pythonChangeRE,
		fix: "Replace the removed module in %s (its PyPI backport or the standard replacement), or pin its base image to the Python it was tested with"},
	{line: regexp.MustCompile(`x509: certificate relies on legacy Common Name field`), runtime: "Go", since: "1.15",
		what:    "Go 1.15+ no longer falls back to a certificate's Common Name when it has no Subject Alternative Names",
		version: goVersionRE, change: goChangeRE,
		fix: "Reissue the peer's certificate with a Subject Alternative Name; %s's rebuild with a newer Go cannot be told to accept it"},
	{line: regexp.MustCompile(`x509: negative serial number`), runtime: "Go", since: "1.23",
		what:    "Go 1.23 rejects certificates with a negative serial number, which earlier versions parsed",
		version: goVersionRE, change: goChangeRE,
		fix: "Reissue the certificate with a positive serial number; until then run %s with GODEBUG=x509negativeserial=1"},
}

var runtimeRefusal = &mechanism{
	kind:   KindRuntimeRefusal,
	class:  classCause,
	label:  "a runtime's new version refusing what the old one allowed (base image moved)",
	detect: detectRuntimeRefusal,
	related: exceptOwnAndChanges(KindRuntimeRefusal,
		kindsOnSubject(KindCrashLoop, KindAppCrash, KindLogErrors, KindTLS, KindJobFailed)),
	refines: []Kind{KindCrashLoop, KindAppCrash, KindLogErrors, KindTLS},
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return runtimeChangeFits(h.fact("runtime"), changeText(c))
	},
	describe:  describeRuntimeRefusal,
	recommend: recommendRuntimeRefusal,
}

// runtimeChangeFits reports whether a change's text moves the runtime
// (its name, a base image, a rebuild of the same code).
func runtimeChangeFits(runtime, text string) bool {
	for _, b := range runtimeBreaks {
		if b.runtime == runtime && matchLine(b.change, text) {
			return true
		}
	}
	return matchLine(rebuildRE, text)
}

// detectRuntimeRefusal finds a runtime's refusal in a workload's logs
// (its log files and the kubectl logs handed over) and in the commands
// run in its containers, and follows it to the runtime's version and the
// change that moved it.
func detectRuntimeRefusal(ev *Gathered, _ []Finding) []Finding {
	type hit struct {
		subject, ns, line string
		at                time.Time
		b                 *runtimeBreak
	}
	var hits []hit
	seen := map[string]bool{}
	add := func(subject, ns, line string, at time.Time) {
		if subject == "" || seen[subject] {
			return
		}
		for i := range runtimeBreaks {
			if matchLine(runtimeBreaks[i].line, line) {
				seen[subject] = true
				hits = append(hits, hit{subject, ns, line, at, &runtimeBreaks[i]})
				return
			}
		}
	}
	for i := range ev.Logs {
		set := &ev.Logs[i]
		for _, t := range set.Templates {
			if t.Incident == 0 {
				continue
			}
			for _, l := range t.Lines() {
				add(set.Subject, set.Namespace, l, orTime(t.FirstIncident, t.FirstSeen))
			}
		}
	}
	for _, c := range ev.Commands {
		subject := commandWorkload(&c)
		for _, l := range c.Lines {
			add(subject, c.Namespace, l, evidence.ParseLogTime(l, ev.Window.End))
		}
	}
	var out []Finding
	for _, h := range hits {
		out = append(out, runtimeRefusalFinding(ev, h.subject, h.ns, h.line, h.at, h.b))
	}
	return out
}

// runtimeVersion is a version of the runtime a command printed, and where.
type runtimeVersion struct {
	series, line, where string
	own                 bool // printed in the subject's own container or image
}

func runtimeRefusalFinding(ev *Gathered, subject, ns, line string, at time.Time, b *runtimeBreak) Finding {
	if at.IsZero() {
		at = ev.Window.Start
	}
	f := Finding{Kind: KindRuntimeRefusal, Subject: subject, Namespace: ns, Time: at, Severity: SevCritical, Weight: 0.8, Source: SrcLogs}
	f.setFact("runtime", b.runtime)
	f.setFact("since", b.since)
	f.setFact("what", b.what)
	f.setFact("fix", b.fix)
	f.setFact("line", refusalPart(b.line, line))
	f.Evidence = append(f.Evidence, fmt.Sprintf("%s fails with %s's own refusal: %s", subject, b.runtime, quote(truncate(ReadableLine(refusalPart(b.line, line)), 240), 250)))

	// The old runtime's warning of the same access, in the subject's
	// earlier lines (Java 9-16's "Illegal reflective access").
	if b.warned != nil {
		for i := range ev.Logs {
			if !strings.EqualFold(ev.Logs[i].Subject, subject) {
				continue
			}
			for _, t := range ev.Logs[i].Templates {
				if f.fact("warned") == "" && matchLine(b.warned, t.Example) {
					f.setFact("warned", fmt.Sprintf("the earlier build only warned (%s)", quote(truncate(ReadableLine(t.Example), 160), 170)))
					f.Evidence = append(f.Evidence, "before: "+quote(truncate(ReadableLine(t.Example), 200), 210))
				}
			}
		}
	}

	// The versions of the runtime the commands printed: the subject's
	// own (its container, its debug copy, its image) against another's
	// (a sibling service, the previous image).
	var vs []runtimeVersion
	for _, c := range ev.Commands {
		text := strings.Join(c.Lines, "\n")
		m := findSubmatch(b.version, text)
		if m == nil {
			continue
		}
		series := ""
		for _, g := range m[1:] {
			if g != "" {
				series = g
				break
			}
		}
		w := commandWorkload(&c)
		own := strings.EqualFold(w, subject) || strings.Contains(c.Command, " "+subject+"-") && !strings.Contains(c.Command, "--image")
		where := orWord(w, truncate(c.Command, 80))
		if subjectImageTag(c.Command, subject) != "" {
			// An image of the subject run by tag: its previous release
			// unless it is the running one.
			own = false
			where = "image " + subjectImageTag(c.Command, subject)
		}
		vs = append(vs, runtimeVersion{series: series, line: strings.TrimSpace(m[0]), where: where, own: own})
	}
	var now, before *runtimeVersion
	for i := range vs {
		if vs[i].own && now == nil {
			now = &vs[i]
		}
	}
	for i := range vs {
		if !vs[i].own && before == nil && (now == nil || vs[i].series != now.series) {
			before = &vs[i]
		}
	}
	if now != nil {
		f.setFact("now", fmt.Sprintf("%s runs %s %s (%s)", subject, b.runtime, now.series, now.line))
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s's container runs %s %s: %s", subject, b.runtime, now.series, quote(now.line, 120)))
		f.Weight = 0.88
	}
	if before != nil {
		f.setFact("before", fmt.Sprintf("%s has %s %s (%s)", before.where, b.runtime, before.series, before.line))
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s has %s %s: %s", before.where, b.runtime, before.series, quote(before.line, 120)))
		if now != nil {
			f.Weight = 0.92
		}
	}

	// The change that moved the runtime (a base image retagged, a
	// Renovate bump) and the subject's own rebuild that took it.
	for _, c := range append(append([]evidence.Change{}, ev.Earlier...), ev.Changes...) {
		if c.Timestamp.After(at) {
			continue
		}
		d := c.Description + " " + c.Revision
		if !matchLine(b.change, d) {
			continue
		}
		if c.Service == subject || !strings.EqualFold(c.Service, subject) && sharedImageChange(d) {
			f.setFact("moved_by", fmt.Sprintf("%s's change at %s (%s)", c.Service, c.Timestamp.UTC().Format(time.RFC3339), quote(c.Description, 180)))
			if c.Service != subject {
				f.Related = appendUnique(f.Related, c.Service)
			}
		}
	}
	for _, c := range append(append([]evidence.Change{}, ev.Earlier...), ev.Changes...) {
		if c.Service == subject && !c.Timestamp.After(at) && !strings.Contains(f.fact("moved_by"), c.Description) {
			f.setFact("rebuild", fmt.Sprintf("%s at %s (%s)", orWord(c.Revision, c.Kind), c.Timestamp.UTC().Format(time.RFC3339), quote(c.Description, 160)))
		}
	}
	if m := f.fact("moved_by"); m != "" {
		f.Evidence = append(f.Evidence, "the runtime moved with "+m)
		f.Weight = max(f.Weight, 0.9)
	}
	f.setFact("why", b.what)
	f.Summary = fmt.Sprintf("%s: %s %s+ refuses what the old version allowed (%s)", subject, b.runtime, b.since, truncate(ReadableLine(line), 120))
	return f
}

// refusalPart is a long line cut to start shortly before the runtime's
// refusal, so its words survive the quote.
func refusalPart(re *regexp.Regexp, line string) string {
	loc := re.FindStringIndex(line)
	if loc == nil || loc[0] < 120 {
		return line
	}
	start := loc[0] - 60
	for start > 0 && line[start] != ' ' {
		start--
	}
	return "…" + line[start:]
}

// sharedImageChange reports whether a change of another service moves a
// base image others build on.
var sharedImageRE = regexp.MustCompile(`(?i)base[ -]?image|\bbase/|retag|now points to|:lts\b|:stable\b|:latest\b|golden image`)

func sharedImageChange(text string) bool { return matchLine(sharedImageRE, text) }

// subjectImageTag is the tag of the subject's image a command runs by
// name (docker run registry/app:3.4.1), "" when it runs none.
func subjectImageTag(command, subject string) string {
	re := regexp.MustCompile(`(?:^|[\s/])` + regexp.QuoteMeta(subject) + `:([\w.-]+)`)
	if m := re.FindStringSubmatch(command); m != nil && !strings.Contains(command, "kubectl") {
		return subject + ":" + m[1]
	}
	return ""
}

func appendUnique(xs []string, x string) []string {
	if slices.Contains(xs, x) {
		return xs
	}
	return append(xs, x)
}

func describeRuntimeRefusal(h *Hypothesis, sc Scope) string {
	rt := h.fact("runtime")
	d := fmt.Sprintf("%s fails because its runtime moved to a new version that refuses what the old one allowed (%s %s+): %s; %s",
		h.Subject, rt, h.fact("since"), quote(truncate(ReadableLine(h.fact("line")), 320), 330), h.fact("what"))
	switch n := h.fact("now"); {
	case n != "":
		d += "; " + n
		d += h.clause(", while ", "before")
	case h.fact("before") != "":
		d += "; " + h.fact("before")
	}
	d += h.clause("; ", "warned")
	if m := h.fact("moved_by"); m != "" {
		d += "; the base image moved with " + m
	}
	if r := h.fact("rebuild"); r != "" {
		d += fmt.Sprintf("; %s took it with its build %s", h.Subject, r)
	}
	d += "; the code did not need to change for this, and the dependency it calls is not the cause: the client refuses before it gets there"
	return d
}

func recommendRuntimeRefusal(h *Hypothesis, sc Scope, r *recommender) {
	s := h.Subject
	r.high("Roll %s back to the image built on the previous %s (or pin the base image by digest to it) to restore service now", s, h.fact("runtime"))
	r.high(h.fact("fix"), s)
	r.med("Pin base images by version or digest instead of a moving tag (lts, stable, latest), and let a runtime's major upgrade reach services through a pull request that runs their tests")
	r.low("Run the test suite of every service on the next runtime version before the shared base image tag moves")
}
