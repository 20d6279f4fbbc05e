package analyst

import (
	"strings"
	"testing"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestNestedQuantifier tells patterns that backtrack exponentially (a
// quantified group holding a quantifier, in a properties file's doubled
// backslashes too) from ones that do not.
func TestNestedQuantifier(t *testing.T) {
	for p, want := range map[string]bool{
		`(a+)+$`:      true,
		`^(\w+\s?)*$`: true,
		`([a-zA-Z0-9])(([\\-.]|[_]+)?([a-zA-Z0-9]+))*(@){1}[a-z0-9]+`: true,
		`(x{2,})*y`: true,
		`^[a-z0-9._%+-]+@[a-z0-9.-]+\.[a-z]{2,}$`: false,
		`\+?[0-9][0-9 ()-]{7,}[0-9]`:              false,
		`(ab)*c`:                                  false,
		`\(a+\)*`:                                 false,
	} {
		if got := nestedQuantifier(p); got != want {
			t.Errorf("nestedQuantifier(%q) = %v, want %v", p, got, want)
		}
	}
}

// TestRegexBacktrack reads catastrophic backtracking where the CPU goes: a
// JVM thread dump (jcmd Thread.print) whose request threads run in
// java.util.regex under the application's masker, with the pattern a
// properties file holds; py-spy dump of Python threads in re.search; perf
// report of a native service in pcre2_match; .NET's
// RegexMatchTimeoutException in its log. A thread dump of threads reading
// sockets and a profile where the engine takes a small share are not it.
func TestRegexBacktrack(t *testing.T) {
	jvm := strings.Split(`"http-nio-8080-exec-3" #41 daemon prio=5 os_prio=0 cpu=612204.77ms elapsed=2581.44s tid=0x00007f3ca4012800 nid=0x3f runnable  [0x00007f3bc93fd000]
   java.lang.Thread.State: RUNNABLE
	at java.util.regex.Pattern$GroupHead.match(java.base@21.0.5/Pattern.java:4807)
	at java.util.regex.Pattern$Loop.match(java.base@21.0.5/Pattern.java:4951)
	at java.util.regex.Matcher.find(java.base@21.0.5/Matcher.java:785)
	at com.example.comments.SpamFilter.scan(SpamFilter.java:52)
	at com.example.comments.api.CommentController.post(CommentController.java:31)

"http-nio-8080-exec-4" #42 daemon prio=5 os_prio=0 cpu=598817.10ms elapsed=2580.90s tid=0x00007f3ca4016000 nid=0x43 runnable  [0x00007f3bc8bfb000]
   java.lang.Thread.State: RUNNABLE
	at java.util.regex.Pattern$CharPropertyGreedy.match(java.base@21.0.5/Pattern.java:4410)
	at java.util.regex.Pattern$Loop.match(java.base@21.0.5/Pattern.java:4951)
	at java.util.regex.Matcher.find(java.base@21.0.5/Matcher.java:785)
	at com.example.comments.SpamFilter.scan(SpamFilter.java:52)`, "\n")
	props := []string{`spam.link.pattern=^(https?://)?([\\w-]+\\.?)+(/[\\w-]*)*$`, `spam.max.links=3`}
	pyDump := strings.Split(`Process 1: python app.py
Python v3.12.3 (/usr/local/bin/python3.12)

Thread 0x7F3A1C2B4740 (active): "MainThread"
    search (re/__init__.py:177)
    validate_username (accounts/validators.py:41)
    signup (accounts/views.py:88)
Thread 0x7F3A1A1FF6C0 (active): "Thread-2 (process_request_thread)"
    search (re/__init__.py:177)
    validate_username (accounts/validators.py:41)`, "\n")
	perf := []string{
		"# Samples: 48K of event 'cpu-clock:pppH'",
		"# Overhead  Command          Shared Object        Symbol",
		"# ........  ...............  ...................  ..............................",
		"    71.12%  waf-filter       libpcre2-8.so.0      [.] pcre2_match_8",
		"    11.40%  waf-filter       waf-filter           [.] Rules::evaluate",
		"     2.11%  waf-filter       libc.so.6            [.] memcpy",
	}
	perfLow := append([]string{}, perf...)
	perfLow[3] = "    12.12%  waf-filter       libpcre2-8.so.0      [.] pcre2_match_8"
	idle := strings.Split(`"http-nio-8080-exec-3" #41 daemon prio=5 os_prio=0 cpu=12.77ms elapsed=2581.44s tid=0x00007f3ca4012800 nid=0x3f runnable  [0x00007f3bc93fd000]
   java.lang.Thread.State: RUNNABLE
	at sun.nio.ch.SocketDispatcher.read0(java.base@21.0.5/Native Method)
	at sun.nio.ch.NioSocketImpl.read(java.base@21.0.5/NioSocketImpl.java:331)
	at com.example.comments.api.CommentController.post(CommentController.java:31)`, "\n")
	dotnet := `[2026-03-14 10:12:41 ERR] Request failed: System.Text.RegularExpressions.RegexMatchTimeoutException: The Regex engine has timed out while trying to match a pattern to an input string.`
	exec := func(pod, run string, lines []string) evidence.CommandOutput {
		return evidence.CommandOutput{Command: "kubectl exec -n shop " + pod + " -- " + run, Run: run, Exec: true, Pod: pod, Lines: lines}
	}
	cases := []struct {
		name    string
		cmds    []evidence.CommandOutput
		logs    []LogSet
		service string
		subject string
		want    []string
	}{
		{"JVM thread dump and the properties' pattern", []evidence.CommandOutput{
			exec("comments-7c9f5d8b6-gq2kt", "jcmd 1 Thread.print", jvm),
			exec("comments-7c9f5d8b6-gq2kt", "cat /app/application.properties", props)},
			[]LogSet{logSet("comments-web", false, `time=2026-03-14T10:12:41Z level=INFO msg=request path=/comments status=201 duration=9.1s comments_ms=9050`)},
			"comments", "comments", []string{"backtracks catastrophically", "2 of 2 threads", "SpamFilter.scan", "nests quantifiers", "comments-web waits on it"}},
		{"py-spy dump", []evidence.CommandOutput{exec("accounts-5d8f7c6b9-x2k4q", "py-spy dump --pid 1", pyDump)}, nil,
			"accounts", "accounts", []string{"2 of 2 threads", "validators.validate_username"}},
		{"perf report of a native filter in PCRE", []evidence.CommandOutput{exec("waf-filter-6c5d4b3a2-pq9rs", "perf report --stdio", perf)}, nil,
			"waf-filter", "waf-filter", []string{"regular expression backtracks"}},
		{".NET's match timeout in the log", nil, []LogSet{logSet("search-api", false, dotnet)}, "search-api", "search-api",
			[]string{"RegexMatchTimeoutException"}},
		{"threads reading sockets", []evidence.CommandOutput{exec("comments-7c9f5d8b6-gq2kt", "jcmd 1 Thread.print", idle)}, nil, "comments", "", nil},
		{"the engine a small share of the profile", []evidence.CommandOutput{exec("waf-filter-6c5d4b3a2-pq9rs", "perf report --stdio", perfLow)}, nil, "waf-filter", "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Commands: c.cmds, Logs: c.logs, Window: win, Scope: Scope{Service: c.service}}
			f := onlyFinding(t, detectRegexBacktrack(ev, nil), c.subject)
			if f == nil {
				return
			}
			h := &Hypothesis{Kind: f.Kind, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, c.want...)
			recs := recommend(h, Scope{})
			if len(recs) < 2 || !strings.Contains(recs[0].Action, "nested quantifiers") {
				t.Errorf("recommendations: %+v", recs)
			}
		})
	}
	// Only a change of the service that runs the expression triggers it.
	f := detectRegexBacktrack(&Gathered{Commands: []evidence.CommandOutput{exec("comments-7c9f5d8b6-gq2kt", "jcmd 1 Thread.print", jvm)}, Window: win, Scope: Scope{Service: "comments"}}, nil)[0]
	h := &Hypothesis{Kind: f.Kind, Subject: f.Subject, Primary: []*Finding{&f}}
	own := &Finding{Kind: KindDeploy, Subject: "comments", Summary: "deploy of comments: comments 2.4.0: link spam filter"}
	caller := &Finding{Kind: KindDeploy, Subject: "comments-web", Summary: "deploy of comments-web: bump pgx"}
	if !regexBacktrack.fitsChange(h, own) || regexBacktrack.fitsChange(h, caller) {
		t.Errorf("fitsChange: own %v, caller %v", regexBacktrack.fitsChange(h, own), regexBacktrack.fitsChange(h, caller))
	}
}
