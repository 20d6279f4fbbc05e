package analyst

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestThreadsHeld: a server whose request threads are all busy while
// nearly all of them wait in one client call is held by that callee: read
// from a thread dump as the runtimes print it (jcmd Thread.print and
// jstack of Tomcat and Jetty, a Go goroutine dump, py-spy dump of gunicorn
// threads) or from the counts grep -c took of one, with the pool's gauges
// at their maximum or the server's own word that it has no thread left.
// The callee is named from the frame's client class (a known service of
// the same words wins); who fills the threads from a caller's log naming
// the server with long calls. Only a dump (or its counts) shows the
// threads waiting on the callee: without one, a timeout to a slow callee
// in the server's log names it, weaker and without "why". Threads spread
// over many frames, a dump with the pool not full, or a full pool with
// nothing read of what its threads wait on are not it.
func TestThreadsHeld(t *testing.T) {
	w := testWindow()
	on := w.Start.Add(10 * time.Minute)
	step := stepAt(on)
	gauges := func(subject, busy, maxName string, before, after, limit float64) []MetricSet {
		l := evidence.Labels{"application": subject, "pod": subject + "-5c8f7d9b6-6jlqw"}
		if strings.HasPrefix(busy, "tomcat") {
			l["name"] = "http-nio-8080"
		}
		return []MetricSet{
			{Name: busy, Class: MetricSaturation, Series: []evidence.Series{wseries(w, l, step(before, after))}},
			{Name: maxName, Class: MetricState, Series: []evidence.Series{wseries(w, l, step(limit, limit))}},
		}
	}
	logs := func(subject string, lines ...string) LogSet {
		set := LogSet{Source: subject + "-7c5d9b6f8-fx8kl", Subject: subject, Namespace: "accounts", Origin: SrcLogs, HasBaseline: true}
		for _, l := range lines {
			set.Templates = append(set.Templates, tmpl(l, 20, on, w.End))
		}
		return set
	}
	slow := func(subject string) Finding {
		return Finding{Kind: KindLatency, Subject: subject, Time: on, Summary: "latency (render_duration_seconds (mean)) of " + subject + " rose from 628 ms to 20.34 s"}
	}
	exec := func(pod, run string, lines string) evidence.CommandOutput {
		return evidence.CommandOutput{Command: "kubectl exec -n accounts " + pod + " -- " + run, Exec: true, Namespace: "accounts", Pod: pod, Run: run, Lines: strings.Split(strings.Trim(lines, "\n"), "\n")}
	}
	// jcmd Thread.print (JDK 21) of Tomcat's request threads: three wait
	// on the renderer over a socket read, one is idle in the pool's queue.
	tomcatThread := func(n int) string {
		return `"http-nio-8080-exec-` + strconv.Itoa(n) + `" #61 [119] daemon prio=5 os_prio=0 cpu=947.55ms elapsed=74831.87s tid=0x00007f3c5941f646 nid=119 runnable  [0x00007f3b3575a3fa]
   java.lang.Thread.State: RUNNABLE
	at sun.nio.ch.Net.poll(java.base@21.0.5/Native Method)
	at sun.nio.ch.NioSocketImpl.park(java.base@21.0.5/NioSocketImpl.java:191)
	at sun.nio.ch.NioSocketImpl.timedRead(java.base@21.0.5/NioSocketImpl.java:280)
	at java.net.Socket$SocketInputStream.read(java.base@21.0.5/Socket.java:1099)
	at org.apache.hc.core5.http.impl.io.SessionInputBufferImpl.fillBuffer(SessionInputBufferImpl.java:149)
	at org.apache.hc.core5.http.impl.io.DefaultBHttpClientConnection.receiveResponseHeader(DefaultBHttpClientConnection.java:325)
	at org.springframework.web.client.RestTemplate.doExecute(RestTemplate.java:889)
	at io.acme.accounts.documents.PdfRendererClient.render(PdfRendererClient.java:58)
	at io.acme.accounts.statements.StatementService.monthlyStatement(StatementService.java:112)
	at io.acme.accounts.statements.StatementController.getStatement(StatementController.java:47)
`
	}
	idleTomcat := `"http-nio-8080-exec-9" #69 [127] daemon prio=5 os_prio=0 cpu=12.10ms elapsed=74831.87s tid=0x00007f3c5941f700 nid=127 waiting on condition  [0x00007f3b3575a500]
   java.lang.Thread.State: WAITING (parking)
	at jdk.internal.misc.Unsafe.park(java.base@21.0.5/Native Method)
	at java.util.concurrent.locks.LockSupport.park(java.base@21.0.5/LockSupport.java:371)
	at org.apache.tomcat.util.threads.TaskQueue.take(TaskQueue.java:141)
`
	jcmd := tomcatThread(1) + tomcatThread(2) + tomcatThread(3) + idleTomcat
	// jstack (JDK 8) of Jetty's qtp threads waiting on a tax gateway.
	jettyThread := func(n int) string {
		return `"qtp1829164700-` + strconv.Itoa(n) + `" #` + strconv.Itoa(n) + ` prio=5 os_prio=0 tid=0x00007f9a4c1d2800 nid=0x5e runnable [0x00007f9a1b7f5000]
   java.lang.Thread.State: RUNNABLE
	at java.net.SocketInputStream.socketRead0(Native Method)
	at java.net.SocketInputStream.socketRead(SocketInputStream.java:116)
	at java.net.SocketInputStream.read(SocketInputStream.java:171)
	at okhttp3.internal.http1.Http1ExchangeCodec.readResponseHeaders(Http1ExchangeCodec.kt:180)
	at okhttp3.RealCall.execute(RealCall.kt:77)
	at com.acme.billing.tax.TaxGatewayClient.quote(TaxGatewayClient.java:91)
	at com.acme.billing.api.InvoiceResource.create(InvoiceResource.java:64)
	at org.eclipse.jetty.server.handler.HandlerWrapper.handle(HandlerWrapper.java:127)
`
	}
	jstack := jettyThread(31) + jettyThread(32) + jettyThread(33) + jettyThread(34)
	// A Go goroutine dump (debug=2): handlers waiting on the inventory
	// service's answer.
	goHandler := `goroutine 81 [IO wait, 12 minutes]:
internal/poll.runtime_pollWait(0x7f3a1c2b4e18, 0x72)
	/usr/local/go/src/runtime/netpoll.go:345 +0x85
internal/poll.(*FD).Read(0xc000226080, {0xc000312000, 0x1000, 0x1000})
	/usr/local/go/src/internal/poll/fd_unix.go:164 +0x27a
net/http.(*persistConn).roundTrip(0xc0001b4000, 0xc0002ac0c0)
	/usr/local/go/src/net/http/transport.go:2675 +0x8ad
net/http.(*Transport).roundTrip(0xc0000c6000, 0xc000190000)
	/usr/local/go/src/net/http/transport.go:608 +0x776
github.com/acme/orders/internal/inventory.(*InventoryClient).Reserve(0xc0001a2000, {0xb8e0a0, 0xc00021e000}, {0xc000318030, 0x24})
	/src/internal/inventory/client.go:88 +0x1a5
github.com/acme/orders/internal/api.(*Server).placeOrder(0xc0000a8000, {0xb8d9c0, 0xc000280000}, 0xc000190000)
	/src/internal/api/orders.go:140 +0x2b2
net/http.HandlerFunc.ServeHTTP(0xc000012345, {0xb8d9c0, 0xc000280000}, 0xc000190000)
	/usr/local/go/src/net/http/server.go:2166 +0x29
net/http.(*conn).serve(0xc0002b4000, {0xb8e0a0, 0xc000214000})
	/usr/local/go/src/net/http/server.go:2039 +0x77f
`
	goIdle := `goroutine 1 [IO wait, 40 minutes]:
internal/poll.runtime_pollWait(0x7f3a1c2b5000, 0x72)
	/usr/local/go/src/runtime/netpoll.go:345 +0x85
net.(*TCPListener).Accept(0xc0000a6040)
	/usr/local/go/src/net/tcpsock.go:327 +0x30
net/http.(*Server).Serve(0xc0000d6000, {0xb8d6e0, 0xc0000a6040})
	/usr/local/go/src/net/http/server.go:3260 +0x33e
main.main()
	/src/cmd/orders/main.go:61 +0x4b1
`
	goDump := goHandler + goHandler + goHandler + goIdle
	// py-spy dump of a gunicorn gthread worker: its threads wait on the
	// ledger.
	pyThread := func(n int) string {
		return `Thread 0x7F2A1B` + strconv.Itoa(n) + ` (idle): "ThreadPoolExecutor-0_` + strconv.Itoa(n) + `"
    readinto (socket.py:706)
    _read_status (client.py:286)
    begin (client.py:325)
    getresponse (client.py:1395)
    _make_request (connectionpool.py:537)
    urlopen (connectionpool.py:793)
    send (adapters.py:486)
    post (ledger_client.py:41)
    create_payout (payouts.py:88)
    handle (gthread.py:282)
`
	}
	pyDump := "Process 7: /usr/local/bin/python /usr/local/bin/gunicorn payouts.wsgi -k gthread --threads 4\nPython v3.11.9 (/usr/local/bin/python3.11)\n\n" +
		pyThread(0) + pyThread(1) + pyThread(2) + pyThread(3)
	mailer := `2026-05-01T11:04:00Z INFO  statement-mailer: month-end run: 6200/184220 statements fetched from account-api (concurrency=48, avg 28.2s each)`
	counts := `jcmd 1 Thread.print | grep -c 'LedgerClient.post'; jcmd 1 Thread.print | grep -c '"http-nio-8443-exec'`
	tomcatFull := `23-Nov-2026 15:21:04.118 SEVERE [http-nio-8443-Acceptor] org.apache.tomcat.util.net.AbstractEndpoint.countUpOrAwaitConnection All threads (60) are currently busy, waiting. Increase maxThreads (60) or check the servlet status`
	gunicorn := Finding{Kind: KindWorkerPool, Subject: "payouts", Time: on, Facts: map[string]string{"line": "[2026-05-01 11:12:09 +0000] [1] [CRITICAL] WORKER TIMEOUT (pid:17)"}}
	timeoutLine := `2026-05-01T11:12:00Z WARN  [http-nio-8080-exec-4] c.a.a.PdfClient - render failed: I/O error on POST request for "http://pdf-renderer.documents.svc.cluster.local:8080/render": Read timed out`
	cases := []struct {
		name     string
		metrics  []MetricSet
		logs     []LogSet
		commands []evidence.CommandOutput
		found    []Finding
		subject  string
		callee   string
		source   string
		why      bool
		says     []string
	}{
		{"jcmd Thread.print of Tomcat, its gauges at maxThreads, the caller's log",
			gauges("account-api", "tomcat_threads_busy_threads", "tomcat_threads_config_max_threads", 12, 200, 200),
			[]LogSet{logs("statement-mailer", mailer)},
			[]evidence.CommandOutput{exec("account-api-5c8f7d9b6-6jlqw", "jcmd 1 Thread.print", jcmd)},
			[]Finding{slow("pdf-renderer")},
			"account-api", "pdf-renderer", "statement-mailer", true,
			[]string{"Tomcat request thread pool http-nio-8080 of account-api", "max threads 200", "3 of 4 threads wait in PdfRendererClient.render called from StatementController.getStatement",
				"reached the pool's maximum of 200", "pdf-renderer is slow", "the held requests come from statement-mailer"}},
		{"jstack of Jetty's qtp threads, its gauges at their maximum",
			gauges("billing-api", "jetty_threads_busy", "jetty_threads_config_max", 20, 250, 250), nil,
			[]evidence.CommandOutput{exec("billing-api-6d9f8c7b5-x2k4p", "jstack 1", jstack)},
			[]Finding{slow("tax-gateway")},
			"billing-api", "tax-gateway", "", true,
			[]string{"Jetty request thread pool qtp1829164700", "4 of 4 threads wait in TaxGatewayClient.quote called from InvoiceResource.create"}},
		{"grep -c of a dump and Tomcat's own word",
			nil, []LogSet{logs("payments-api", tomcatFull)},
			[]evidence.CommandOutput{exec("payments-api-7b6c5d4f3-q9w8e", "sh -c \""+counts+"\"", "58\n60\n")},
			nil, "payments-api", "ledger", "", true,
			[]string{"58 of 60 threads wait in LedgerClient.post", "grep -c", "All threads (60) are currently busy", "max threads 60"}},
		{"a Go goroutine dump",
			nil, nil,
			[]evidence.CommandOutput{{Command: "curl -s localhost:6060/debug/pprof/goroutine?debug=2", Pod: "orders-api-5d8c9b7f6-h4j2k", Run: "curl -s localhost:6060/debug/pprof/goroutine?debug=2", Lines: strings.Split(goDump, "\n")}},
			[]Finding{slow("inventory")},
			"orders-api", "inventory", "", true,
			[]string{"3 of 3 threads wait in (*InventoryClient).Reserve called from (*Server).placeOrder"}},
		{"py-spy dump of gunicorn's threads, its WORKER TIMEOUT",
			nil, nil,
			[]evidence.CommandOutput{exec("payouts-6f7d8c9b4-m3n5p", "py-spy dump --pid 7", pyDump)},
			[]Finding{gunicorn, slow("ledger")},
			"payouts", "ledger", "", true,
			[]string{"4 of 4 threads wait in ledger_client.post called from payouts.create_payout", "WORKER TIMEOUT"}},
		{"no dump: the server's timeouts name a slow callee (weaker, no why)",
			gauges("account-api", "tomcat_threads_busy_threads", "tomcat_threads_config_max_threads", 12, 200, 200),
			[]LogSet{logs("account-api", timeoutLine)}, nil,
			[]Finding{slow("pdf-renderer")},
			"account-api", "pdf-renderer", "", false,
			[]string{"held by requests waiting on pdf-renderer", "Read timed out"}},
		{"threads spread over many frames",
			gauges("billing-api", "jetty_threads_busy", "jetty_threads_config_max", 20, 250, 250), nil,
			[]evidence.CommandOutput{exec("billing-api-6d9f8c7b5-x2k4p", "jstack 1", jettyThread(1)+strings.ReplaceAll(jettyThread(2), "TaxGatewayClient.quote", "FxClient.rate")+
				strings.ReplaceAll(jettyThread(3), "TaxGatewayClient.quote", "AuditClient.send")+strings.ReplaceAll(jettyThread(4), "TaxGatewayClient.quote", "MailClient.send"))},
			nil, "", "", "", false, nil},
		{"a full pool with nothing read of what its threads wait on",
			gauges("account-api", "tomcat_threads_busy_threads", "tomcat_threads_config_max_threads", 12, 200, 200), nil, nil,
			[]Finding{slow("pdf-renderer")}, "", "", "", false, nil},
		{"a pool full in the baseline already",
			gauges("account-api", "tomcat_threads_busy_threads", "tomcat_threads_config_max_threads", 200, 200, 200),
			[]LogSet{logs("account-api", timeoutLine)}, nil,
			[]Finding{slow("pdf-renderer")}, "", "", "", false, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := detectThreadsHeld(&Gathered{Metrics: c.metrics, Logs: c.logs, Commands: c.commands, Window: w}, c.found)
			f, ok := oneFinding(t, fs, c.subject != "")
			if !ok {
				return
			}
			if f.Subject != c.subject || f.fact("callee") != c.callee || f.fact("load_source") != c.source {
				t.Fatalf("subject %q callee %q source %q: %+v", f.Subject, f.fact("callee"), f.fact("load_source"), f)
			}
			if (f.fact("why") != "") != c.why {
				t.Errorf("why %q, want it %v", f.fact("why"), c.why)
			}
			if !containsStr(f.Related, c.callee) {
				t.Errorf("related %v lacks the callee", f.Related)
			}
			h := &Hypothesis{Kind: KindThreadsHeld, Subject: f.Subject, Primary: []*Finding{&f}}
			d := threadsHeld.describe(h, Scope{})
			for _, s := range c.says {
				if !strings.Contains(d, s) {
					t.Errorf("description lacks %q: %s", s, d)
				}
			}
			r := &recommender{h: h}
			threadsHeld.recommend(h, Scope{}, r)
			if len(r.recs) < 3 || !strings.Contains(r.recs[0].Action+r.recs[1].Action, c.callee) {
				t.Errorf("recommendations: %+v", r.recs)
			}
		})
	}
}

// TestThreadsHeldNames: a client frame names its callee by its class, a
// known service of the same words first.
func TestThreadsHeldNames(t *testing.T) {
	known := []string{"pdf-renderer", "account-api"}
	for frame, want := range map[string]string{
		"io.acme.documents.PdfRendererClient.render":                           "pdf-renderer",
		"com.acme.billing.tax.TaxGatewayClient.quote":                          "tax",
		"com.acme.billing.tax.PdfRendererGatewayClient.quote":                  "pdf-renderer",
		"github.com/acme/orders/internal/inventory.(*InventoryClient).Reserve": "inventory",
		"ledger_client.post": "ledger",
		"io.acme.accounts.statements.StatementService.monthlyStatement": "",
		"io.acme.accounts.Helpers.format":                               "",
	} {
		if got := calleeOfFrame(frame, known); got != want {
			t.Errorf("calleeOfFrame(%q) = %q, want %q", frame, got, want)
		}
	}
	if got := grepCounts(`jstack 1 | grep -c 'A.b'; jstack 1 | grep -c "\"qtp1-"`, []string{"3", "4"}); len(got) != 2 || got[0].pattern != "A.b" || got[1].n != 4 || got[1].pattern != `"qtp1-` {
		t.Errorf("grepCounts: %+v", got)
	}
	if got := grepCounts(`grep -c x f; grep -c y f`, []string{"3"}); got != nil {
		t.Errorf("unpaired counts read: %+v", got)
	}
}
