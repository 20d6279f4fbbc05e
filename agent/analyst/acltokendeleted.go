package analyst

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// A client whose Consul ACL token no longer exists. Consul answers a
// request with a token it does not know (deleted, or the cluster's ACL
// state rebuilt) with 403 "ACL not found"; a token recreated under the
// same description is a new SecretID, and the client still holds the old
// one (a Kubernetes Secret written once). consul-template, envconsul and
// the Consul agents only warn and retry forever ("(view)
// kv.list(app/config): Unexpected response code: 403 (ACL not found)
// (retry attempt 1313 after \"1m0s\")"): the file they render is left as
// it was, so a value changed in Consul KV never reaches the process and
// nothing fails. The chain reads the servers' own lines that deleted and
// created the token of the same description ("agent.server.acl: deleting
// token: accessor=… description=\"pricing-engine (k8s sidecar)\"", then
// "created token"), the token list a command prints, and the change that
// replaced the tokens (a Terraform apply of the ACL configuration).

// KindACLTokenDeleted is a client refused by Consul because its ACL token
// no longer exists.
const KindACLTokenDeleted Kind = "acl_token_deleted"

var aclTokenDeleted = &mechanism{
	kind:   KindACLTokenDeleted,
	class:  classCause,
	label:  "a client's Consul ACL token no longer exists (403 ACL not found)",
	detect: func(ev *Gathered, _ []Finding) []Finding { return detectACLTokenDeleted(ev) },
	related: exceptOwnAndChanges(KindACLTokenDeleted, func(h *Hypothesis, f *Finding) bool {
		return strings.Contains(strings.Join(f.Evidence, " "), "ACL not found")
	}),
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		t := changeText(c)
		return strings.Contains(t, "token") || strings.Contains(t, "acl")
	},
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("%s's Consul ACL token no longer exists: Consul refuses its requests with 403 (ACL not found) since %s (%s)",
			h.Subject, h.fact("since"), quote(h.fact("line"), 200))
		if r := h.fact("renderer"); r != "" {
			d += fmt.Sprintf("; %s only warns and retries, so what it renders from Consul stays as it was and a value changed in Consul never reaches %s", r, h.Subject)
		}
		if del := h.fact("deleted"); del != "" {
			d += fmt.Sprintf(". The Consul servers deleted the token at %s and created a new one of the same description (%s) at %s: the token was recreated with a new SecretID, and %s still holds the old one",
				del, h.fact("token_description"), orWord(h.fact("created"), "the same time"), h.Subject)
		}
		if c := h.fact("change"); c != "" {
			d += fmt.Sprintf("; the change that replaced it: %s", c)
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Write the new token's SecretID (%s) into the Secret %s reads its Consul token from and restart it (or its sidecar); check the rendered file picks up the current values", orWord(h.fact("token_description"), "the recreated token"), h.Subject)
		r.med("Let the tool that manages the ACL tokens also write their SecretIDs where the clients read them (Vault's Consul secrets engine, a Terraform-managed Secret), so a recreated token cannot leave a client behind")
		r.low("Alert on 403 (ACL not found) from clients and on a rendered configuration older than its source")
	},
}

var (
	// aclNotFoundRE is Consul's refusal of a token it does not know.
	aclNotFoundRE = regexp.MustCompile(`(?i)\bACL (?:token )?not found\b`)
	// aclTokenEventRE is a Consul server deleting or creating a token
	// (its description quoted).
	aclTokenEventRE = regexp.MustCompile(`(?i)\b(deleting|deleted|created|creating) token\b.*description="([^"]+)"`)
	// renderersRE names the tools that render Consul data into files and
	// retry on errors.
	renderersRE = regexp.MustCompile(`(?i)\b(consul-template|envconsul|vault-agent|confd)\b|\(view\) kv\.`)
)

func detectACLTokenDeleted(ev *Gathered) []Finding {
	clients := map[string]*refusedClient{}
	renderer := map[string]string{}
	for set, t := range allTemplates(ev) {
		if set.Host {
			continue
		}
		l := templateLine(t, aclNotFoundRE)
		if l == "" {
			continue
		}
		c := tallyRefusal(clients, set, t.FirstSeen, t.LastSeen, max(t.Count, 1))
		c.keep(l)
		if renderer[set.Subject] == "" {
			for _, tt := range set.Templates {
				for _, x := range tt.Lines() {
					if m := findSubmatch(renderersRE, x); m != nil {
						renderer[set.Subject] = orWord(strings.ToLower(m[1]), "consul-template")
					}
				}
			}
		}
	}
	if len(clients) == 0 {
		return nil
	}
	names := mostRefused(clients)
	subject, c := names[0], clients[names[0]]
	f := Finding{Kind: KindACLTokenDeleted, Subject: subject, Namespace: c.ns, Time: c.first, Severity: SevCritical, Weight: 0.85,
		Source: SrcLogs, Object: "workload " + subject}
	f.addCount(c.n)
	f.setFact("line", ReadableLine(c.line))
	f.setFact("since", ts(c.first))
	f.setFact("renderer", renderer[subject])
	f.Evidence = append(f.Evidence, fmt.Sprintf("%s is refused by Consul from %s to %s (%d lines): %s", subject, ts(c.first), ts(c.last), c.n, quote(ReadableLine(c.line), 220)))
	// The servers' own lines: the token of the subject's description
	// deleted, then created again.
	var deleted, created time.Time
	desc := ""
	for set, t := range allTemplates(ev) {
		_ = set
		for _, l := range t.Lines() {
			m := findSubmatch(aclTokenEventRE, l)
			if m == nil || !strings.Contains(strings.ToLower(m[2]), strings.ToLower(subject)) {
				continue
			}
			at := t.FirstSeen
			switch strings.ToLower(m[1]) {
			case "deleting", "deleted":
				if deleted.IsZero() || at.Before(deleted) {
					deleted, desc = at, m[2]
					f.Evidence = append(f.Evidence, fmt.Sprintf("%s: %s", set.Source, quote(ReadableLine(l), 200)))
				}
			default:
				if created.IsZero() || at.Before(created) {
					created, desc = at, m[2]
					f.Evidence = append(f.Evidence, fmt.Sprintf("%s: %s", set.Source, quote(ReadableLine(l), 200)))
				}
			}
		}
	}
	if !deleted.IsZero() {
		f.setFact("deleted", ts(deleted))
		f.setFact("token_description", desc)
		if !created.IsZero() && !created.Before(deleted) {
			f.setFact("created", ts(created))
		}
	}
	// The change that replaced the tokens, at or just before the first
	// refusal.
	for _, ch := range append(append(ev.Earlier[:0:0], ev.Earlier...), ev.Changes...) {
		t := strings.ToLower(ch.Description)
		if (strings.Contains(t, "token") || strings.Contains(t, " acl")) && !ch.Timestamp.After(c.first) && c.first.Sub(ch.Timestamp) < 24*time.Hour {
			f.setFact("change", fmt.Sprintf("%s at %s (%s)", quote(ch.Description, 200), ts(ch.Timestamp), orWord(ch.Author, ch.Service)))
		}
	}
	f.Summary = fmt.Sprintf("%s: Consul refuses its token, 403 (ACL not found)", subject)
	return []Finding{f}
}
