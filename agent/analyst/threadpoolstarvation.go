package analyst

import (
	"fmt"
	"regexp"
	"strings"
)

// A runtime's shared thread pool starved: code that blocks a pool thread
// on asynchronous work (.NET's sync over async, .GetAwaiter().GetResult(),
// .Result, Task.Wait() on an HttpClient call) holds every thread of the
// pool while it waits, the pool injects new threads only slowly, and the
// queued work (requests, continuations, the very completions the blocked
// threads wait for) piles up. Requests take seconds while the CPU is idle
// and the callees answer in milliseconds. The runtime says so: Kestrel's
// "the heartbeat has been running for ... This could be caused by thread
// pool starvation", the pool's queue length in the thousands
// (dotnet.thread_pool.queue.length in dotnet-counters,
// dotnet_thread_pool_queue_length), its thread count climbing step by
// step; a stack dump (dotnet-stack) shows the threads in a blocking wait
// (ManualResetEventSlim.Wait, Task.Wait, TaskAwaiter.GetResult) under one
// application frame. The fix is the blocking call, not more CPU or a
// faster database.

// KindThreadPoolStarvation is a runtime's thread pool starved by threads
// blocked on asynchronous work.
const KindThreadPoolStarvation Kind = "threadpool_starvation"

var threadPoolStarvation = &mechanism{
	kind:       KindThreadPoolStarvation,
	class:      classCause,
	label:      "thread pool starvation (threads blocked on asynchronous work)",
	lines:      threadPoolStarvationRE,
	lineWeight: 0.86,
	detect: func(ev *Gathered, found []Finding) []Finding {
		for i := range found {
			if f := &found[i]; f.Kind == KindThreadPoolStarvation {
				explainThreadPoolStarvation(f, ev)
			}
		}
		return nil
	},
	related: kindsOnSubject(KindBacklog, KindLatency, KindTimeout, KindSlowOperation, KindSaturation),
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return c.Subject == h.Subject && (c.Kind == KindDeploy || c.Kind == KindConfigChange) && !matchLine(restartChangeRE, changeText(c))
	},
	describe: func(h *Hypothesis, sc Scope) string {
		s := h.Subject
		d := fmt.Sprintf("%s's thread pool is starved: its threads block waiting on asynchronous work", s)
		if b := h.fact("blocking_frame"); b != "" {
			d += fmt.Sprintf(" (sync over async: %s blocks in %s)", orWord(h.fact("app_frame"), "the application"), b)
		}
		d += ", so queued requests wait for a free thread while the runtime adds threads only slowly"
		var seen []string
		if q := h.fact("queue"); q != "" {
			seen = append(seen, q)
		}
		if n := h.fact("held"); n != "" {
			seen = append(seen, n)
		}
		if len(seen) > 0 {
			d += " (" + strings.Join(seen, "; ") + ")"
		}
		d += "; requests take seconds while the CPU stays idle: neither load nor the database it calls"
		if l := h.fact("line"); l != "" {
			d += " — " + quote(ReadableLine(l), 140)
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		s := h.Subject
		r.rollback()
		r.high("Make %s asynchronous end to end: await the call instead of blocking on it (.GetAwaiter().GetResult(), .Result, .Wait())", orWord(h.fact("app_frame"), "the blocking call of "+s))
		r.med("As a stopgap raise the pool's minimum threads (ThreadPool.SetMinThreads) for %s; more CPU or a faster database will not help", s)
		r.low("Alert on the thread pool's queue length and on Kestrel's heartbeat warnings of %s", s)
	},
}

var (
	threadPoolStarvationRE = regexp.MustCompile(`(?i)thread ?pool starvation|ThreadPool starvation|starved thread ?pool`)
	// A blocking wait on asynchronous work in a stack frame.
	blockingWaitRE = regexp.MustCompile(`ManualResetEventSlim\.Wait|Task\.Wait\b|Task\.InternalWait|SpinThenBlockingWait|TaskAwaiter\.GetResult|GetAwaiter\(\)\.GetResult|TaskAwaiter\.HandleNonSuccess|Task` + "`" + `1\.get_Result|\.Result\b`)
	// A .NET stack frame: "Pricing.Api!Pricing.Api.Tenancy.TenantDirectoryClient.Resolve(class System.String)".
	dotnetFrameRE        = regexp.MustCompile(`^\s*([\w.]+)!([\w.+<>` + "`" + `]+)\(`)
	dotnetRuntimeFrameRE = regexp.MustCompile(`^(?:System\.|Microsoft\.|mscorlib|Newtonsoft\.|Grpc\.)`)
	// dotnet-counters rows.
	poolQueueRowRE    = regexp.MustCompile(`(?i)(?:thread_pool\.queue\.length|ThreadPool Queue Length)\D*?([\d,]+)\s*$`)
	poolThreadsRowRE  = regexp.MustCompile(`(?i)(?:thread_pool\.thread\.count|ThreadPool Thread Count)\D*?([\d,]+)\s*$`)
	dotnetGrepCountRE = regexp.MustCompile(`grep -c '([^']+)'`)
)

// explainThreadPoolStarvation reads the pool's counters, the blocking
// frame and the application frame above it in a stack dump, and how many
// threads a grep counted in that frame.
func explainThreadPoolStarvation(f *Finding, ev *Gathered) {
	var total, inApp, appName string
	for _, c := range ev.Commands {
		if c.Pod != "" && !strings.EqualFold(workloadOfName(c.Pod), f.Subject) && !strings.HasPrefix(c.Pod, f.Subject+"-") {
			continue
		}
		for i, l := range c.Lines {
			if m := findSubmatch(poolQueueRowRE, l); m != nil && f.fact("queue_len") == "" {
				f.setFact("queue_len", m[1])
			}
			if m := findSubmatch(poolThreadsRowRE, l); m != nil && f.fact("pool_threads") == "" {
				f.setFact("pool_threads", m[1])
			}
			if matchLine(blockingWaitRE, l) && f.fact("blocking_frame") == "" {
				// The first application frame below the wait is who blocks.
				for _, n := range c.Lines[i+1 : min(len(c.Lines), i+12)] {
					if m := findSubmatch(dotnetFrameRE, n); m != nil && !matchLine(dotnetRuntimeFrameRE, m[2]) {
						f.setFact("blocking_frame", blockingName(l))
						f.setFact("app_frame", m[2])
						f.Evidence = append(f.Evidence, fmt.Sprintf("stack dump (%s): %s blocks in %s", truncate(c.Run, 60), m[2], blockingName(l)))
						break
					}
				}
			}
		}
		if m := findSubmatch(dotnetGrepCountRE, c.Run); m != nil && len(c.Lines) == 1 {
			n := strings.TrimSpace(c.Lines[0])
			if strings.Trim(n, "0123456789") != "" {
				continue
			}
			if strings.Contains(m[1], "Thread") {
				total = n
			} else {
				inApp, appName = n, m[1]
			}
		}
	}
	if q := f.fact("queue_len"); q != "" {
		s := "its pool's queue holds " + q + " work items"
		if t := f.fact("pool_threads"); t != "" {
			s += " with " + t + " threads"
		}
		f.setFact("queue", s)
		f.Evidence = append(f.Evidence, "dotnet-counters: "+s)
	} else if q := poolQueueMax(ev.Metrics, f.Subject); q != "" {
		f.setFact("queue", q)
		f.Evidence = append(f.Evidence, q)
	}
	if inApp != "" {
		s := fmt.Sprintf("%s threads in %s", inApp, appName)
		if total != "" {
			s = fmt.Sprintf("%s of %s threads in %s", inApp, total, appName)
		}
		f.setFact("held", s)
		f.Evidence = append(f.Evidence, "stack dump: "+s)
	}
	if f.fact("blocking_frame") != "" || f.fact("queue") != "" {
		f.setFact("why", "threads blocked on asynchronous work starve the thread pool")
		f.Weight = max(f.Weight, 0.93)
	}
}

func blockingName(frame string) string {
	if m := findSubmatch(dotnetFrameRE, frame); m != nil {
		return m[2]
	}
	return strings.TrimSpace(frame)
}

// poolQueueMax says how long the subject's thread pool queue got, from a
// metric of it.
func poolQueueMax(sets []MetricSet, subject string) string {
	for _, ms := range sets {
		n := strings.ToLower(ms.Name)
		if !strings.Contains(n, "thread_pool_queue") && !strings.Contains(n, "threadpool_queue") {
			continue
		}
		hi := 0.0
		for _, s := range ms.Series {
			if !strings.EqualFold(SubjectOfLabels(s.Labels), subject) {
				continue
			}
			for _, p := range s.Points {
				hi = max(hi, p.V)
			}
		}
		if hi > 0 {
			return fmt.Sprintf("%s reached %.0f queued work items", ms.Name, hi)
		}
	}
	return ""
}
