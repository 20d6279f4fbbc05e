package analyst

import (
	"strings"
	"testing"
	"time"
)

// TestSigningKeyUnknown reads token validation failures on a key the
// validator's cached key set lacks, as the validators print them, and
// leaves other 401s and a gateway's own refetch to other rules.
func TestSigningKeyUnknown(t *testing.T) {
	session := `2026-07-22T10:02:13.551391196Z time=2026-07-22T10:02:13.551Z level=WARN msg="token validation failed" path=/v1/sessions status=401 error="kid \"idp-2026-07b\" not found in cached JWKS (keys: idp-2026-04a, idp-2026-07a; fetched 2026-07-21T23:40:12Z)" client_ip=10.61.8.10`
	testLines(t, signingKeyUnknown, []lineCase{
		{session, KindSigningKeyUnknown},
		// lestrrat-go/jwx, MicahParks/keyfunc
		{`{"level":"error","msg":"invalid token","error":"failed to find key with key ID \"k2\" in key set"}`, KindSigningKeyUnknown},
		{`level=error msg="jwt parse failed" err="token is unverifiable: error while executing keyfunc: the given key ID was not found in the JWKS"`, KindSigningKeyUnknown},
		// Envoy jwt_authn's answer
		{`[2026-07-22 10:02:30.210][1][debug][jwt] [source/extensions/filters/http/jwt_authn/authenticator.cc:305] Jwt authentication completed with: Jwks doesn't have key to match kid or alg from Jwt`, KindSigningKeyUnknown},
		// Spring Security (Nimbus)
		{`2026-07-22T10:03:01.114Z DEBUG 1 --- [nio-8080-exec-3] o.s.s.o.s.r.a.JwtAuthenticationProvider  : Failed to authenticate since the JWT was invalid: An error occurred while attempting to decode the Jwt: Signed JWT rejected: Another algorithm expected, or no matching key(s) found`, KindSigningKeyUnknown},
		// node-jwks-rsa, PyJWT, panva/jose
		{`SigningKeyNotFoundError: Unable to find a signing key that matches 'idp-2026-07b'`, KindSigningKeyUnknown},
		{`jwt.exceptions.PyJWKClientError: Unable to find a signing key that matches: "idp-2026-07b"`, KindSigningKeyUnknown},
		{`JWKSNoMatchingKey: no applicable key found in the JSON Web Key Set`, KindSigningKeyUnknown},
		// Microsoft IdentityModel
		{`Microsoft.IdentityModel.Tokens.SecurityTokenSignatureKeyNotFoundException: IDX10501: Signature validation failed. Unable to match key: kid: 'idp-2026-07b'.`, KindSigningKeyUnknown},
		// Near misses: a gateway that refetches on the unknown kid works;
		// an expired token and a plain 401 are other failures.
		{`[2026-07-22 10:02:30.206][1][warning][jwt] [source/extensions/filters/http/jwt_authn/authenticator.cc:236] Jwks remote fetch is triggered: kid idp-2026-07b not in cache`, ""},
		{`level=WARN msg="token validation failed" status=401 error="token has expired"`, KindAuth},
		{`POST /v1/sessions 401 Unauthorized`, ""},
	})
	at := time.Date(2026, 7, 22, 10, 3, 0, 0, time.UTC)
	rollover := &Finding{Kind: KindInfraChange, Subject: "login.acme-id.com", Time: at.Add(-time.Minute),
		Facts: map[string]string{"description": "Identity provider: scheduled signing key rollover, new tokens signed with kid idp-2026-07b"}}
	deploy := &Finding{Kind: KindDeploy, Subject: "account-web", Time: at.Add(-20 * time.Minute), Facts: map[string]string{"description": "account-web 14.2.0: new login page illustration"}}
	h := &Hypothesis{Kind: KindSigningKeyUnknown, Subject: "session-api", Onset: at, Trigger: rollover,
		Primary: []*Finding{{Kind: KindSigningKeyUnknown, Subject: "session-api", Time: at, Facts: map[string]string{"caller": "session-api", "line": session}}}}
	wantDescribed(t, h, Scope{}, "session-api rejects the tokens", "kid idp-2026-07b", "keys idp-2026-04a, idp-2026-07a", "fetched at 2026-07-21T23:40:12Z", "has not refetched it")
	if !signingKeyUnknown.fitsChange(h, rollover) || signingKeyUnknown.fitsChange(h, deploy) {
		t.Errorf("the key rollover must fit and the page deploy must not")
	}
	if recs := recommend(h, Scope{}); len(recs) == 0 || !strings.Contains(recs[0].Action, "JWKS") {
		t.Errorf("recommendations %v do not start with refetching the JWKS", recs)
	}
}
