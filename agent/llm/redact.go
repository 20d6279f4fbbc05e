package llm

import (
	"regexp"
	"sort"
	"strings"
)

// redacted replaces every secret removed from text sent to the model.
const redacted = "[REDACTED]"

// secretPatterns match values that look like credentials. Each pattern's
// first group (when it has one) is kept: it is the name of the secret, and
// the model may need to know that, say, DB_PASSWORD was set.
var secretPatterns = []*regexp.Regexp{
	// PEM private keys, also inside JSON strings (escaped newlines).
	regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY-----`),
	// Authorization headers and bearer tokens.
	regexp.MustCompile(`(?i)(\bauthorization\\?"?\s*[:=]\s*\\?"?\s*(?:bearer|basic|token|apikey)?\s*)[^\s"\\,;}]+`),
	regexp.MustCompile(`(?i)(\bbearer\s+)[A-Za-z0-9\-._~+/]{8,}=*`),
	// Kubernetes env entries: {"name": "DB_PASSWORD", "value": "..."}.
	regexp.MustCompile(`(?i)("name"\s*:\s*"[^"]*(?:pass(?:word|wd)?|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|credential)[^"]*"\s*,\s*"value"\s*:\s*")(?:[^"\\]|\\.)*`),
	// key=value and "key": "value" where the key names a secret.
	regexp.MustCompile(`(?i)(\b[A-Za-z0-9_.\-]*(?:password|passwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|client[_-]?secret)[A-Za-z0-9_.\-]*\\?"?\s*[:=]\s*\\?"?)[^\s"\\,;&}]{4,}`),
	// rootcause tokens.
	regexp.MustCompile(`\badmin\.[A-Za-z0-9_\-.]{16,}`),
	regexp.MustCompile(`\brct_[A-Za-z0-9_\-.]{16,}`),
	// Cloud and SaaS credentials with a recognisable shape.
	regexp.MustCompile(`\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b`),
	regexp.MustCompile(`\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}`),
	regexp.MustCompile(`\bgithub_pat_[A-Za-z0-9_]{20,}`),
	regexp.MustCompile(`\bglpat-[A-Za-z0-9_\-]{20,}`),
	regexp.MustCompile(`\bxox[abposr]-[A-Za-z0-9\-]{10,}`),
	regexp.MustCompile(`\bsk-(?:ant-)?[A-Za-z0-9_\-]{20,}`),
	// JWTs.
	regexp.MustCompile(`\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}`),
	// Credentials in URLs: scheme://user:password@host.
	regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.\-]*://[^\s:/@"]+:)[^\s@/"]+(@)`),
}

// redactor removes secrets from text before it is sent to a model: known
// secret values (the API key and any value the integrator registers, such as
// resolved references) verbatim, then everything that matches
// secretPatterns.
type redactor struct {
	known []string // longest first
}

func newRedactor(known ...string) *redactor {
	r := &redactor{}
	for _, k := range known {
		// Very short values would redact ordinary words.
		if len(strings.TrimSpace(k)) >= 6 {
			r.known = append(r.known, k)
		}
	}
	sort.Slice(r.known, func(i, j int) bool { return len(r.known[i]) > len(r.known[j]) })
	return r
}

// redact returns s without secrets.
func (r *redactor) redact(s string) string {
	for _, k := range r.known {
		s = strings.ReplaceAll(s, k, redacted)
	}
	for _, re := range secretPatterns {
		if re.NumSubexp() == 0 {
			s = re.ReplaceAllLiteralString(s, redacted)
			continue
		}
		s = re.ReplaceAllStringFunc(s, func(m string) string {
			sub := re.FindStringSubmatch(m)
			out := sub[1] + redacted
			if len(sub) > 2 {
				out += sub[2]
			}
			return out
		})
	}
	return s
}
