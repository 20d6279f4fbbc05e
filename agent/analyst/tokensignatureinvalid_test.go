package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
)

// TestTokenSignatureInvalid reads token signature failures as the
// validators print them, leaves an unknown kid, an expired token and a
// webhook's signature to other rules, and finds the issuer's rotation of
// its signing key in its own log.
func TestTokenSignatureInvalid(t *testing.T) {
	spring := `2026-07-22T10:03:05.120Z  WARN 1 --- [orders-api] [nio-8080-exec-1] o.s.s.o.s.r.a.JwtAuthenticationProvider  : Failed to authenticate since the JWT was invalid: An error occurred while attempting to decode the Jwt: Signed JWT rejected: Invalid signature`
	testLines(t, tokenSignatureInvalid, []lineCase{
		{spring, KindTokenSignatureInvalid},
		// jsonwebtoken (Node)
		{`{"level":50,"time":1784714585120,"msg":"auth failed","err":{"type":"JsonWebTokenError","message":"invalid signature","stack":"JsonWebTokenError: invalid signature\n    at /app/node_modules/jsonwebtoken/verify.js:171:19"}}`, KindTokenSignatureInvalid},
		// golang-jwt v5
		{`time=2026-07-22T10:03:05Z level=WARN msg="rejecting request" status=401 err="token signature is invalid: crypto/rsa: verification error"`, KindTokenSignatureInvalid},
		// PyJWT
		{`jwt.exceptions.InvalidSignatureError: Signature verification failed`, KindTokenSignatureInvalid},
		// jose4j, auth0 java-jwt, jjwt
		{`org.jose4j.jwt.consumer.InvalidJwtSignatureException: JWT rejected due to invalid signature. Additional details: [[9] Invalid JWS Signature: JsonWebSignature{"alg":"RS256","kid":"k1"}]`, KindTokenSignatureInvalid},
		{`com.auth0.jwt.exceptions.SignatureVerificationException: The Token's Signature resulted invalid when verified using the Algorithm: SHA256withRSA`, KindTokenSignatureInvalid},
		{`io.jsonwebtoken.security.SignatureException: JWT signature does not match locally computed signature. JWT validity cannot be asserted and should not be trusted.`, KindTokenSignatureInvalid},
		// Microsoft IdentityModel
		{`Microsoft.IdentityModel.Tokens.SecurityTokenInvalidSignatureException: IDX10511: Signature validation failed. Keys tried: 'Microsoft.IdentityModel.Tokens.RsaSecurityKey, KeyId: 'k1''.`, KindTokenSignatureInvalid},
		// Near misses: an unknown kid, an expired token, a webhook's
		// payload signature.
		{`Failed to authenticate since the JWT was invalid: An error occurred while attempting to decode the Jwt: Signed JWT rejected: Another algorithm expected, or no matching key(s) found`, KindSigningKeyUnknown},
		{`level=WARN msg="token validation failed" status=401 error="token has expired"`, KindAuth},
		{`stripe.error.SignatureVerificationError: No signatures found matching the expected signature for payload`, ""},
	})

	at := time.Date(2026, 7, 22, 10, 3, 5, 0, time.UTC)
	keycloak := `2026-07-22 09:58:12,413 INFO  [org.keycloak.events] (executor-thread-41) operationType="CREATE", realmName="corp", resourceType="COMPONENT", details="{\"name\":\"rsa-generated-2026\",\"providerId\":\"rsa-generated\",\"providerType\":\"org.keycloak.keys.KeyProvider\",\"config\":{\"active\":[\"true\"]}}"`
	dex := `time="2026-07-22T09:40:00Z" level=info msg="keys rotated, next rotation: 2026-07-22 15:40:00 +0000 UTC"`
	later := `2026-07-22 11:30:00,000 INFO  [org.keycloak.events] operationType="CREATE", resourceType="COMPONENT", details="{\"providerType\":\"org.keycloak.keys.KeyProvider\"}"`
	for _, c := range []struct {
		name, line, source string
		first              time.Time
		who, when          string
	}{
		{"keycloak admin event", keycloak, "keycloak", time.Date(2026, 7, 22, 9, 58, 12, 0, time.UTC), "keycloak", "09:58 UTC"},
		{"dex", dex, "dex", time.Date(2026, 7, 22, 9, 40, 0, 0, time.UTC), "dex", "09:40 UTC"},
		{"after the rejections", later, "keycloak", time.Date(2026, 7, 22, 11, 30, 0, 0, time.UTC), "", ""},
	} {
		ev := &Gathered{Logs: []LogSet{{Source: c.source + "-0", Subject: c.source, Templates: []analysis.LogTemplate{{Example: c.line, FirstSeen: c.first, Count: 1}}}}}
		found := []Finding{{Kind: KindTokenSignatureInvalid, Subject: "orders-api", Time: at, Facts: map[string]string{"line": spring}}}
		tokenSignatureInvalid.detect(ev, found)
		if got := found[0].fact("rotation_by"); got != c.who {
			t.Errorf("%s: rotation read from %q, want %q", c.name, got, c.who)
		}
		if got := found[0].fact("rotation_at"); got != c.when {
			t.Errorf("%s: rotation at %q, want %q", c.name, got, c.when)
		}
	}

	rotated := &Finding{Kind: KindConfigChange, Subject: "keycloak", Time: at.Add(-5 * time.Minute), Facts: map[string]string{"description": "corp realm: rotate signing keys (new RS256 key rsa-generated-2026 active)"}}
	gateway := &Finding{Kind: KindDeploy, Subject: "api-gateway", Time: at.Add(-8 * time.Minute), Facts: map[string]string{"description": "api-gateway 4.6.0: Envoy 1.31.3, new rate limit descriptors"}}
	h := &Hypothesis{Kind: KindTokenSignatureInvalid, Subject: "orders-api", Onset: at,
		Primary: []*Finding{{Kind: KindTokenSignatureInvalid, Subject: "orders-api", Time: at,
			Facts: map[string]string{"line": spring, "rotation": keycloak, "rotation_by": "keycloak", "rotation_at": "09:58 UTC"}}}}
	wantDescribed(t, h, Scope{}, "orders-api rejects the tokens", "Signed JWT rejected: Invalid signature", "rotated its signing key at 09:58 UTC", "keycloak:", "rsa-generated-2026", "old public key")
	if !tokenSignatureInvalid.fitsChange(h, rotated) || tokenSignatureInvalid.fitsChange(h, gateway) {
		t.Errorf("the key rotation must fit and the gateway release must not")
	}
	if recs := recommend(h, Scope{}); len(recs) == 0 || !strings.Contains(recs[0].Action, "public signing key") {
		t.Errorf("recommendations %v do not start with giving the validator the current key", recs)
	}
}
