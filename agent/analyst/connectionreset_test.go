package analyst

import (
	"strings"
	"testing"
)

func TestConnectionReset(t *testing.T) {
	testLines(t, connReset, []lineCase{
		{`read tcp 10.0.3.17:51234->10.0.5.9:6379: read: connection reset by peer`, KindConnReset},
		{`Error: read ECONNRESET at TCP.onStreamRead (node:internal/stream_base_commons:217:20)`, KindConnReset},
		{`write tcp 10.0.3.17:8080->10.0.1.4:40112: write: broken pipe`, KindConnReset},
		{`I/O error on POST request for "http://ledger.svc:8080/v1/postings": Connection reset; nested exception is java.net.SocketException: Connection reset`, KindConnReset},
		{`Caused by: java.net.SocketException: Connection reset`, KindConnReset},
		{`urllib3.exceptions.ProtocolError: ('Connection aborted.', ConnectionResetError(104, 'Connection reset by peer'))`, KindConnReset},
		{`Error: socket hang up at connResetException (node:internal/errors:720:14)`, KindConnReset},
		{`System.Net.Sockets.SocketException (10054): An existing connection was forcibly closed by the remote host.`, KindConnReset},
		{`curl: (56) Recv failure: Connection reset by peer`, KindConnReset},
		{`connection established to 10.0.5.9:6379`, ""},
		{`pool: 3 connection resets recovered after retry`, ""},
	})
	h := &Hypothesis{Kind: KindConnReset, Subject: "redis", Primary: []*Finding{{Kind: KindConnReset, Subject: "redis",
		Facts: map[string]string{"caller": "cart", "target": "redis", "line": `read tcp 10.0.3.17:51234->10.0.5.9:6379: read: connection reset by peer`}}}}
	d := describe(h, Scope{})
	if !strings.Contains(d, "connections from cart to redis are reset (connection reset by peer)") {
		t.Errorf("description %q", d)
	}
	if recs := recommend(h, Scope{}); len(recs) != 2 || !strings.Contains(recs[0].Action, "Check redis for restarts") {
		t.Errorf("recommendations %v", recs)
	}
	for _, c := range networkChanges {
		if got := connReset.fitsChange(h, &c.c); got != c.fits {
			t.Errorf("fitsChange(%s %q) = %v", c.c.Kind, c.c.Summary, got)
		}
	}
}
