package analyst

import "testing"

func TestCalleeFailure(t *testing.T) {
	cases := []struct{ line, want string }{
		// pino with an Axios error (Node.js).
		{`{"level":50,"time":1794994348391,"reqId":"req-2a320a65","route":"/api/cart/summary","err":{"type":"AxiosError","message":"Request failed with status code 500","code":"ERR_BAD_RESPONSE","config":{"url":"http://loyalty-service.shop.svc.cluster.local:8080/v1/members/874737/points"}},"statusCode":500,"msg":"GET /api/cart/summary failed"}`, "loyalty-service"},
		// Spring RestTemplate.
		{`2026-11-18 09:32:01.113 ERROR 1 --- [nio-8080-exec-3] c.n.c.CartClient : I/O error: 503 Service Unavailable on GET request for "http://inventory.shop:8080/v1/stock": status code 503`, "inventory"},
		// Go: an upstream's answer.
		{`level=error msg="call failed" url=https://tax-service.commerce.svc.cluster.local/v2/quote status=502`, "tax-service"},
		{`ERROR httpx.HTTPStatusError: Server error '504 Gateway Timeout' for url 'http://kyc-service:8000/v1/check' HTTP 504`, "kyc-service"},
		// A structured field names the upstream (NestJS JSON, logfmt).
		{`{"level":"error","context":"SignupController","message":"identity verification failed","upstream":"kyc-service","status":503,"error":"provider_unavailable","durationMs":10041}`, "kyc-service"},
		{`level=error msg="reserve failed" peer.service=inventory-reservation status=500`, "inventory-reservation"},
		// Not a callee's server error: a client error, no URL, an address,
		// a database URL, the service's own response status with no URL.
		{`Request failed with status code 404 url=http://catalog:8080/v1/items/9`, ""},
		{`GET /api/cart/summary 500 12ms`, ""},
		{`request to http://10.0.4.17:8080/v1/x failed: status code 500`, ""},
		{`{"level":"error","msg":"handler failed","statusCode":500,"route":"/api/checkout"}`, ""},
		{`connection to postgres://app@orders-db:5432/orders failed, status 500`, ""},
		{`dial tcp: lookup http://payments: no such host`, ""},
		{`{"level":"error","upstream":"kyc-service","status":429}`, ""},
	}
	for _, c := range cases {
		if got := calleeFailure(c.line); got != c.want {
			t.Errorf("calleeFailure(%.70q) = %q, want %q", c.line, got, c.want)
		}
	}
}
