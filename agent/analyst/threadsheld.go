package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// A server's request threads held by calls waiting on one slow callee:
// every worker of its request pool (Tomcat's maxThreads, Jetty's
// QueuedThreadPool, Undertow's task threads, an executor, puma's threads)
// is busy, and nearly all of them sit in the same client call, waiting for
// one service it calls (a PDF renderer, a payment gateway, a search API)
// to answer. The server's CPU, its database and its connection pool are
// idle; its other requests (a login, a page) find no free thread, queue
// and time out at the edge. The evidence is read as it is printed: the
// pool's gauges (tomcat_threads_busy_threads at
// tomcat_threads_config_max_threads, jetty_threads_busy at
// jetty_threads_config_max, executor_active_threads at
// executor_pool_max_threads), a thread dump (jcmd Thread.print or jstack:
// the request threads' stacks, all in one application frame over a socket
// read; a Go goroutine dump; py-spy dump), the counts grep -c took of it,
// and the server's own word ("All threads (200) are currently busy",
// RejectedExecutionException). The callee is the frame's client class
// (PdfRendererClient: pdf-renderer) or the host the server's timeouts
// name; who fills the threads is the caller whose own log names the
// server with calls that run for many seconds, and what made the callee
// slow is its own change or load (its queue, its latency). The cause is
// not the server's capacity (raising maxThreads only delays it) nor the
// database the symptoms suggest: it is the slow callee, called
// synchronously from the request threads, with the load that sends those
// calls.

// KindThreadsHeld is a server's request threads held by calls waiting on
// one slow callee.
const KindThreadsHeld Kind = "threads_held"

var (
	// threadBusyMetricRE and threadMaxMetricRE are a request pool's busy
	// threads and its maximum: Micrometer's Tomcat and Jetty binders, its
	// ExecutorService metrics, Tomcat's JMX exporter names, puma's.
	threadBusyMetricRE = regexp.MustCompile(`(?i)^(?:tomcat_threads_busy(?:_threads)?|tomcat_threadpool_currentthreadsbusy|catalina_threadpool_currentthreadsbusy|jetty_threads_busy(?:_threads)?|executor_active(?:_threads)?|puma_busy_threads)$`)
	threadMaxMetricRE  = regexp.MustCompile(`(?i)^(?:tomcat_threads_config_max(?:_threads)?|tomcat_threadpool_maxthreads|catalina_threadpool_maxthreads|jetty_threads_config_max(?:_threads)?|executor_pool_max(?:_threads)?|puma_max_threads)$`)
	// threadsFullRE is a server saying its request threads are all busy.
	threadsFullRE = regexp.MustCompile(`(?i)All threads \((\d+)\) are currently busy|Increase maxThreads|Thread pool is EXHAUSTED|QueuedThreadPool.{0,80}(?:rejected|Insufficient threads)|RejectedExecutionException.{0,200}active threads = (\d+)|no idle threads|all \d+ threads (?:are )?busy`)
	// threadHeadRE is a thread's header in a JVM thread dump (jstack,
	// jcmd Thread.print); goroutineHeadRE a goroutine's in a Go dump
	// (debug=2); pyThreadHeadRE a thread's in py-spy dump.
	threadHeadRE    = regexp.MustCompile(`^"([^"]+)"(?:\s|$)`)
	goroutineHeadRE = regexp.MustCompile(`^goroutine \d+ \[([^\]]+)\]:`)
	pyThreadHeadRE  = regexp.MustCompile(`^Thread (?:0x[0-9A-Fa-f]+|\d+) \([\w ]+\): "([^"]+)"`)
	// javaFrameRE, goFrameRE and pyFrameRE read one frame.
	javaFrameRE = regexp.MustCompile(`^\s+at ([\w$.<>/]+)\(`)
	goFrameRE   = regexp.MustCompile(`^([\w./-]*[\w)]\.\(?\*?[\w]*\)?\.?[\w]+)\(`)
	pyFrameRE   = regexp.MustCompile(`^\s+(\w+) \(([\w/.-]+)\.py:\d+\)`)
	// libraryFrameRE is a frame of a runtime, a standard library or a
	// framework: not the application's own call.
	libraryFrameRE = regexp.MustCompile(`^(?:java\.|javax\.|jakarta\.|jdk\.|sun\.|com\.sun\.|org\.apache\.|org\.springframework\.|io\.netty\.|okhttp3\.|okio\.|reactor\.|io\.grpc\.|com\.zaxxer\.|org\.eclipse\.jetty\.|io\.undertow\.|org\.jboss\.|feign\.|retrofit2\.|kotlin\.|kotlinx\.|scala\.|akka\.|com\.fasterxml\.|io\.micrometer\.|ch\.qos\.|org\.hibernate\.|com\.mysql\.|org\.postgresql\.|io\.opentelemetry\.|runtime\.|runtime/|net\.|net/|internal/|sync\.|syscall\.|io\.[A-Z(]|bufio\.|crypto/|google\.golang\.org/|golang\.org/|context\.|(?:socket|ssl|selectors|threading|queue|client|connection|connectionpool|sessions|adapters|api|response|socketserver|gthread|_base|thread|sync|base|arbiter|workertmp)\.[a-z_]+$)`)
	// remoteWaitRE is a frame of a thread waiting for an answer over the
	// network (a socket read, a poll, an HTTP client's response) or for a
	// future another thread fills.
	remoteWaitRE = regexp.MustCompile(`(?i)socketRead|SocketInputStream\.read|NioSocketImpl\.(?:park|timedRead|read)|sun\.nio\.ch\.Net\.poll|EPoll\.wait|epollWait|receiveResponseHeader|CompletableFuture\.(?:get|join)|FutureTask\.(?:get|awaitDone)|internal/poll\.\(\*FD\)\.Read|net/http\.\(\*persistConn\)|net/http\.\(\*Transport\)\.roundTrip|runtime\.netpoll|ClientConn\)\.Invoke|recv_into|readinto|sock_recv|_read_status|getresponse`)
	// requestThreadRE names a server's request threads: Tomcat's
	// http-nio-8080-exec-7, Jetty's qtp123-45, Undertow's XNIO-1 task-3,
	// WildFly's default task-2, executors' pool-2-thread-9.
	// serverGoroutineRE is a frame of a goroutine that serves a request.
	serverGoroutineRE = regexp.MustCompile(`net/http\.\(\*conn\)\.serve|net/http\.HandlerFunc\.ServeHTTP|\(\*Server\)\.handleStream|processUnaryRPC`)
	requestThreadRE   = regexp.MustCompile(`^(?:https?-(?:jsse-|openssl-)?(?:nio2?|apr|bio)-[\w.-]+-exec-|ajp-(?:nio|apr)-[\w.-]+-exec-|qtp\d+-|XNIO-\d+ task-|default task-|pool-\d+-thread-|reactor-http-|grpc-default-executor-|puma srv tp |ThreadPoolExecutor-\d+_)`)
	// grepCountRE is one grep -c of a command line, with its pattern.
	grepCountRE = regexp.MustCompile(`\bgrep\s+(?:-[a-zA-Z]*\s+)*-[a-zA-Z]*c[a-zA-Z]*\s+(?:-[a-zA-Z]+\s+)*(?:'([^']*)'|"((?:[^"\\]|\\.)*)"|(\S+))`)
	// clientWordRE is one word a client class adds to its callee's name;
	// clientClassRE a class that says it calls another service.
	clientWordRE  = regexp.MustCompile(`(?:Client|Gateway|Adapter|Connector|Proxy|Stub|Api|API|Http|Rest|Grpc|Caller|Facade|Service|Remote|_client|_api|_gateway)$`)
	clientClassRE = regexp.MustCompile(`(?:Client|Gateway|Connector|Proxy|Stub|_client|_gateway)$`)
	// avgCallRE is how long a caller says its calls take: "avg 28.2s
	// each", "mean=12s", "p50 9.4s".
	avgCallRE = regexp.MustCompile(`(?i)\b(?:avg|average|mean|p50|p90|p95|p99|median)\b\s*[=:]?\s*(\d+(?:\.\d+)?)\s*(ms|s|sec|seconds|m|min)\b`)
)

// callerLongMin is how long a caller's calls must run to read as holding
// a request thread for their whole length.
const callerLongMin = 5 * time.Second

var threadsHeld = &mechanism{
	kind:   KindThreadsHeld,
	class:  classCause,
	label:  "a server's request threads held by calls waiting on one slow callee",
	detect: detectThreadsHeld,
	related: exceptOwnAndChanges(KindThreadsHeld, func(h *Hypothesis, f *Finding) bool {
		for _, k := range []string{"callee", "load_source"} {
			if v := h.fact(k); v != "" && strings.EqualFold(f.Subject, v) {
				return true
			}
		}
		return strings.EqualFold(f.Subject, h.Subject) || f.fact("callee") == h.Subject || affectsRelated(h, f)
	}),
	// The caller's change that sends the held calls (a job's schedule,
	// its concurrency), the callee's own change, or the server's.
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		for _, k := range []string{"load_source", "callee"} {
			if v := h.fact(k); v != "" && strings.EqualFold(c.Subject, v) {
				return true
			}
		}
		return strings.EqualFold(c.Subject, h.Subject)
	},
	describe:  describeThreadsHeld,
	recommend: recommendThreadsHeld,
}

func describeThreadsHeld(h *Hypothesis, sc Scope) string {
	d := "every thread of the " + h.wrapped("", "server", " ") + "request thread pool" + h.clause(" ", "pool") + " of " + h.Subject + " is busy"
	d += h.wrapped(" (max threads ", "max_threads", " per pod)")
	callee := orWord(h.fact("callee"), "one slow callee")
	d += fmt.Sprintf(", held by requests waiting on %s", callee)
	if fr := h.fact("frame"); fr != "" {
		d += fmt.Sprintf(": %s threads wait in %s", orWord(h.fact("held"), "the"), fr)
		d += h.clause(" called from ", "entry")
		d += " (" + orWord(h.fact("dump"), "thread dump") + ")"
	} else if l := h.fact("callee_line"); l != "" {
		d += fmt.Sprintf(" (its calls to %s time out: %s)", callee, quote(ReadableLine(l), 200))
	}
	d += fmt.Sprintf(", so %s's other requests find no free thread, queue and time out", h.Subject)
	d += h.clause("; ", "metric") + h.lineClause(200)
	if s := h.fact("callee_slow"); s != "" {
		d += fmt.Sprintf("; %s is slow: %s", callee, s)
	}
	if h.fact("load_source") != "" {
		d += h.clause("; the held requests come from ", "load_source") + h.quoteClause(": ", "load_line", 200)
	}
	d += fmt.Sprintf(" — the cause is the slow calls to %s made on the request threads, not %s's database or its capacity", callee, h.Subject)
	return d
}

func recommendThreadsHeld(h *Hypothesis, sc Scope, r *recommender) {
	callee, src := orWord(h.fact("callee"), "the slow callee"), h.fact("load_source")
	if c := h.Trigger; c != nil && !strings.EqualFold(c.Subject, h.Subject) {
		r.high("Revert or pause the change to %s (%s) that sends the slow calls", c.Subject, truncate(c.fact("description"), 120))
	} else {
		r.rollback()
	}
	if src != "" {
		r.high("Throttle %s's calls into %s (lower its concurrency, pause the run or move it out of peak hours) so %s's request threads are free for its other requests", src, h.Subject, h.Subject)
	}
	r.high("Put a short timeout (and a circuit breaker) on %s's calls to %s, or serve them from a separate bounded pool or asynchronously, so they cannot take every request thread", h.Subject, callee)
	r.med("Find why %s is slow (its queue, its workers, its latency) and scale it for the load it gets; raising %s's maxThreads alone only delays the exhaustion", callee, h.Subject)
	r.low("Alert on %s's busy request threads against their maximum (tomcat_threads_busy_threads / tomcat_threads_config_max_threads) and on %s's latency", h.Subject, callee)
}

// threadsState is what the evidence says of one server's request pool.
type threadsState struct {
	pool, server, maxThreads, held, frame, entry, dump, metric, line string
	callee, calleeLine                                               string
	share                                                            float64 // of the dump's request threads in the frame
	onset                                                            time.Time
	direct                                                           bool // a dump shows the threads held
}

// detectThreadsHeld finds a server whose request threads are all busy
// while they wait on one callee.
func detectThreadsHeld(ev *Gathered, found []Finding) []Finding {
	var states keyed[threadsState]
	get := states.get
	threadGauges(ev, get)
	threadLogs(ev, get)
	// A worker pool's own word (gunicorn's WORKER TIMEOUT, uWSGI's full
	// listen queue, php-fpm's max_children) read by its mechanism.
	for _, f := range found {
		if f.Kind == KindWorkerPool && f.Subject != "" {
			st := get(f.Subject)
			st.line = orWord(st.line, f.fact("line"))
			st.onset = earliest(st.onset, f.Time)
		}
	}
	known := knownSubjects(ev, found)
	for _, c := range ev.Commands {
		subj := workloadOfPodName(c.Pod)
		if subj == "" {
			continue
		}
		readThreadDump(c.Run, c.Lines, subj, get, known)
	}
	var out []Finding
	for _, subj := range states.order {
		st := states.m[subj]
		if st.callee == "" {
			st.callee, st.calleeLine = slowCalleeOf(ev, found, subj)
		}
		// A dump with most request threads in one frame, and the pool
		// full by its gauges or its own word, shows them held there.
		if st.share > 0.5 && (st.metric != "" || st.line != "") {
			st.direct = true
		}
		// Threads busy with nothing known of what they wait on is the
		// worker pool's own mechanism; a dump without the pool full is a
		// picture of a normal moment.
		if st.callee == "" || st.metric == "" && st.line == "" && st.held == "" {
			continue
		}
		f := Finding{Kind: KindThreadsHeld, Subject: subj, Object: "service " + subj, Source: SrcMetrics, Time: st.onset, Severity: SevCritical, Weight: 0.75}
		if st.onset.IsZero() {
			f.Time = ev.Window.Start
		}
		if st.frame != "" {
			f.Source = SrcKubernetes
		}
		for _, l := range ev.Logs {
			if l.Subject == subj && l.Namespace != "" {
				f.Namespace = l.Namespace
				break
			}
		}
		f.setFact("pool", st.pool)
		f.setFact("server", st.server)
		f.setFact("max_threads", st.maxThreads)
		f.setFact("held", st.held)
		f.setFact("frame", st.frame)
		f.setFact("entry", st.entry)
		f.setFact("dump", st.dump)
		f.setFact("metric", st.metric)
		f.setFact("line", st.line)
		f.setFact("callee", st.callee)
		f.setFact("callee_line", st.calleeLine)
		var slow []string
		for _, o := range found {
			if strings.EqualFold(o.Subject, st.callee) && (o.Kind == KindLatency || o.Kind == KindSaturation) && len(slow) < 2 {
				slow = append(slow, o.Summary)
			}
		}
		f.setFact("callee_slow", strings.Join(slow, "; "))
		src, srcLine := threadsLoadSource(ev, subj, st.callee)
		f.setFact("load_source", src)
		f.setFact("load_line", srcLine)
		if st.direct {
			f.Weight = 0.9
			f.setFact("why", fmt.Sprintf("%s's request threads wait on %s", subj, st.callee))
		}
		f.Related = []string{st.callee}
		if src != "" {
			f.Related = append(f.Related, src)
		}
		for _, s := range ev.Scope.Subjects() {
			if s != subj {
				f.Related = appendNew(f.Related, s)
			}
		}
		if st.metric != "" {
			f.Evidence = append(f.Evidence, st.metric)
		}
		if st.line != "" {
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s logs: %s", subj, quote(ReadableLine(st.line), 240)))
		}
		if st.frame != "" {
			e := fmt.Sprintf("%s: %s request threads wait in %s", orWord(st.dump, "thread dump"), orWord(st.held, "the"), st.frame)
			if st.entry != "" {
				e += " (from " + st.entry + ")"
			}
			f.Evidence = append(f.Evidence, e)
		}
		if st.calleeLine != "" {
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s logs its calls to %s timing out: %s", subj, st.callee, quote(ReadableLine(st.calleeLine), 240)))
		}
		f.Evidence = append(f.Evidence, slow...)
		if srcLine != "" {
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s logs: %s", src, quote(ReadableLine(srcLine), 240)))
		}
		f.Summary = fmt.Sprintf("the request threads of %s are all busy, held by calls waiting on %s", subj, st.callee)
		out = append(out, f)
	}
	return out
}

// threadGauges reads the request pools' gauges: busy threads reaching
// the pool's maximum in the window when the baseline had room.
func threadGauges(ev *Gathered, get func(string) *threadsState) {
	type key struct{ subj, inst string }
	w := ev.Window
	busy := map[key][]timedValue{}
	maxOf := map[key]float64{}
	pools := map[string]string{}
	for _, ms := range ev.Metrics {
		isBusy, isMax := matchLine(threadBusyMetricRE, ms.Name), matchLine(threadMaxMetricRE, ms.Name)
		if !isBusy && !isMax {
			continue
		}
		for _, s := range ms.Series {
			subj := SubjectOfLabels(s.Labels)
			if subj == "" {
				continue
			}
			k := key{subj, s.Labels["pod"] + "|" + s.Labels["instance"] + "|" + orWord(s.Labels["name"], s.Labels["pool"])}
			if n := orWord(s.Labels["name"], s.Labels["pool"]); n != "" {
				pools[subj] = n
			}
			for _, pt := range s.Points {
				if !w.covers(pt.T) {
					continue
				}
				if isBusy {
					busy[k] = append(busy[k], timedValue{pt.T, pt.V})
				} else {
					maxOf[k] = max(maxOf[k], pt.V)
				}
			}
		}
	}
	keys := make([]key, 0, len(busy))
	for k := range busy {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int { return strings.Compare(a.subj+a.inst, b.subj+b.inst) })
	for _, k := range keys {
		m := maxOf[k]
		if m <= 0 {
			continue
		}
		full, base := reachedMax(busy[k], w.Start, m)
		if full.IsZero() || len(base) > 0 && medianOf(base) >= 0.8*m {
			continue
		}
		st := get(k.subj)
		st.onset = earliest(st.onset, full)
		st.maxThreads = orWord(st.maxThreads, strconv.FormatFloat(m, 'f', -1, 64))
		st.pool = orWord(st.pool, pools[k.subj])
		if st.metric == "" {
			st.metric = fmt.Sprintf("its busy request threads reached the pool's maximum of %.0f at %s (baseline median %.0f)", m, hm(full), medianOf(base))
		}
	}
}

// threadLogs reads a server's own word that its request threads are all
// busy.
func threadLogs(ev *Gathered, get func(string) *threadsState) {
	for _, set := range ev.Logs {
		if set.Host || set.Subject == "" {
			continue
		}
		for _, t := range set.Templates {
			if t.Incident == 0 || !matchLine(threadsFullRE, t.Example) {
				continue
			}
			st := get(set.Subject)
			st.line = orWord(st.line, t.Example)
			if m := findSubmatch(threadsFullRE, t.Example); m != nil && st.maxThreads == "" {
				st.maxThreads = orWord(m[1], m[2])
			}
			st.onset = earliest(st.onset, firstOf(t.FirstIncident, t.FirstSeen))
		}
	}
}

// isRequestThread reports whether a dump's thread serves requests: a
// request pool's thread by its name, a goroutine by its frames.
func isRequestThread(th dumpThread) bool {
	if th.name != "" {
		return matchLine(requestThreadRE, th.name)
	}
	return slices.ContainsFunc(th.frames, serverGoroutineRE.MatchString)
}

// dumpThread is one thread of a dump: its name and its frames, innermost
// first.
type dumpThread struct {
	name   string
	frames []string
}

// readThreadDump reads a command's output as a thread dump of subj's
// process (JVM, Go, py-spy) or as the counts grep -c took of one, and
// records the frame most request threads wait in.
func readThreadDump(run string, lines []string, subj string, get func(string) *threadsState, known []string) {
	threads := parseThreads(lines)
	counts := grepCounts(run, lines)
	if len(threads) == 0 && len(counts) == 0 {
		return
	}
	// The application frame each waiting thread is in, counted.
	type group struct {
		frame, entry, pool string
		n                  int
	}
	groups := map[string]*group{}
	var order []string
	total := 0
	for _, th := range threads {
		if !isRequestThread(th) {
			continue
		}
		total++
		waiting := false
		app, entry := "", ""
		for _, fr := range th.frames {
			if matchLine(remoteWaitRE, fr) {
				waiting = true
			}
			if !matchLine(libraryFrameRE, fr) {
				if app == "" {
					app = fr
				}
				entry = fr
			}
		}
		if !waiting || app == "" {
			continue
		}
		g := groups[app]
		if g == nil {
			g = &group{frame: app, pool: poolOfThread(th.name)}
			groups[app] = g
			order = append(order, app)
		}
		g.n++
		if entry != app {
			g.entry = entry
		}
	}
	var best *group
	for _, k := range order {
		if best == nil || groups[k].n > best.n {
			best = groups[k]
		}
	}
	st := get(subj)
	if best != nil && best.n*2 > total && total >= 2 {
		st.frame, st.entry, st.pool = shortFrame(best.frame), shortFrame(best.entry), orWord(st.pool, best.pool)
		st.held = fmt.Sprintf("%d of %d", best.n, total)
		st.share = float64(best.n) / float64(total)
		st.dump = "its thread dump"
		st.server = orWord(st.server, serverOfPool(best.pool))
		st.callee = orWord(st.callee, calleeOfFrame(best.frame, known))
	}
	// grep -c of the dump: how many threads are in a frame, how many
	// request threads there are.
	var inFrame, all int
	var framePat string
	for _, c := range counts {
		switch {
		case matchLine(requestThreadRE, strings.Trim(c.pattern, `"\`)+"-1"):
			all = max(all, c.n)
			st.pool = orWord(st.pool, poolOfThread(strings.Trim(c.pattern, `"\`)))
		case strings.Contains(c.pattern, ".") && c.n > inFrame:
			inFrame, framePat = c.n, c.pattern
		}
	}
	if inFrame > 0 && all > 0 && inFrame*10 >= all*8 && (st.frame == "" || strings.HasSuffix(st.frame, framePat) || strings.HasSuffix(framePat, st.frame)) {
		st.held = fmt.Sprintf("%d of %d", inFrame, all)
		st.share = float64(inFrame) / float64(all)
		st.frame = orWord(st.frame, framePat)
		st.dump = "its thread dump, counted with grep -c"
		st.direct = true
		st.server = orWord(st.server, serverOfPool(st.pool))
		st.callee = orWord(st.callee, calleeOfFrame(framePat, known))
	}
	if st.frame != "" && st.callee != "" && best != nil && best.n*10 >= total*8 && total >= 3 {
		st.direct = true
	}
}

// parseThreads splits a dump into threads.
func parseThreads(lines []string) []dumpThread {
	var out []dumpThread
	cur := -1
	for _, l := range lines {
		if m := findSubmatch(threadHeadRE, l); m != nil {
			out = append(out, dumpThread{name: m[1]})
			cur = len(out) - 1
			continue
		}
		if m := findSubmatch(pyThreadHeadRE, l); m != nil {
			out = append(out, dumpThread{name: m[1]})
			cur = len(out) - 1
			continue
		}
		if matchLine(goroutineHeadRE, l) {
			out = append(out, dumpThread{})
			cur = len(out) - 1
			continue
		}
		if cur < 0 {
			continue
		}
		if m := findSubmatch(javaFrameRE, l); m != nil {
			out[cur].frames = append(out[cur].frames, m[1])
		} else if m := findSubmatch(pyFrameRE, l); m != nil {
			out[cur].frames = append(out[cur].frames, m[2]+"."+m[1])
		} else if m := findSubmatch(goFrameRE, l); m != nil && !strings.HasPrefix(l, "\t") {
			out[cur].frames = append(out[cur].frames, m[1])
		}
	}
	return out
}

// grepCount is one grep -c of a command and the count it printed.
type grepCount struct {
	pattern string
	n       int
}

// grepCounts pairs the grep -c of a command line with the counts it
// printed, in order; nil when they do not pair.
func grepCounts(run string, lines []string) []grepCount {
	ms := findAllSubmatch(grepCountRE, run, -1)
	if len(ms) == 0 {
		return nil
	}
	var nums []int
	for _, l := range lines {
		n, err := strconv.Atoi(strings.TrimSpace(l))
		if err != nil {
			if strings.TrimSpace(l) != "" {
				return nil
			}
			continue
		}
		nums = append(nums, n)
	}
	if len(nums) != len(ms) {
		return nil
	}
	out := make([]grepCount, len(ms))
	for i, m := range ms {
		p := orWord(m[1], orWord(m[2], m[3]))
		out[i] = grepCount{pattern: strings.ReplaceAll(p, `\`, ""), n: nums[i]}
	}
	return out
}

// poolOfThread is the pool a thread's name belongs to: its name without
// the thread's number ("http-nio-8080-exec-7": http-nio-8080).
func poolOfThread(name string) string {
	name = strings.TrimRightFunc(name, unicode.IsDigit)
	name = strings.TrimRight(name, "-_ ")
	name = strings.TrimSuffix(name, "-exec")
	name = strings.TrimSuffix(name, " task")
	return name
}

// serverOfPool names the server a pool's thread names show.
func serverOfPool(pool string) string {
	switch {
	case strings.HasPrefix(pool, "http-") || strings.HasPrefix(pool, "https-") || strings.HasPrefix(pool, "ajp-"):
		return "Tomcat"
	case strings.HasPrefix(pool, "qtp"):
		return "Jetty"
	case strings.HasPrefix(pool, "XNIO-"):
		return "Undertow"
	case strings.HasPrefix(pool, "puma"):
		return "Puma"
	}
	return ""
}

// shortFrame is a frame as people name it: its class (or type) and
// method, without the package ("io.acme.docs.PdfClient.render":
// PdfClient.render).
func shortFrame(fr string) string {
	if fr == "" {
		return ""
	}
	if i := strings.LastIndexByte(fr, '/'); i >= 0 {
		fr = fr[i+1:]
	}
	parts := strings.Split(fr, ".")
	if len(parts) > 2 {
		parts = parts[len(parts)-2:]
	}
	return strings.Join(parts, ".")
}

// calleeOfFrame names the service a client frame calls, from its class:
// PdfRendererClient.render (or (*PdfRendererClient).Render,
// pdf_renderer_client.render) calls pdf-renderer. A known subject of the
// class's words wins, with its client words taken off one by one
// (TaxGatewayClient: tax-gateway, else tax); else the words themselves,
// when the class says it is a client.
func calleeOfFrame(frame string, known []string) string {
	parts := strings.Split(shortFrame(frame), ".")
	if len(parts) < 2 {
		return ""
	}
	name := strings.Trim(parts[len(parts)-2], "(*)")
	for {
		if k := matchKnown(name, known); k != "" {
			return k
		}
		loc := clientWordRE.FindStringIndex(name)
		if loc == nil || loc[0] == 0 {
			break
		}
		name = name[:loc[0]]
	}
	class := strings.Trim(parts[len(parts)-2], "(*)")
	if name == class || !matchLine(clientClassRE, class) {
		return ""
	}
	return kebab(name)
}

// matchKnown is the known subject whose name is word, ignoring case and
// separators ("PdfRenderer": pdf-renderer).
func matchKnown(word string, known []string) string {
	w := squash(word)
	if len(w) < 3 {
		return ""
	}
	for _, k := range known {
		if squash(k) == w {
			return k
		}
	}
	return ""
}

func squash(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// kebab writes a CamelCase or snake_case name in kebab case.
func kebab(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == '_' || r == '-':
			b.WriteByte('-')
		case unicode.IsUpper(r):
			if i > 0 && !unicode.IsUpper(rune(s[i-1])) && s[i-1] != '_' && s[i-1] != '-' {
				b.WriteByte('-')
			}
			b.WriteRune(unicode.ToLower(r))
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// knownSubjects are the services the evidence names: log sources,
// metric series, findings and changes.
func knownSubjects(ev *Gathered, found []Finding) []string {
	var out []string
	for _, l := range ev.Logs {
		out = appendNew(out, l.Subject)
	}
	for _, ms := range ev.Metrics {
		for _, s := range ms.Series {
			out = appendNew(out, SubjectOfLabels(s.Labels))
		}
	}
	for _, f := range found {
		out = appendNew(out, f.Subject)
	}
	for _, c := range ev.Changes {
		out = appendNew(out, c.Service)
	}
	return slices.DeleteFunc(out, func(s string) bool { return s == "" })
}

// slowCalleeOf is, without a dump, the service subj's own log says it
// times out calling, when that service is slow at the same time.
func slowCalleeOf(ev *Gathered, found []Finding, subj string) (string, string) {
	slow := map[string]bool{}
	for _, f := range found {
		if f.Kind == KindLatency && f.Subject != subj {
			slow[f.Subject] = true
		}
	}
	for _, set := range ev.Logs {
		if set.Subject != subj {
			continue
		}
		for _, t := range set.Templates {
			if t.Incident == 0 || !matchLine(timeoutWordRE, t.Example) {
				continue
			}
			for _, m := range findAllSubmatch(urlRE, t.Example, -1) {
				if h := ShortHost(m[1]); slow[h] {
					return h, t.Example
				}
			}
		}
	}
	return "", ""
}

var timeoutWordRE = regexp.MustCompile(`(?i)timed? ?out|timeout|deadline exceeded`)

// threadsLoadSource names the caller whose calls into subj run long: its
// own log names subj with how long its calls take.
func threadsLoadSource(ev *Gathered, subj, callee string) (string, string) {
	for _, set := range ev.Logs {
		if set.Subject == "" || set.Subject == subj || set.Subject == callee || set.Host {
			continue
		}
		for _, t := range set.Templates {
			for _, line := range t.Lines() {
				if !namesWord(line, subj) && !callsHost(line, subj) {
					continue
				}
				d := callDuration(line)
				if m := findSubmatch(avgCallRE, line); m != nil {
					if v, err := time.ParseDuration(m[1] + strings.NewReplacer("seconds", "s", "sec", "s", "min", "m").Replace(m[2])); err == nil {
						d = max(d, v)
					}
				}
				if d >= callerLongMin {
					return set.Subject, line
				}
			}
		}
	}
	return "", ""
}
