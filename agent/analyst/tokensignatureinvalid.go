package analyst

import (
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"
)

// KindTokenSignatureInvalid: a service that validates tokens (JWTs)
// rejects them because their signature does not verify against the
// public key it checks them with. The key is known (no "unknown kid"),
// it is the wrong one: the issuer signs with a key the validator does not
// hold. Most often the issuer rotated its signing key while the
// validator verifies with a key pinned in its configuration (a PEM file,
// a public-key setting) or a key set it never refetches; or the
// validator points at another issuer's keys. Every token issued with the
// new key is rejected (401), whatever the caller or the gateway does.
const KindTokenSignatureInvalid Kind = "token_signature_invalid"

var tokenSignatureInvalid = &mechanism{
	kind:  KindTokenSignatureInvalid,
	class: classCause,
	label: "tokens whose signature does not verify against the key the validator holds",
	// The validators' own words: Nimbus JOSE (Spring Security),
	// jsonwebtoken (Node), golang-jwt, PyJWT, jose4j, auth0 java-jwt,
	// jjwt, Microsoft IdentityModel; a generic "invalid signature" only
	// beside a token or JWT.
	lines:      tokenSignatureRE,
	lineWeight: 0.85,
	detect: func(ev *Gathered, found []Finding) []Finding {
		for i := range found {
			f := &found[i]
			if f.Kind != KindTokenSignatureInvalid {
				continue
			}
			if who, line, at := keyRotationSeen(ev, f.Time); line != "" {
				f.setFact("rotation", line)
				f.setFact("rotation_by", who)
				f.setFact("rotation_at", hm(at))
			}
		}
		return nil
	},
	// Only a change that rolls a signing key over triggers it: a
	// gateway or client release near the onset is a coincidence, the
	// rejection happens in the validator's signature check.
	strictTriggers: true,
	fitsChange:     changeSays(keyRolloverRE),
	describe: func(h *Hypothesis, sc Scope) string {
		who := orWord(h.fact("caller"), h.Subject)
		d := fmt.Sprintf("%s rejects the tokens it validates because their signature does not verify against the public key it checks them with", who)
		if l := h.fact("line"); l != "" {
			d += " (" + quote(clipMiddle(ReadableLine(l), 220), 230) + ")"
		}
		d += ": the tokens are signed with a signing key " + who + " does not hold"
		if r := h.fact("rotation"); r != "" {
			d += fmt.Sprintf(". The issuer rotated its signing key at %s (%s: %s), and %s still verifies with the old public key, pinned in its configuration or cached and never refetched", h.fact("rotation_at"), h.fact("rotation_by"), quote(rotationWords(r), 230), who)
		} else {
			d += ": the issuer rotated its signing key while " + who + " verifies with an old public key pinned in its configuration or never refetched, or it checks them against another issuer's keys"
		}
		d += "; every token signed with the new key fails with 401 whatever passes it on, so the callers and proxies in front of " + who + " are not the cause"
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		who := orWord(h.fact("caller"), h.Subject)
		r.high("Give %s the issuer's current public signing key: point it at the issuer's JWKS endpoint (jwk-set-uri, jwksUri) instead of a pinned key, or replace the pinned PEM with the new key and restart it", who)
		r.med("Until then, keep the old signing key active (and signing) at the issuer, or make it the active key again, so the tokens verify while %s is updated", who)
		r.low("Before rotating an issuer's signing key, list the validators that pin its public key; alert on token signature failures (401 by reason)")
	},
}

var (
	tokenSignatureRE = regexp.MustCompile(`(?i)Signed JWT rejected: Invalid signature|JsonWebTokenError: invalid signature|InvalidSignatureError|JWS signature is invalid|Token's Signature resulted invalid|JWT signature does not match locally computed signature|IDX10511: Signature validation failed|IDX10503: Signature validation failed` +
		`|\b(?:jwt|jws|token)\b[^\n]{0,120}?(?:signature is invalid|invalid signature|signature verification failed)` +
		`|(?:signature is invalid|invalid signature|signature verification failed)[^\n]{0,80}?\b(?:jwt|jws|token)\b`)

	// A token issuer's log saying it rotated or added a signing key:
	// Keycloak's admin event on a key provider, Dex's rotation, a
	// generic "signing key rotated".
	keyRotationLineRE = regexp.MustCompile(`(?i)org\.keycloak\.keys\.KeyProvider|\bkeys rotated\b|\brotat\w* (?:the |its )?(?:jwt |jwks? |token )?signing keys?\b|\bsigning keys? (?:was |were |has been )?rotated\b|\bnew signing key\b`)
)

// keyRotationSeen finds, in the logs gathered, a token issuer's line
// saying it rotated its signing key, at most a day before the rejections
// began (at) and not after them: the source it came from, the line and
// when.
func keyRotationSeen(ev *Gathered, at time.Time) (string, string, time.Time) {
	var who, line string
	var when time.Time
	for _, ls := range ev.Logs {
		for _, t := range ls.Templates {
			for _, l := range t.Lines() {
				if !matchLine(keyRotationLineRE, l) || matchLine(tokenSignatureRE, l) {
					continue
				}
				ts := t.FirstSeen
				if !at.IsZero() && !ts.IsZero() && (ts.After(at) || at.Sub(ts) > 24*time.Hour) {
					continue
				}
				// The latest rotation before the rejections.
				if line == "" || ts.After(when) {
					who, line, when = orWord(ls.Subject, ls.Source), l, ts
				}
				break
			}
		}
	}
	return strings.TrimSpace(who), line, when
}

// rotationWords is the part of an issuer's rotation line that says it:
// the words around the match, with the line's head (its time and level)
// when it fits.
func rotationWords(line string) string {
	l := strings.ReplaceAll(ReadableLine(line), `\"`, `"`)
	loc := keyRotationLineRE.FindStringIndex(l)
	if len(l) <= 220 || loc == nil {
		return clipMiddle(l, 220)
	}
	start, end := max(0, loc[0]-120), min(len(l), loc[1]+20)
	for start > 0 && !utf8.RuneStart(l[start]) {
		start++
	}
	for end < len(l) && !utf8.RuneStart(l[end]) {
		end++
	}
	w := l[start:end]
	if start > 0 {
		w = "…" + w
	}
	if end < len(l) {
		w += "…"
	}
	return w
}
