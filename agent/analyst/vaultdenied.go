package analyst

import (
	"fmt"
	"regexp"
	"strings"
)

// A Vault client (the Vault Agent injector's init container or sidecar,
// consul-template, envconsul, the vault CLI in an entrypoint) that logs in
// fine but is refused the secret it reads: Vault answers "Code: 403.
// Errors: * permission denied" when no policy of the token grants the
// capability on that path. The usual origin is a release that reads a new
// path (a shared secret instead of the app's own copy) while the role's
// policy still grants only the old one; the agent retries, gives up, and
// an init container that renders the secret exits, so the new pods stay
// in Init. Vault itself is healthy; the policy must grant the path (or the
// release go back to the path it grants).

// KindVaultDenied is a Vault read refused by the token's policies.
const KindVaultDenied Kind = "vault_denied"

var (
	// vaultPathRE is the path a Vault client read: vault-agent's and
	// consul-template's "vault.read(PATH)", the CLI's "Error reading
	// PATH:", the API URL "/v1/PATH".
	vaultPathRE = regexp.MustCompile(`(?i)\bvault\.read\(([^)\s]+)\)|\bError reading ([\w./-]+):|\bURL: (?:GET|PUT|POST|LIST) https?://[^\s/]+/v1/([\w./-]+)`)
	// vaultDeniedRE is Vault's refusal, on one line or across the lines
	// of its error (the code, then the error list).
	vaultDeniedRE = regexp.MustCompile(`(?i)Code: 403\.?[^*]*\*\s*(?:1 error occurred:\s*\*\s*)?permission denied`)
)

var vaultDenied = &mechanism{
	kind:      KindVaultDenied,
	class:     classCause,
	label:     "Vault read refused by the token's policy",
	fromCrash: vaultDeniedFromCrash,
	// The change that names the path (a release reading a new one) or
	// changes a Vault policy or role.
	fitsChange: changeSays(regexp.MustCompile(`(?i)\bvault\b|\bpolic(?:y|ies)\b|\bsecret/`)),
	related: func(h *Hypothesis, f *Finding) bool {
		switch f.Kind {
		case KindCrashLoop, KindRestarts, KindLogErrors, KindAuth, KindRolloutStuck:
			return strings.EqualFold(f.Subject, h.Subject)
		}
		return false
	},
	describe: func(h *Hypothesis, sc Scope) string {
		path := orWord(h.fact("secret"), "the secret it reads")
		d := fmt.Sprintf("%s cannot start: its Vault client (container %s) is refused %s — Vault answers 403 permission denied because no policy of the token it logged in with grants read on that path; Vault itself answers, and the login works, the policy does not cover the path",
			h.Subject, orWord(h.fact("container"), "the Vault agent"), path)
		d += h.quoteClause(": ", "line", 220)
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		path := orWord(h.fact("secret"), "the secret's path")
		r.high("Grant read on %s in the Vault policy of %s's role (vault policy read, then vault policy write with the path added), or point %s back to a path its policy grants; the pods start once the agent can read it", path, h.Subject, h.Subject)
		r.med("Before releasing a new secret path, check it as the app's role: vault token capabilities %s", path)
		r.low("Alert on 403 permission denied in the Vault agent's log and in Vault's audit log for %s's role", h.Subject)
	},
}

// vaultDeniedFromCrash reads a crashed container's last lines for a Vault
// read refused with 403 permission denied: the path, and the line.
func vaultDeniedFromCrash(crash Finding, c *containerState) (Finding, bool) {
	path, line := "", ""
	for i, l := range c.LastLines {
		m := findSubmatch(vaultPathRE, l.Text)
		if m == nil {
			continue
		}
		// The refusal follows within the error's few lines.
		var b strings.Builder
		for j := i; j < len(c.LastLines) && j < i+8; j++ {
			b.WriteString(c.LastLines[j].Text)
			b.WriteString(" ")
		}
		if !matchLine(vaultDeniedRE, b.String()) {
			continue
		}
		// The line naming the read (vault.read(PATH), Error reading
		// PATH) represents it rather than the URL of its error.
		if line == "" || !strings.HasPrefix(strings.TrimSpace(m[0]), "URL:") {
			path, line = firstGroup(m), strings.TrimSpace(l.Text)
		}
	}
	if path == "" {
		return Finding{}, false
	}
	f := crash
	f.Facts = nil
	f.Kind, f.Severity, f.Weight = KindVaultDenied, SevCritical, 0.93
	f.setFact("secret", path)
	f.setFact("line", line)
	f.setFact("container", c.Status.Name)
	f.Evidence = []string{fmt.Sprintf("container %s's last lines: Vault refused %s with 403 permission denied: %s", c.Status.Name, path, quote(line, 200))}
	f.Summary = fmt.Sprintf("%s: Vault read of %s denied (403 permission denied)", crash.Subject, path)
	return f, true
}
