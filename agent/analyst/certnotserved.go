package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/rootcause/rootcause/finding"
)

// KindCertNotServed: a certificate close to its expiry that nothing
// serves: the Secret holding it is referenced by no Ingress, Gateway or
// route, while what the hosts do serve is valid for long. The expiry alert
// (an exporter watching every Secret) is true of the file and false of
// the service: nothing breaks when it expires.
const KindCertNotServed Kind = "cert_not_served"

// Before an expiring certificate is called a threat, which Secrets the
// Ingresses and Gateways reference, and what the hosts serve, are checked:
// a leftover Secret (an import before a move to cert-manager, a renamed
// certificate's old Secret) keeps firing the exporter's alert.
var certNotServed = &mechanism{
	kind:   KindCertNotServed,
	class:  classCause,
	label:  "expiring certificate in a Secret nothing serves (alert true of the Secret only)",
	detect: detectCertNotServed,
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("the expiring certificate %s (not after %s) is in the Secret %s, which no Ingress or Gateway references: a leftover, not in use", orWord(h.fact("certificate"), h.Subject), orDash(h.fact("not_after")), h.fact("secret"))
		if r := h.fact("referenced"); r != "" {
			d += fmt.Sprintf(" (the Ingresses and Gateways reference %s)", r)
		}
		d += h.clause("; what is served is valid: ", "served")
		d += ". Nothing breaks when it expires: the alert is true of that Secret only, no renewal is needed for serving"
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.add(finding.PriorityHigh, fmt.Sprintf("No renewal needed for serving: confirm nothing mounts or references the Secret %s (Ingresses, Gateways, pods' volumes), then delete it so the alert stops", h.fact("secret")))
		r.add(finding.PriorityMedium, "Keep the served certificate's renewal watched (cert-manager Certificate Ready, the probe's certificate expiry) rather than every Secret's")
		r.add(finding.PriorityLow, "Scope the certificate-expiry alert to the Secrets that Ingresses and Gateways reference, or label leftovers to exclude them")
	},
}

var (
	// The kinds that reference a Secret to serve it.
	servingKindRE = regexp.MustCompile(`(?i)^(ingress(es)?|ing|gateways?|gtw|httproutes?|virtualservices?|ingressroutes?|tlsroutes?)$`)
	// A Secret named in a Gateway's or route's YAML or describe output.
	secretRefRE = regexp.MustCompile(`(?i)(?:secretName|credentialName|certificateRefs?.*?name|tls\.secret)\s*[:=]\s*"?([a-z0-9][a-z0-9.-]*)`)
	// A "name:" line of YAML.
	yamlNameRE = regexp.MustCompile(`^[\s-]*name:\s*"?([a-z0-9][a-z0-9.-]*)`)
	// kubectl describe ingress: "  shop-tls terminates shop.example.com".
	terminatesRE = regexp.MustCompile(`^\s+([a-z0-9][a-z0-9.-]*) terminates\b`)
	// The header of a table column naming Secrets (custom-columns TLS).
	secretColumnRE = regexp.MustCompile(`^(?i)(TLS|SECRETS?|SECRETNAME|TLS_SECRET|CERT(IFICATE)?S?|CREDENTIAL(NAME)?)$`)
	// openssl s_client's connect target and x509's enddate.
	sClientRE         = regexp.MustCompile(`s_client\b.*?-connect\s+([^\s:]+)`)
	sClientNotAfterRE = regexp.MustCompile(`^\s*notAfter=(.+?)\s*$`)
)

// detectCertNotServed checks each expiring certificate that a Secret holds
// against the Secrets the Ingresses and Gateways reference; when they are
// known and none is it, the certificate is not served.
func detectCertNotServed(ev *Gathered, found []Finding) []Finding {
	refs, known := servedSecrets(ev)
	if len(known) == 0 {
		return nil
	}
	var out []Finding
	for i := range found {
		c := &found[i]
		if c.Kind != KindCertExpiring || c.fact("secrets") == "" {
			continue
		}
		var unused []string
		for _, s := range strings.Split(c.fact("secrets"), ",") {
			ns, _, _ := strings.Cut(s, "/")
			if !secretReferenced(refs, s) && (known["*"] || known[ns]) {
				unused = append(unused, s)
			}
		}
		// Every Secret holding it must be unreferenced.
		if len(unused) != len(strings.Split(c.fact("secrets"), ",")) {
			continue
		}
		f := Finding{Kind: KindCertNotServed, Subject: c.Subject, Object: "secret " + unused[0], Namespace: c.Namespace, Time: c.Time,
			Severity: SevInfo, Weight: 0.85, Source: c.Source, Related: c.Related}
		f.setFact("certificate", c.fact("certificate"))
		f.setFact("not_after", c.fact("not_after"))
		f.setFact("secret", strings.Join(unused, ", "))
		var names []string
		for _, r := range refs {
			names = append(names, r[strings.LastIndexByte(r, '/')+1:])
		}
		slices.Sort(names)
		names = slices.Compact(names)
		f.setFact("referenced", strings.Join(names, ", "))
		f.Evidence = append(f.Evidence, c.Evidence...)
		f.Evidence = append(f.Evidence, fmt.Sprintf("no Ingress or Gateway references the Secret %s; they reference %s", strings.Join(unused, ", "), orWord(strings.Join(names, ", "), "none")))
		if sv, left := servedValid(ev, c); sv != "" {
			f.setFact("served", sv)
			f.Evidence = append(f.Evidence, "served: "+sv)
			if left > 30*24*time.Hour {
				// What the hosts serve is valid for long: the
				// refutation is direct.
				f.Weight = 0.95
			}
		}
		f.Summary = fmt.Sprintf("certificate %s expiring in Secret %s, which nothing references", c.fact("certificate"), strings.Join(unused, ", "))
		out = append(out, f)
	}
	return out
}

// servedSecrets lists the Secrets ("namespace/name", or "/name" when a
// command did not say the namespace) that the Ingresses, Gateways and
// routes reference: those of the Ingress objects read, and the names in
// the outputs of commands that listed or showed them. known holds the
// namespaces whose references were read ("*" for all, from -A): nothing
// can be refuted elsewhere.
func servedSecrets(ev *Gathered) (refs []string, known map[string]bool) {
	known = map[string]bool{}
	for _, in := range ev.K8s.Ingresses {
		known[in.Namespace] = true
		for _, t := range in.Spec.TLS {
			if t.SecretName != "" {
				refs = append(refs, in.Namespace+"/"+t.SecretName)
			}
		}
	}
	for _, c := range ev.Commands {
		ns, ok := servingCommand(c.Command)
		if !ok {
			continue
		}
		known[orWord(ns, orWord(c.Namespace, ev.Scope.Namespace))] = true
		col := -1   // the column of a table that names Secrets
		after := -9 // the line of a Gateway's certificateRefs:
		for i, l := range c.Lines {
			if strings.Contains(l, "certificateRefs:") {
				after = i
				continue
			}
			if m := findSubmatch(yamlNameRE, l); m != nil && i-after <= 3 {
				refs = append(refs, "/"+m[1])
				continue
			}
			if m := findSubmatch(secretRefRE, l); m != nil {
				refs = append(refs, "/"+m[1])
				continue
			}
			if m := findSubmatch(terminatesRE, l); m != nil {
				refs = append(refs, "/"+m[1])
				continue
			}
			fields := strings.Fields(l)
			if col < 0 {
				for i, h := range fields {
					if matchLine(secretColumnRE, h) {
						col = i
					}
				}
				continue
			}
			if col < len(fields) {
				for _, x := range strings.Split(fields[col], ",") {
					if x != "" && x != "<none>" {
						refs = append(refs, "/"+x)
					}
				}
			}
		}
	}
	for i, r := range refs {
		refs[i] = strings.ToLower(r)
	}
	return refs, known
}

// servingCommand reports whether a command gets or describes Ingresses,
// Gateways or routes (kubectl get ingress, kubectl -n web describe
// gateway/public), and the namespace it names ("*" for all).
func servingCommand(cmd string) (ns string, ok bool) {
	fs := strings.Fields(cmd)
	verb := false
	for i := 0; i < len(fs); i++ {
		f := fs[i]
		switch {
		case f == "-A" || f == "--all-namespaces":
			ns = "*"
		case f == "-n" || f == "--namespace":
			if i+1 < len(fs) {
				ns = fs[i+1]
				i++
			}
		case strings.HasPrefix(f, "--namespace="):
			ns = strings.TrimPrefix(f, "--namespace=")
		case f == "|":
			fs = fs[:i]
		case f == "get" || f == "describe":
			verb = true
		case verb && !ok && !strings.HasPrefix(f, "-"):
			for _, k := range strings.Split(f, ",") {
				k, _, _ = strings.Cut(k, "/")
				k, _, _ = strings.Cut(k, ".")
				if matchLine(servingKindRE, k) {
					ok = true
				}
			}
			if !ok {
				return "", false
			}
		case verb && strings.HasPrefix(f, "-") && !strings.Contains(f, "=") && len(fs) > i+1 && (f == "-o" || f == "-l" || f == "--context" || f == "--output" || f == "--selector"):
			i++
		}
	}
	return ns, ok
}

// secretReferenced reports whether the Secret ("namespace/name") is among
// refs (a ref without a namespace matches any).
func secretReferenced(refs []string, secret string) bool {
	ns, name, _ := strings.Cut(secret, "/")
	for _, r := range refs {
		rns, rname, _ := strings.Cut(r, "/")
		if rname == name && (rns == "" || ns == "" || rns == ns) {
			return true
		}
	}
	return false
}

// servedValid is what the hosts serve, when the evidence shows it: the
// notAfter openssl s_client printed for a host, or a probe's
// certificate expiry; with how long it is still valid.
func servedValid(ev *Gathered, c *Finding) (string, time.Duration) {
	now := ev.Window.End
	for _, cmd := range ev.Commands {
		m := findSubmatch(sClientRE, cmd.Command)
		if m == nil {
			continue
		}
		for _, l := range cmd.Lines {
			if n := findSubmatch(sClientNotAfterRE, l); n != nil {
				if t, err := time.Parse("Jan _2 15:04:05 2006 MST", strings.Join(strings.Fields(n[1]), " ")); err == nil {
					return fmt.Sprintf("%s serves a certificate valid until %s (openssl s_client)", m[1], ts(t)), t.Sub(now)
				} else if t, err := time.Parse("Jan 2 15:04:05 2006 MST", strings.Join(strings.Fields(n[1]), " ")); err == nil {
					return fmt.Sprintf("%s serves a certificate valid until %s (openssl s_client)", m[1], ts(t)), t.Sub(now)
				}
			}
		}
	}
	// A probe of an endpoint whose certificate expires much later.
	for _, ms := range ev.Metrics {
		if !isCertExpiryMetric(ms.Name) {
			continue
		}
		for _, s := range ms.Series {
			in := firstLabel(s.Labels, "instance", "target", "host", "domain", "server_name")
			if in == "" || firstLabel(s.Labels, "secret_name") != "" {
				continue
			}
			p, ok := lastPoint(s.Points)
			if !ok || p.V < 1e9 {
				continue
			}
			t := time.Unix(int64(p.V), 0).UTC()
			if t.Sub(now) > 30*24*time.Hour {
				return fmt.Sprintf("%s serves a certificate valid until %s (%s)", in, ts(t), ms.Name), t.Sub(now)
			}
		}
	}
	return "", 0
}
