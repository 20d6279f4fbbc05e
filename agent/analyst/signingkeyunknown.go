package analyst

import (
	"fmt"
	"regexp"
	"strings"
)

// KindSigningKeyUnknown: a service that validates tokens (JWTs) rejects
// the ones signed with a key it does not know: the token's kid is not in
// the key set (JWKS) it fetched from the issuer and cached. The issuer
// rolled its signing key over and the validator did not refetch its key
// set on an unknown kid: every new token is rejected (401) while tokens
// signed with the old key, already issued, still pass.
const KindSigningKeyUnknown Kind = "signing_key_unknown"

var signingKeyUnknown = &mechanism{
	kind:  KindSigningKeyUnknown,
	class: classCause,
	label: "tokens signed with a key missing from the cached key set (JWKS)",
	// The validators' own words: a Go service's log and lestrrat-go/jwx
	// and MicahParks/keyfunc, Envoy's jwt_authn, Nimbus JOSE (Spring
	// Security), node-jwks-rsa and PyJWT, panva/jose, Microsoft
	// IdentityModel.
	lines:      regexp.MustCompile(`(?i)\bkid\b[^\n]{0,60}?\bnot (?:found )?in (?:the )?(?:cached )?(?:JWKS|key ?set)|kid [^\n]{0,40}\bnot found\b|failed to find key with key ID|key ID was not found in the JWKS|Jwks doesn't have key to match kid|no matching key\(s\) found|Unable to find a signing key that matches|JWKSNoMatchingKey|no applicable key found in the JSON Web Key Set|IDX10501: Signature validation failed\. Unable to match key|IDX10516: Signature validation failed\. Unable to match key`),
	lineWeight: 0.85,
	fitsChange: changeSays(keyRolloverRE),
	describe: func(h *Hypothesis, sc Scope) string {
		who := orWord(h.fact("caller"), h.Subject)
		line := h.fact("line")
		kid := tokenKid(line)
		d := fmt.Sprintf("%s rejects the tokens it validates because they are signed with a key it does not know", who)
		if kid != "" {
			d = fmt.Sprintf("%s rejects the tokens it validates because they are signed with key kid %s, which is not in the key set (JWKS) it cached", who, kid)
		}
		if ks := cachedKeys(line); ks != "" {
			d += " (it holds " + ks + ")"
		}
		if at := keysFetched(line); at != "" {
			d += ", fetched at " + at
		}
		d += ": the issuer signs new tokens with a key it rotated in after " + who + " fetched its key set, and " + who + " has not refetched it on the unknown kid, so every newly issued token fails validation (401) while tokens signed with an older key still pass"
		if line != "" {
			d += " — " + quote(ReadableLine(line), 220)
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		who := orWord(h.fact("caller"), h.Subject)
		r.high("Make %s fetch the issuer's JWKS now (force a key-set refresh or restart it) so that it learns the new signing key", who)
		r.med("Refetch the JWKS on an unknown kid (rate-limited) instead of only on a fixed schedule, and refresh it more often than the issuer rolls keys")
		r.low("Alert on token validation failures by reason (unknown kid) and follow the issuer's key-rollover notices")
	},
}

var (
	// A change that rolls a token issuer's signing key over.
	keyRolloverRE = regexp.MustCompile(`(?i)signing key|key (?:rollover|roll-over|rotation)|rotat\w* (?:the |its )?(?:signing )?keys?|\bkid\b|\bjwks\b|token signing cert`)
	kidRE         = regexp.MustCompile(`(?i)\bkid\b[:= ]*\\?["']?([\w.:-]{3,})`)
	fetchedRE     = regexp.MustCompile(`(?i)\b(?:fetched|refreshed|loaded)(?: at)?[:= ]+([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z?)`)
	cachedKeysRE  = regexp.MustCompile(`(?i)\bkeys?[:=]\s*\[?([\w.-]+(?:,\s*[\w.-]+)*)`)
)

// tokenKid is the key ID a validation failure names.
func tokenKid(line string) string {
	for _, m := range findAllSubmatch(kidRE, line, -1) {
		if k := strings.Trim(m[1], `\"'`); k != "" && !strings.EqualFold(k, "or") && !strings.EqualFold(k, "not") {
			return k
		}
	}
	return ""
}

// cachedKeys is the list of key IDs the validator says it holds.
func cachedKeys(line string) string {
	if m := findSubmatch(cachedKeysRE, line); m != nil && strings.Contains(line, "kid") {
		return "keys " + m[1]
	}
	return ""
}

// keysFetched is when the validator says it fetched its key set.
func keysFetched(line string) string {
	if m := findSubmatch(fetchedRE, line); m != nil {
		return m[1]
	}
	return ""
}
