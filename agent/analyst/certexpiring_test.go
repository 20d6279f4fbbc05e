package analyst

import (
	"strings"
	"testing"
)

func TestCertExpiring(t *testing.T) {
	cases := []struct {
		facts map[string]string
		want  []string
	}{
		{map[string]string{"certificate": "shop/api-tls", "hosts": "api.shop.example", "expires_in": "3d", "not_after": "2026-03-04T09:00:00Z",
			"renewal_error": `Failed to finalize Order: 429 urn:ietf:params:acme:error:rateLimited: Error finalizing order :: too many certificates already issued for "shop.example"`},
			[]string{"the TLS certificate shop/api-tls (served at api.shop.example) expires in 3d, at 2026-03-04T09:00:00Z", "its renewal is failing", "rateLimited", "Nothing is down yet"}},
		{map[string]string{"expires_in": "20h"}, []string{"the TLS certificate api expires in 20h", "it has not been renewed"}},
	}
	for _, c := range cases {
		h := &Hypothesis{Kind: KindCertExpiring, Subject: "api", Primary: []*Finding{{Kind: KindCertExpiring, Subject: "api", Facts: c.facts}}}
		wantDescribed(t, h, Scope{}, c.want...)
		if recs := recommend(h, Scope{}); len(recs) != 3 || !strings.HasPrefix(recs[0].Action, "Renew the certificate") {
			t.Errorf("recommendations %v", recs)
		}
	}
}
