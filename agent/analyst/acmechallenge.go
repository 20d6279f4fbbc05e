package analyst

import (
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A certificate that does not renew because its ACME challenge fails.
// cert-manager renews a certificate a month before it expires: it creates
// an Order and one Challenge per domain, and for HTTP-01 serves the token
// from a solver pod behind an Ingress, then checks it can fetch it itself
// before asking the CA to. While that self check fails the Challenge stays
// pending, its status and cert-manager's log saying why: "Waiting for
// HTTP-01 challenge propagation: failed to perform self check GET request
// 'http://shop.example.com/.well-known/acme-challenge/…': Get …: dial tcp
// 203.0.113.45:80: i/o timeout". The certificate still reads Ready (the
// old one is valid) until it expires. The cause is on the path from the
// Internet to the solver: port 80 not served by the load balancer (its
// listener removed, an HTTPS-only change), a firewall, a redirect, DNS —
// what the listeners, an outside curl or a change say. The CA's own
// verdict ("acme: authorization error for X: 400
// urn:ietf:params:acme:error:connection: … Timeout during connect (likely
// firewall problem)") reads the same way.

// KindACMEChallenge is a certificate whose ACME challenge fails.
const KindACMEChallenge Kind = "acme_challenge"

var acmeChallenge = &mechanism{
	kind:  KindACMEChallenge,
	class: classCause,
	label: "certificate not renewed: its ACME challenge fails",
	detect: func(ev *Gathered, found []Finding) []Finding {
		return detectACMEChallenges(ev.Commands, ev.Logs, append(slices.Clone(ev.Earlier), ev.Changes...), ev.Scope, ev.Window)
	},
	fitsChange: changeSays(acmePathChangeRE),
	// The pods that mount the certificate's Secret wait for it: their
	// FailedMount (or CreateContainerConfigError) on the Secret not found
	// is this failure one hop on.
	related: func(h *Hypothesis, f *Finding) bool {
		return waitsForSecret(f, h.fact("secret"))
	},
	refines:       []Kind{KindConfigError, KindMountFailure},
	refinesAcross: true,
	describe: func(h *Hypothesis, sc Scope) string {
		verb := "is not renewing"
		var waiting []string
		for _, f := range h.Support {
			if waitsForSecret(f, h.fact("secret")) && !slices.Contains(waiting, f.Subject) {
				waiting = append(waiting, f.Subject)
			}
		}
		if len(waiting) > 0 {
			verb = "was never issued"
		}
		d := fmt.Sprintf("certificate %s %s: its ACME %s challenge%s stays pending", h.Subject, verb, orWord(h.fact("type"), "HTTP-01"), forDomains(h.fact("domains")))
		d += h.clause(" since ", "since")
		if u := h.fact("url"); u != "" {
			d += fmt.Sprintf(" — cert-manager's self check GET %s fails: %s", u, h.fact("error"))
		} else {
			d += " — " + h.fact("error")
		}
		if p := h.fact("port"); p != "" && h.fact("unreachable") != "" {
			d += fmt.Sprintf(", so port %s of %s is not reachable from outside", p, orWord(h.fact("address"), "the public address"))
		}
		for _, k := range []string{"denied", "policy", "listeners", "outside", "inside", "change"} {
			if v := h.fact(k); v != "" {
				d += "; " + v
			}
		}
		d += h.clause("; the current certificate expires at ", "not_after")
		if len(waiting) > 0 {
			d += fmt.Sprintf(". Its Secret %s does not exist, so the pods of %s that mount it cannot start (FailedMount: secret %q not found)", h.fact("secret"), strings.Join(waiting, ", "), h.fact("secret"))
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		if h.fact("listeners") != "" || h.fact("port") == "80" {
			r.high("Serve port 80 on the public load balancer again (a TCP/80 listener to the ingress controller, and its security group rule) or redirect it at the ingress, not the load balancer: HTTP-01 needs http://%s/.well-known/acme-challenge/ reachable from the Internet", firstWord(h.fact("domains")))
			r.med("If port 80 must stay closed, switch the issuer to the DNS-01 solver for %s", h.fact("domains"))
		} else if h.fact("denied") != "" {
			what := "the permissions the solver needs at its DNS provider"
			if m := findSubmatch(deniedActionRE, h.fact("error")); m != nil {
				what = "the action " + m[3] + prefixed(" to role ", m[1])
			}
			need := ""
			if strings.Contains(strings.ToLower(h.fact("error")), "route53") || strings.Contains(h.fact("error"), "Route 53") {
				need = " (Route 53 needs route53:ListHostedZonesByName on *, route53:GetChange, route53:ChangeResourceRecordSets on the zone)"
			}
			r.high("Grant cert-manager's DNS-01 identity %s again%s, or revert the change that narrowed it", what, need)
		} else {
			r.high("Make http://%s/.well-known/acme-challenge/ reachable from the Internet to the solver pod (%s)", firstWord(h.fact("domains")), h.fact("error"))
		}
		r.med("Once the path works, the pending challenge passes on cert-manager's next retry (or run cmctl renew %s); check kubectl get certificate %s shows the new notAfter", h.Subject, h.Subject)
		r.low("Alert on certificates within 21 days of expiry and on Challenges pending for more than an hour (certmanager_certificate_expiration_timestamp_seconds)")
	},
}

var (
	// acmeSelfCheckRE is cert-manager's failed HTTP-01 self check: the
	// URL and the error of the GET.
	acmeSelfCheckRE = regexp.MustCompile(`failed to perform self check GET request '([^']+)': (?:Get "[^"]+": )?([^"]+)`)
	// acmeAuthzRE is the CA's verdict on an authorization.
	acmeAuthzRE = regexp.MustCompile(`acme: authorization error for (\S+?):? (\d{3} urn:ietf:params:acme:error:\w+: [^"]+)`)
	// acmeDNSWaitRE is a DNS-01 challenge waiting for its record.
	acmeDNSWaitRE = regexp.MustCompile(`Waiting for DNS-01 challenge propagation: ([^"]+)`)
	// acmePresentRE is cert-manager failing to present a challenge (to
	// create the DNS-01 TXT record at the DNS provider, or the HTTP-01
	// solver): the Challenge's status reason, its PresentError event,
	// its log.
	acmePresentRE = regexp.MustCompile(`(?i)error presenting challenge(?::|" err=")\s*([^"]+)`)
	// acmeProblemRE is the CA's refusal of an order or a challenge (a
	// rate limit, a CAA record, a rejected identifier).
	acmeProblemRE = regexp.MustCompile(`(\d{3} urn:ietf:params:acme:error:(\w+):?\s*[^"]+)`)
	// providerDeniedRE is a DNS provider's refusal of the credentials
	// cert-manager uses: AWS (Route 53), Google Cloud DNS, Azure DNS,
	// Cloudflare.
	providerDeniedRE = regexp.MustCompile(`(?i)AccessDenied|not authorized to perform|AuthorizationFailed|does not have authorization|googleapi: Error 403|Error 403: Forbidden|\b403 Forbidden|Authentication error|Invalid request headers|InvalidClientTokenId|ExpiredToken`)
	// deniedResourceRE is the action and resource an AWS denial names.
	deniedResourceRE = regexp.MustCompile(`not authorized to perform: ([\w:*]+) on resource: (\S+?)(?:\s|$)`)
	// deniedActionRE is an AWS denial that names no resource (an action
	// on no resource, as route53:ListHostedZonesByName): "User:
	// arn:aws:sts::…:assumed-role/ROLE/… is not authorized to perform:
	// ACTION because no identity-based policy allows the ACTION action".
	deniedActionRE = regexp.MustCompile(`User: (?:arn:aws:sts::\d*:assumed-role/([\w+=,.@-]+)/\S*|(\S+)) is not authorized to perform: ([\w:*]+)(?:\s+because ([^\n"]*?action))?(?:\s|$|\\)`)
	// acmeCredChangeRE is a change of the identity or permissions the
	// solver uses at its DNS provider.
	acmeCredChangeRE = regexp.MustCompile(`(?i)\biam\b|polic(?:y|ies)|\brole\b|irsa|permission|least[- ]privilege|service ?account|credential|api token|access key|workload identity`)
	// challengeNameRE is the name cert-manager gives a Challenge: its
	// certificate's, the revision and two hashes.
	challengeNameRE = regexp.MustCompile(`^(.+?)-\d+-\d{6,}-\d{6,}$`)
	dialAddrRE      = regexp.MustCompile(`dial tcp ([0-9a-fA-F.:\[\]]+):(\d+)`)
	unreachableRE   = regexp.MustCompile(`(?i)i/o timeout|timed out|timeout during connect|connection refused|no route to host|network is unreachable`)
	// acmePathChangeRE is a change to the path from the Internet to the
	// solver: listeners, ports, firewalls, redirects, DNS.
	acmePathChangeRE = regexp.MustCompile(`(?i)listener|port 80|tcp/80|:80\b|\bhttp\b.*(drop|remov|disabl|clos|redirect)|https[- ]only|security group|firewall|\bwaf\b|redirect|dns record|load balancer|\bnlb\b|\balb\b`)
	resourceNameRE   = regexp.MustCompile(`resource_name="([^"]+)"`)
	tablePortRE      = regexp.MustCompile(`^\|\s*(\d{2,5})\s*\|`)
	jsonPortRE       = regexp.MustCompile(`"Port":\s*(\d+)`)
	http200RE        = regexp.MustCompile(`(?m)^\s*200\s*$|\bHTTP/[\d.]+ 200\b`)
)

// acmeFailure is one failing challenge read from a command's output.
type acmeFailure struct {
	challenge, domain, url, err, typ string
}

// readACMEFailure reads a line of a Challenge's status or cert-manager's
// log; ok is false when it says nothing of a failing challenge.
func readACMEFailure(line string) (acmeFailure, bool) {
	l := strings.ReplaceAll(line, `\"`, `"`)
	var a acmeFailure
	if m := findSubmatch(resourceNameRE, l); m != nil {
		a.challenge = m[1]
	}
	switch {
	case matchLine(acmeSelfCheckRE, l):
		m := findSubmatch(acmeSelfCheckRE, l)
		a.url, a.err, a.typ = m[1], strings.TrimSpace(m[2]), "HTTP-01"
		if u, err := url.Parse(a.url); err == nil {
			a.domain = u.Hostname()
		}
	case matchLine(acmeAuthzRE, l):
		m := findSubmatch(acmeAuthzRE, l)
		a.domain, a.err = m[1], strings.TrimSpace(m[2])
	case matchLine(acmeDNSWaitRE, l):
		a.err, a.typ = strings.TrimSpace(findSubmatch(acmeDNSWaitRE, l)[1]), "DNS-01"
	case matchLine(acmePresentRE, l):
		a.err = strings.TrimSpace(findSubmatch(acmePresentRE, l)[1])
		if matchLine(providerDeniedRE, a.err) || strings.Contains(strings.ToLower(l), "dns01") || strings.Contains(l, "DNS-01") || strings.Contains(a.err, "record set") {
			a.typ = "DNS-01"
		}
	case matchLine(acmeProblemRE, l) && strings.Contains(strings.ToLower(l), "order"):
		a.err = strings.TrimSpace(findSubmatch(acmeProblemRE, l)[1])
	default:
		return acmeFailure{}, false
	}
	return a, true
}

// certificateOfChallenge is the certificate a Challenge was made for
// ("shop-example-com-tls-4-2877391840-3126589925" → "shop-example-com-tls").
func certificateOfChallenge(name string) string {
	if m := findSubmatch(challengeNameRE, name); m != nil {
		return m[1]
	}
	return ""
}

// challengeRow is a row of `kubectl get challenges`.
type challengeRow struct {
	name, state, domain string
	age                 time.Duration
}

// detectACMEChallenges reads the failing challenges the transcripts and
// logs show, one finding per certificate, with what the listeners, an
// outside request, the solver answering inside and the changes say of the
// path to it.
func detectACMEChallenges(cmds []evidence.CommandOutput, logs []LogSet, changes []evidence.Change, sc Scope, w Window) []Finding {
	var fails []acmeFailure
	var rows []challengeRow
	var listeners []int
	listenersShown := false
	var outside, inside string
	var notAfter string
	for _, c := range cmds {
		cmd := c.Command
		if strings.Contains(cmd, "describe-listeners") {
			for _, l := range c.Lines {
				m := findSubmatch(tablePortRE, strings.TrimSpace(l))
				if m == nil {
					m = findSubmatch(jsonPortRE, l)
				}
				if m != nil {
					p, _ := strconv.Atoi(m[1])
					listeners = append(listeners, p)
					listenersShown = true
				}
			}
		}
		for _, l := range c.Lines {
			if a, ok := readACMEFailure(l); ok {
				if a.challenge == "" && describedChallenge(cmd) != "" {
					a.challenge = describedChallenge(cmd)
				}
				fails = append(fails, a)
			}
		}
		if isGetChallenges(cmd) {
			rows = append(rows, challengeRows(c.Lines)...)
		}
		if strings.Contains(cmd, "describe certificate") {
			for _, l := range c.Lines {
				if k, v, ok := strings.Cut(strings.TrimSpace(l), ":"); ok && strings.TrimSpace(k) == "Not After" {
					notAfter = strings.TrimSpace(v)
				}
			}
		}
		run := c.Run
		if run == "" {
			run = cmd
		}
		if strings.Contains(run, "curl") && strings.Contains(run, "/.well-known/acme-challenge/") {
			out := strings.Join(c.Lines, " ")
			switch {
			case c.Exec && matchLine(http200RE, out):
				inside = "the solver answers inside the cluster (HTTP 200 from " + orWord(c.Target, c.Pod) + ")"
			case !c.Exec && matchLine(unreachableRE, out):
				outside = "a request from outside fails the same way: " + truncate(lastNonEmpty(c.Lines), 120)
			}
		}
	}
	for _, s := range logs {
		for _, t := range s.Templates {
			if a, ok := readACMEFailure(t.Example); ok {
				fails = append(fails, a)
			}
		}
	}
	if len(fails) == 0 {
		return nil
	}
	// One finding per certificate: its domains, its first failure's error.
	type cert struct {
		f       Finding
		domains []string
	}
	certs := map[string]*cert{}
	var order []string
	for _, a := range fails {
		name := certificateOfChallenge(a.challenge)
		if name == "" {
			for _, r := range rows {
				if r.domain == a.domain {
					name = certificateOfChallenge(r.name)
				}
			}
		}
		if name == "" {
			name = sc.Service
		}
		c := certs[name]
		if c == nil {
			c = &cert{f: Finding{Kind: KindACMEChallenge, Subject: name, Object: "certificate " + name, Namespace: sc.Namespace, Source: SrcKubernetes,
				Severity: SevWarning, Weight: 0.8, Time: w.Start}}
			c.f.setFact("url", a.url)
			c.f.setFact("error", a.err)
			c.f.setFact("type", a.typ)
			c.f.Evidence = append(c.f.Evidence, fmt.Sprintf("challenge %s (%s): %s", orWord(a.challenge, a.domain), orWord(a.typ, "ACME"), truncate(urlPrefix(a.url)+a.err, 240)))
			certs[name] = c
			order = append(order, name)
		}
		if a.domain != "" && !slices.Contains(c.domains, a.domain) {
			c.domains = append(c.domains, a.domain)
		}
	}
	secrets := certificateSecrets(cmds)
	var out []Finding
	for _, name := range order {
		c := certs[name]
		f := &c.f
		f.setFact("secret", orWord(secrets[name], name))
		// Pending since the oldest of its challenges was created: the
		// state now, however long ago it began.
		var oldest time.Duration
		for _, r := range rows {
			if certificateOfChallenge(r.name) != name || r.state == "valid" {
				continue
			}
			if r.age > oldest && !w.End.IsZero() {
				oldest = r.age
			}
			if !slices.Contains(c.domains, r.domain) {
				c.domains = append(c.domains, r.domain)
			}
		}
		if oldest > 0 {
			f.Time = w.End.Add(-oldest)
			f.setFact("since", f.Time.UTC().Format("2006-01-02"))
			f.Evidence = append(f.Evidence, fmt.Sprintf("its challenges are pending for %s", humanAge(oldest)))
		}
		f.setFact("domains", strings.Join(c.domains, ", "))
		f.setFact("current", "true")
		if m := findSubmatch(dialAddrRE, f.fact("error")); m != nil {
			f.setFact("address", m[1])
			f.setFact("port", m[2])
		}
		if matchLine(unreachableRE, f.fact("error")) {
			f.setFact("unreachable", "true")
		}
		reason := false
		if port, _ := strconv.Atoi(f.fact("port")); listenersShown && port > 0 && !slices.Contains(listeners, port) {
			var ls []string
			for _, p := range listeners {
				ls = append(ls, strconv.Itoa(p))
			}
			f.setFact("listeners", fmt.Sprintf("the load balancer has no listener on port %d (its listeners: %s)", port, strings.Join(ls, ", ")))
			f.Evidence = append(f.Evidence, "load balancer listeners: "+strings.Join(ls, ", ")+" (no "+f.fact("port")+")")
			reason = true
		}
		if outside != "" {
			f.setFact("outside", outside)
			f.Evidence = append(f.Evidence, outside)
		}
		if inside != "" {
			f.setFact("inside", inside)
			f.Evidence = append(f.Evidence, inside)
		}
		// The DNS provider refusing the solver's credentials: what it
		// refused, and what the identity's policy grants instead.
		denied := matchLine(providerDeniedRE, f.fact("error"))
		if denied {
			d := "the DNS provider refuses cert-manager's credentials (access denied), so the challenge's record is never created"
			if m := findSubmatch(deniedResourceRE, f.fact("error")); m != nil {
				d = fmt.Sprintf("the DNS provider refuses cert-manager's identity %s on %s (access denied), so the challenge's TXT record is never created", m[1], m[2])
				if p := grantedElsewhere(cmds, m[1], m[2]); p != "" {
					f.setFact("policy", p)
					f.Evidence = append(f.Evidence, p)
				}
			} else if m := findSubmatch(deniedActionRE, f.fact("error")); m != nil {
				d = fmt.Sprintf("the DNS provider denies cert-manager's identity%s the action %s (access denied%s), so the challenge's TXT record is never created",
					prefixed(" ", orWord(m[1], m[2])), m[3], prefixed(": ", m[4]))
			}
			f.setFact("denied", d)
			f.setFact("why", d)
			reason = true
		}
		// The change that cut the path (or narrowed the solver's
		// permissions), however long before: a challenge fails from the
		// first renewal after it.
		changeRE := acmePathChangeRE
		if denied {
			changeRE = acmeCredChangeRE
		}
		for i := len(changes) - 1; i >= 0; i-- {
			ch := changes[i]
			if !matchLine(changeRE, ch.Description) || !w.End.IsZero() && ch.Timestamp.After(w.End) {
				continue
			}
			f.setFact("change", fmt.Sprintf("the %s change %s of %s on %s: %q", orWord(ch.Kind, "recorded"), orWord(ch.Revision, ""), ch.Service, ch.Timestamp.UTC().Format("2006-01-02"), truncate(ch.Description, 160)))
			f.Evidence = append(f.Evidence, fmt.Sprintf("change %s of %s at %s: %q", orWord(ch.Revision, ch.Kind), ch.Service, ts(ch.Timestamp), truncate(ch.Description, 200)))
			reason = true
			break
		}
		if notAfter != "" {
			f.setFact("not_after", notAfter)
		}
		if reason {
			f.Weight = 0.9
		} else {
			f.setFact("state_only", "true")
		}
		// cert-manager's controller runs the challenges: its failures
		// are this certificate's.
		f.Related = append(f.Related, c.domains...)
		f.Related = append(f.Related, "cert-manager")
		// cert-manager is what fails: its controller cannot complete
		// the challenge.
		f.setFact("affected", "cert-manager")
		f.Summary = fmt.Sprintf("certificate %s not renewing: ACME challenge%s fails: %s", name, forDomains(f.fact("domains")), truncate(f.fact("error"), 120))
		out = append(out, *f)
	}
	return out
}

// grantedElsewhere reads an identity policy document a transcript printed
// (aws iam get-role-policy, get-policy-version: JSON) and says where it
// grants action when no statement grants it on resource ("" when no
// policy was read or one grants it there).
func grantedElsewhere(cmds []evidence.CommandOutput, action, resource string) string {
	for _, c := range cmds {
		if !strings.Contains(c.Command, "iam ") {
			continue
		}
		text := strings.Join(c.Lines, "\n")
		if i := strings.Index(text, "{"); i >= 0 {
			text = text[i:]
		}
		var doc struct {
			PolicyDocument *json.RawMessage
			Statement      []struct {
				Effect   string
				Action   json.RawMessage
				Resource json.RawMessage
			}
		}
		if json.Unmarshal([]byte(text), &doc) != nil {
			continue
		}
		if doc.PolicyDocument != nil && len(doc.Statement) == 0 {
			_ = json.Unmarshal(*doc.PolicyDocument, &doc)
		}
		var on []string
		for _, st := range doc.Statement {
			if st.Effect != "Allow" || !slices.Contains(stringOrList(st.Action), action) {
				continue
			}
			for _, r := range stringOrList(st.Resource) {
				if r == "*" || r == resource || strings.HasSuffix(r, "*") && strings.HasPrefix(resource, strings.TrimSuffix(r, "*")) {
					return ""
				}
				on = append(on, r)
			}
		}
		if len(on) > 0 {
			return fmt.Sprintf("the identity's policy grants %s only on %s, not on %s", action, strings.Join(on, ", "), resource)
		}
	}
	return ""
}

// stringOrList reads a policy field that is a string or a list of them.
func stringOrList(raw json.RawMessage) []string {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}
	}
	var list []string
	_ = json.Unmarshal(raw, &list)
	return list
}

// describedChallenge is the Challenge a `kubectl describe challenge X`
// names ("" for another command).
func describedChallenge(cmd string) string {
	f := strings.Fields(cmd)
	for i := 0; i+2 < len(f); i++ {
		if f[i] == "describe" && strings.HasPrefix(strings.ToLower(f[i+1]), "challenge") {
			if n := f[i+2]; !strings.HasPrefix(n, "-") {
				return n
			}
		}
	}
	return ""
}

func isGetChallenges(cmd string) bool {
	f := strings.Fields(cmd)
	for i := 0; i+1 < len(f); i++ {
		if f[i] != "get" {
			continue
		}
		for _, k := range strings.Split(strings.ToLower(f[i+1]), ",") {
			if strings.HasPrefix(k, "challenge") {
				return true
			}
		}
	}
	return false
}

// challengeRows reads `kubectl get challenges` (NAME STATE DOMAIN AGE).
func challengeRows(lines []string) []challengeRow {
	// A get of several kinds prints one table each: read the one of the
	// challenges.
	for i, l := range lines {
		if i > 0 && strings.HasPrefix(l, "NAME ") && strings.Contains(l, "DOMAIN") {
			return challengeRows(lines[i:])
		}
	}
	if len(lines) < 2 {
		return nil
	}
	head := strings.Fields(lines[0])
	ni, si, di, ai := slices.Index(head, "NAME"), slices.Index(head, "STATE"), slices.Index(head, "DOMAIN"), slices.Index(head, "AGE")
	if ni != 0 || di < 0 {
		return nil
	}
	var out []challengeRow
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) != len(head) {
			continue
		}
		// "challenge.acme.cert-manager.io/NAME" when several kinds were
		// listed.
		_, name, ok := strings.Cut(f[ni], "/")
		if !ok {
			name = f[ni]
		}
		r := challengeRow{name: name, domain: f[di]}
		if si >= 0 {
			r.state = f[si]
		}
		if ai >= 0 {
			r.age = kubectlAge(f[ai])
		}
		out = append(out, r)
	}
	return out
}

var ageUnitRE = regexp.MustCompile(`(\d+)([dhms])`)

// kubectlAge reads an AGE column ("24d", "2d3h", "38m").
func kubectlAge(s string) time.Duration {
	var d time.Duration
	for _, m := range findAllSubmatch(ageUnitRE, s, -1) {
		n, _ := strconv.Atoi(m[1])
		switch m[2] {
		case "d":
			d += time.Duration(n) * 24 * time.Hour
		case "h":
			d += time.Duration(n) * time.Hour
		case "m":
			d += time.Duration(n) * time.Minute
		case "s":
			d += time.Duration(n) * time.Second
		}
	}
	return d
}

func humanAge(d time.Duration) string {
	if d >= 48*time.Hour {
		return fmt.Sprintf("%d days", int(d.Hours()/24))
	}
	return d.Round(time.Minute).String()
}

func lastNonEmpty(lines []string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		if s := strings.TrimSpace(lines[i]); s != "" {
			return s
		}
	}
	return ""
}

func firstWord(s string) string {
	f, _, _ := strings.Cut(s, ",")
	return strings.TrimSpace(f)
}

// urlPrefix is "URL: ", or nothing without a URL.
func urlPrefix(u string) string {
	if u == "" {
		return ""
	}
	return u + ": "
}

// forDomains is " for DOMAINS", or nothing when the challenge's domains
// are not known: an answer never names an empty subject.
func forDomains(domains string) string {
	if strings.TrimSpace(domains) == "" {
		return ""
	}
	return " for " + domains
}

// waitsForSecret reports whether f is a pod waiting for the Secret secret
// to exist: a FailedMount or CreateContainerConfigError saying it is not
// found.
func waitsForSecret(f *Finding, secret string) bool {
	if secret == "" || f.Kind != KindConfigError && f.Kind != KindMountFailure {
		return false
	}
	return f.fact("missing") == "secret "+secret || strings.Contains(strings.ToLower(f.fact("message")+" "+strings.Join(f.Evidence, " ")), `secret "`+strings.ToLower(secret)+`" not found`) ||
		strings.Contains(strings.ToLower(strings.Join(f.Evidence, " ")), `secret \"`+strings.ToLower(secret)+`\" not found`)
}

// certificateSecrets reads the Secret each certificate is stored in from
// what the transcripts show of cert-manager's Certificates: a kubectl get
// table (NAME READY SECRET AGE, alone or among other kinds), a describe
// (Secret Name:) or a manifest (secretName:).
func certificateSecrets(cmds []evidence.CommandOutput) map[string]string {
	out := map[string]string{}
	for _, c := range cmds {
		cmd := strings.ToLower(c.Command)
		if !strings.Contains(cmd, "cert") {
			continue
		}
		described := ""
		if f := strings.Fields(c.Command); len(f) > 0 {
			for i := 0; i+2 < len(f); i++ {
				if (f[i] == "describe" || f[i] == "get") && strings.HasPrefix(strings.ToLower(f[i+1]), "certificate") && !strings.HasPrefix(f[i+2], "-") {
					described = f[i+2]
				}
			}
		}
		var head []string
		for _, l := range c.Lines {
			t := strings.TrimSpace(l)
			if t == "" {
				head = nil
				continue
			}
			fs := strings.Fields(t)
			if fs[0] == "NAME" {
				head = nil
				if slices.Contains(fs, "SECRET") && slices.Contains(fs, "READY") {
					head = fs
				}
				continue
			}
			if head != nil && len(fs) == len(head) {
				name := fs[0]
				if _, n, ok := strings.Cut(name, "/"); ok {
					if !strings.HasPrefix(name, "certificate") {
						continue
					}
					name = n
				}
				out[name] = fs[slices.Index(head, "SECRET")]
				continue
			}
			if described == "" {
				continue
			}
			if k, v, ok := strings.Cut(t, ":"); ok && (k == "Secret Name" || k == "secretName") && strings.TrimSpace(v) != "" {
				out[described] = strings.Trim(strings.TrimSpace(v), `"'`)
			}
		}
	}
	return out
}
