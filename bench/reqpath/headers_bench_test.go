package reqpath

import (
	"bufio"
	"net/http"
	"strings"
	"testing"
)

// The header sections a Go client reads for the effective config: the
// bare server's (net/http's three) and rootcause's (the same three, the
// contract's six and the answer's validators), as sent on 2026-11-26,
// with a 10-byte body in place of the 200 KB one.
const (
	bareHeaders = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\nContent-Type: application/json\r\n" +
		"Date: Thu, 26 Nov 2026 10:01:19 GMT\r\n\r\n0123456789"
	productHeaders = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\nContent-Type: application/json\r\n" +
		"Date: Thu, 26 Nov 2026 10:01:19 GMT\r\nX-Request-Id: a4e8bf4db4fb6abc8dc8e7f126721e89\r\n" +
		"X-Rootcause-Version: dev\r\nX-Ratelimit-Limit: 1000000000\r\nX-Ratelimit-Remaining: 999999999\r\n" +
		"X-Ratelimit-Reset: 1795687280\r\nCache-Control: private, no-cache\r\n" +
		"Etag: \"JuOmqhIzgWEkug5Ogc2nlbLQ\"\r\nVary: Accept-Encoding\r\nX-Content-Type-Options: nosniff\r\n\r\n0123456789"
)

// BenchmarkClientReadsHeaders is the client's side of the headers: what
// net/http's client spends reading each header section above
// (http.ReadResponse, in process, no connection). The difference is work
// the load generator of BenchmarkRequestPath does for every rootcause
// answer and never for the bare server's, on the same two CPUs.
//
//	go test ./bench/reqpath -run '^$' -bench ClientReadsHeaders -count 3 -benchmem
func BenchmarkClientReadsHeaders(b *testing.B) {
	for _, c := range []struct{ name, raw string }{{"bare", bareHeaders}, {"rootcause", productHeaders}} {
		b.Run(c.name, func(b *testing.B) {
			r := strings.NewReader(c.raw)
			br := bufio.NewReader(r)
			b.ReportAllocs()
			for b.Loop() {
				r.Reset(c.raw)
				br.Reset(r)
				resp, err := http.ReadResponse(br, nil)
				if err != nil || resp.StatusCode != http.StatusOK || resp.ContentLength != 10 {
					b.Fatalf("%v, %v", resp, err)
				}
			}
		})
	}
}
