package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/rootcause/rootcause/finding"
	"k8s.io/apimachinery/pkg/api/resource"
)

// describe writes the root-cause description of a hypothesis: the
// mechanism and the subject in plain words, with the standard terms for
// the cause, and what triggered it.
func describe(h *Hypothesis, sc Scope) string {
	s := h.Subject
	top := h.top()
	var d string
	m := mechanismOf(h.Kind)
	switch {
	case m != nil:
		d = m.describe(h, sc)
	default:
		d = describeFallback(h, sc, s, top)
	}
	return describeTail(h, d)
}

// describeFallback describes the kinds not yet moved into their own
// mechanism file.
func describeFallback(h *Hypothesis, sc Scope, s string, top *Finding) string {
	var d string
	switch h.Kind {
	case KindErrorRate, KindLatency, KindSaturation, KindRestarts, KindTargetDown:
		d = top.Summary
		d += jobOverlapPhrase(h)
	case KindDeploy, KindConfigChange, KindFeatureFlag, KindInfraChange, KindResourceChange:
		d = describeChange(h)
	default:
		d = top.Summary
	}
	return d
}

// describeTail adds what every description says after the mechanism's
// own words: the change that triggered it, the dependency's victims, the
// consequences observed.
func describeTail(h *Hypothesis, d string) string {
	d += containerPhrase(h, d)
	// Name the mechanism of a symptom the change hypothesis explains, and
	// the change that triggered a cause.
	if h.Trigger != nil {
		d += fmt.Sprintf(". Triggered by the %s (%s before the onset)", changePhrase(h.Trigger), strings.TrimPrefix(minutesAfter(h.Trigger.Time, h.Onset), "within "))
		if lc := h.Trigger.fact("memory_limit_change"); lc != "" && h.Kind == KindOOMKilled {
			d += fmt.Sprintf(", which changed the memory limit (%s)", lc)
		}
	}
	if dep := dependencyVictims(h); dep != "" {
		d += ". " + dep
	}
	if h.class() != classChange {
		if c := consequences(h); c != "" {
			d += ". Observed consequences: " + c
		}
	}
	return strings.TrimSpace(d) + "."
}

// containerPhrase names the container that fails when the description
// does not and it is not named after the workload: a pod's sidecar or
// init container failing is fixed in that container, not in the
// application's.
func containerPhrase(h *Hypothesis, d string) string {
	top := h.top()
	if top == nil || top.Source != SrcKubernetes {
		return ""
	}
	c := top.fact("container")
	if c == "" || c == h.Subject || strings.Contains(d, c) {
		return ""
	}
	if top.fact("init_container") == c {
		return fmt.Sprintf(" (its init container %s)", c)
	}
	return fmt.Sprintf(" (its container %s)", c)
}

func hasKind(fs []*Finding, k Kind) bool {
	for _, f := range fs {
		if f.Kind == k {
			return true
		}
	}
	return false
}

// leakRate is the steady memory growth a supporting metric measured.
func leakRate(h *Hypothesis) string {
	for _, f := range append(slices.Clone(h.Primary), h.Support...) {
		if r := f.fact("leak_rate"); r != "" {
			return r
		}
	}
	return ""
}

// hostGaveUp reports whether the host's service manager stopped
// restarting the failed process.
func hostGaveUp(h *Hypothesis) bool {
	for _, f := range append(slices.Clone(h.Primary), h.Support...) {
		l := strings.ToLower(f.fact("line") + " " + f.fact("template"))
		if strings.Contains(l, "start request repeated too quickly") || strings.Contains(l, "failed to start") {
			return true
		}
	}
	return false
}

func capitalizeName(dep string) string {
	switch dep {
	case "postgresql":
		return "PostgreSQL"
	case "mysql":
		return "MySQL"
	case "mongodb":
		return "MongoDB"
	case "rabbitmq":
		return "RabbitMQ"
	}
	return capitalize(dep)
}

// hostRoleOf names what a host runs (a database) when its findings say.
func hostRoleOf(h *Hypothesis) string {
	for _, f := range h.Primary {
		if f.fact("host") == "" {
			continue
		}
		for _, r := range f.Related {
			switch r {
			case "postgresql", "mysql", "mongodb", "redis":
				return capitalizeName(r) + " database"
			}
		}
	}
	return ""
}

// dnsCallers lists the services whose DNS lookups failed.
func dnsCallers(h *Hypothesis) string {
	var cs []string
	for _, f := range h.Support {
		if f.Kind == KindDNS {
			for _, c := range append([]string{f.fact("caller")}, f.Related...) {
				if c != "" && c != h.Subject && !containsStr(cs, c) && c != "kube-dns" && c != "coredns" {
					cs = append(cs, c)
				}
			}
		}
	}
	return strings.Join(cs, ", ")
}

func changePhrase(c *Finding) string {
	label := map[Kind]string{KindDeploy: "deploy", KindConfigChange: "config change", KindFeatureFlag: "feature flag change", KindInfraChange: "infrastructure change", KindResourceChange: "resource change"}[c.Kind]
	if c.fact("restart") != "" {
		label = "rollout restart (pod template unchanged: the new pods re-read their ConfigMaps and Secrets)"
	}
	s := label
	if c.Subject != "" && c.Subject != "*" {
		s += " of " + c.Subject
	}
	if r := c.fact("revision"); r != "" {
		s += " (revision " + r + ")"
	}
	s += " at " + ts(c.Time)
	if d := c.fact("description"); d != "" {
		s += ": " + quote(d, 160)
	} else if ch := c.fact("changes"); ch != "" {
		s += ": " + ch
	}
	return s
}

func describeChange(h *Hypothesis) string {
	c := h.Primary[0]
	var kinds []string
	var first *Finding
	for _, f := range h.Support {
		l := infoOf(f.Kind).label
		if !containsStr(kinds, l) {
			kinds = append(kinds, l)
		}
		if first == nil || f.Time.Before(first.Time) {
			first = f
		}
	}
	verb := map[Kind]string{KindDeploy: "a bad deploy (regression)", KindConfigChange: "a bad config change", KindFeatureFlag: "a feature flag change", KindInfraChange: "an infrastructure change", KindResourceChange: "a resource change"}[c.Kind]
	d := fmt.Sprintf("%s caused the failure: the %s was followed (%s later) by %s", capitalize(verb), changePhrase(c), minutesAfter(c.Time, first.Time), strings.Join(kinds, ", "))
	if c.Subject != "" && c.Subject != "*" {
		d += " in " + c.Subject
	}
	d += " (" + first.Summary + ")"
	if m := symptomMechanism(h.Support); m != "" {
		d += "; the failure: " + m
	}
	return d
}

func bestLine(fs []*Finding) string {
	for _, f := range fs {
		if l := f.fact("line"); l != "" {
			return l
		}
		if l := f.fact("last_log"); l != "" {
			return l
		}
	}
	return ""
}

// dependencyVictims names callers whose errors the cause explains.
func dependencyVictims(h *Hypothesis) string {
	var callers []string
	for _, f := range h.Support {
		if infoOf(f.Kind).class != classDependency || f.Kind == KindDNS {
			continue
		}
		for _, c := range append([]string{f.fact("caller")}, f.Related...) {
			// The peer a cause names (the server refusing its
			// client's certificate) logs the same failure: not a caller.
			if c != "" && c != h.Subject && c != f.Subject && c != h.fact("peer") && !isNodeName(c) && !containsStr(callers, c) {
				callers = append(callers, c)
			}
		}
	}
	// An ingress controller or edge proxy in front of the subject is not
	// its caller: it forwards its clients' requests to it.
	var proxies, own []string
	for _, c := range callers {
		if isEdgeProxyName(c) {
			proxies = append(proxies, c)
		} else {
			own = append(own, c)
		}
	}
	switch {
	case len(own) > 0 && len(proxies) > 0:
		return fmt.Sprintf("This explains the errors of its callers (%s) calling %s, and of the ingress proxy in front of it (%s) forwarding requests to it", strings.Join(own, ", "), h.Subject, strings.Join(proxies, ", "))
	case len(proxies) > 0:
		return fmt.Sprintf("This explains the errors of the ingress proxy in front of %s (%s) forwarding requests to it", h.Subject, strings.Join(proxies, ", "))
	case len(own) > 0:
		return fmt.Sprintf("This explains the errors of its callers (%s) calling %s", strings.Join(own, ", "), h.Subject)
	}
	return ""
}

// edgeProxyNameRE is the name of an ingress controller or edge proxy's
// workload: ingress-nginx, Traefik, Envoy (Envoy Gateway, Contour,
// Emissary, Ambassador), Istio's ingress gateway, Kong, HAProxy ingress.
var edgeProxyNameRE = regexp.MustCompile(`(?i)(?:^|[-_.])(?:ingress-nginx|nginx-ingress|traefik|envoy|envoy-gateway|contour|emissary|ambassador|kong|haproxy-ingress|istio-ingressgateway|ingressgateway|ingress-gateway|ingress-controller|ingress)(?:$|[-_.])`)

// isEdgeProxyName reports whether a workload's name is an ingress
// controller's or an edge proxy's, which forwards requests to the
// services behind it rather than calling them.
func isEdgeProxyName(name string) bool {
	return matchLine(edgeProxyNameRE, name)
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// parenthesized is " (s)", or "" when s is unknown.
func parenthesized(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}

func orWord(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func restartsOf(h *Hypothesis) int {
	n := 0
	for _, f := range h.Primary {
		var r int
		fmt.Sscan(f.fact("restarts"), &r)
		n = max(n, r)
	}
	return n
}

func exitMeaningStr(code string) string {
	var c int32
	fmt.Sscan(code, &c)
	return exitMeaning(c)
}

func pressureCondition(res string) string {
	switch res {
	case "memory":
		return "MemoryPressure"
	case "disk":
		return "DiskPressure, disk pressure"
	case "pid":
		return "PIDPressure"
	}
	return "node pressure"
}

func schedulingReason(msg string) string {
	l := strings.ToLower(msg)
	switch {
	case strings.Contains(l, "insufficient memory"):
		return "insufficient memory on the nodes for the pods' memory requests"
	case strings.Contains(l, "insufficient cpu"):
		return "insufficient cpu on the nodes for the pods' cpu requests"
	case strings.Contains(l, "taint"):
		return "the nodes carry taints the pods do not tolerate"
	case strings.Contains(l, "affinity") || strings.Contains(l, "selector"):
		return "no node matches the pods' node affinity/selector"
	case strings.Contains(l, "persistentvolumeclaim") || strings.Contains(l, "volume"):
		return "a volume cannot be bound"
	}
	return ""
}

func databaseMechanism(line string) string {
	l := strings.ToLower(line)
	switch {
	case strings.Contains(l, "query_wait_timeout") || strings.Contains(l, "client_wait_timeout") || strings.Contains(l, "no more connections allowed") || strings.Contains(l, "max_client_conn"):
		return "the connection pool (pgbouncer) is exhausted: every server connection is in use, so queries wait for a connection until they time out (query_wait_timeout)"
	case strings.Contains(l, "too many") || strings.Contains(l, "remaining connection slots") || strings.Contains(l, "max_connections"):
		return "the database refuses new connections (too many connections)"
	case strings.Contains(l, "deadlock"):
		return "transactions deadlock"
	case strings.Contains(l, "pool") || strings.Contains(l, "obtain") || strings.Contains(l, "waiting for"):
		return "the connection pool is exhausted"
	case strings.Contains(l, "lock wait") || strings.Contains(l, "lock timeout") || strings.Contains(l, "obtain lock") || strings.Contains(l, "locknotavailable") || strings.Contains(l, "accessexclusivelock"):
		return "a table lock held by a migration or schema change (DDL) blocks queries until they fail with a lock timeout"
	}
	return "the database rejects queries"
}

// recommend returns the playbook of the winning hypothesis: high is the
// immediate mitigation, medium the fix, low the prevention.
func recommend(h *Hypothesis, sc Scope) []finding.Recommendation {
	s := h.Subject
	var recs []finding.Recommendation
	add := func(p, a string) { recs = append(recs, finding.Recommendation{Priority: p, Action: a}) }
	hi, med, lo := finding.PriorityHigh, finding.PriorityMedium, finding.PriorityLow
	rollback := func() {
		if c := h.Trigger; c != nil && c.Kind == KindDeploy {
			add(hi, rollbackAction(c))
		}
	}
	if m := mechanismOf(h.Kind); m != nil {
		r := &recommender{h: h}
		m.recommend(h, sc, r)
		return r.recs
	}
	switch h.Kind {
	case KindSaturation, KindLatency, KindErrorRate, KindRestarts, KindTargetDown:
		rollback()
		add(hi, fmt.Sprintf("Mitigate on %s: scale it out or shed load, and check its recent changes", orWord(s, "the service")))
		add(med, fmt.Sprintf("Investigate %s", h.top().Summary))
		add(lo, "Add an alert on this signal with the baseline as the threshold")
	case KindDeploy, KindConfigChange, KindFeatureFlag, KindInfraChange, KindResourceChange:
		c := h.Primary[0]
		switch c.Kind {
		case KindDeploy:
			add(hi, rollbackAction(c))
		case KindFeatureFlag:
			add(hi, fmt.Sprintf("Turn the feature flag back off (%s)", truncate(orWord(c.fact("description"), "the flag changed"), 160)))
		case KindConfigChange:
			add(hi, fmt.Sprintf("Revert the config change of %s (%s)", orWord(c.Subject, "the service"), truncate(orWord(c.fact("description"), "last change"), 160)))
		default:
			add(hi, fmt.Sprintf("Revert the change: %s", truncate(c.Summary, 200)))
		}
		add(med, fmt.Sprintf("Find the defect in the change (%s) from the errors it produced before re-applying it", truncate(c.Summary, 160)))
		add(lo, "Roll changes out progressively (canary, flag percentage) with automatic rollback on error-rate alerts")
	default:
		r := &recommender{h: h}
		recommendGeneric(h, r)
		recs = append(recs, r.recs...)
	}
	return recs
}

func rollbackAction(c *Finding) string {
	svc := orWord(c.Subject, "the service")
	prev := c.fact("previous_revision")
	img := c.fact("previous_image")
	switch {
	case prev != "" && img != "":
		return fmt.Sprintf("Roll back %s to revision %s (%s): kubectl rollout undo deployment/%s --to-revision=%s", svc, prev, img, svc, prev)
	case prev != "":
		return fmt.Sprintf("Roll back %s to revision %s: kubectl rollout undo deployment/%s --to-revision=%s", svc, prev, svc, prev)
	case c.fact("revision") != "":
		return fmt.Sprintf("Roll back the deploy of %s (revision %s) to the previous version", svc, c.fact("revision"))
	}
	return fmt.Sprintf("Roll back the last deploy of %s (%s)", svc, truncate(c.Summary, 120))
}

// consequences lists the kinds of supporting findings not named yet.
func consequences(h *Hypothesis) string {
	var labels []string
	for _, f := range h.Support {
		if f.Kind == h.Kind || infoOf(f.Kind).class == classChange || upstreamOf(h, f) {
			continue
		}
		l := infoOf(f.Kind).label
		if f.Subject != "" && f.Subject != h.Subject {
			l += " (" + f.Subject + ")"
		}
		if !containsStr(labels, l) && len(labels) < 5 {
			labels = append(labels, l)
		}
	}
	return strings.Join(labels, ", ")
}

// upstreamOf reports whether f is the hop before h's cause, not its
// consequence: an object a primary finding names in its "upstream" fact
// (the killed holder of a lock left behind).
func upstreamOf(h *Hypothesis, f *Finding) bool {
	for _, p := range h.Primary {
		for _, u := range strings.Split(p.fact("upstream"), "|") {
			if u != "" && (f.Object == u || strings.HasPrefix(f.Object, u+" ")) {
				return true
			}
		}
	}
	return false
}

// dependencyKindOf names what a caller's failing calls go to when the lines
// name no address: the client library or database they mention.
func dependencyKindOf(h *Hypothesis) string {
	for _, f := range append(slices.Clone(h.Primary), h.Support...) {
		for _, l := range []string{f.fact("line"), f.fact("template"), f.fact("last_log")} {
			if d := WellKnownDependency(l, ""); d != "" {
				return "its " + d + " database"
			}
		}
	}
	for _, f := range h.Support {
		if strings.Contains(strings.ToLower(f.fact("init_container")+f.fact("container")), "migrat") {
			return "its database"
		}
	}
	return "its dependency"
}

// initCrash names the init container whose crash loop supports h.
func initCrash(h *Hypothesis) string {
	for _, f := range h.Support {
		if c := f.fact("init_container"); c != "" {
			return c
		}
	}
	return ""
}

// jvmHeapOverLimit describes a JVM heap (-Xmx, from the pod spec or the
// change that set it) at least as large as the container memory limit, ""
// when there is none.
func jvmHeapOverLimit(h *Hypothesis) string {
	lim := h.fact("memory_limit")
	if lim == "" {
		return ""
	}
	q, err := resource.ParseQuantity(lim)
	if err != nil || q.Value() <= 0 {
		return ""
	}
	xs := h.fact("jvm_xmx")
	if h.Trigger != nil {
		if x, _ := xmxOf(h.Trigger.fact("description") + " " + h.Trigger.fact("changes")); x != "" {
			xs = x
		}
	}
	x, n := xmxOf(xs)
	if x == "" || float64(n) < 0.9*float64(q.Value()) {
		return ""
	}
	return fmt.Sprintf("the JVM heap %s exceeds the container memory limit %s", x, lim)
}

// jobOverlapPhrase names the overlapping CronJob runs that hold a shared
// pool's connections, when the reasoner joined them to h.
func jobOverlapPhrase(h *Hypothesis) string {
	for _, f := range h.Support {
		if f.Kind == KindJobOverlap {
			return fmt.Sprintf("; overlapping runs of CronJob %s (up to %s active at once) hold the shared pool's connections, so the pool is exhausted and other clients' queries wait and time out", f.Subject, orWord(f.fact("active_peak"), "several"))
		}
	}
	return ""
}

// loadSurgeOf is the load surge on h's subject that began before (or as)
// h began: the demand that drove it.
func loadSurgeOf(h *Hypothesis) *Finding {
	for _, f := range h.Support {
		if f.Kind == KindLoadSurge && (f.Subject == h.Subject || f.relates(h.Subject)) && (h.Onset.IsZero() || !f.Time.After(h.Onset.Add(5*time.Minute))) {
			return f
		}
	}
	return nil
}

// loadWord names what a load metric counts.
func loadWord(metric string) string {
	m := strings.ToLower(metric)
	switch {
	case strings.Contains(m, "connection") || strings.Contains(m, "conns") || strings.Contains(m, "websocket") || strings.Contains(m, "_ws_"):
		return "connections (" + metric + ")"
	case strings.Contains(m, "session"):
		return "sessions (" + metric + ")"
	case strings.Contains(m, "client"):
		return "clients (" + metric + ")"
	case strings.Contains(m, "consum") || strings.Contains(m, "message") || strings.Contains(m, "record"):
		return "messages consumed (" + metric + ")"
	}
	return "request traffic (" + metric + ")"
}

// symptomMechanism names the concrete failure mechanism of the strongest
// symptom a change hypothesis rests on, so a description blaming a change
// still says how things fail: a container that cannot start, the last
// termination reason and exit code with the log line that carries the
// cause, an event's message, or an error line.
func symptomMechanism(fs []*Finding) string {
	ranked := slices.Clone(fs)
	slices.SortStableFunc(ranked, func(a, b *Finding) int {
		sa, sb := infoOf(a.Kind).prior*a.Weight, infoOf(b.Kind).prior*b.Weight
		switch {
		case sa > sb:
			return -1
		case sa < sb:
			return 1
		}
		return 0
	})
	for _, f := range ranked {
		switch {
		case f.fact("start_message") != "":
			return fmt.Sprintf("the container's command/entrypoint cannot start — %s: %s", startMechanism(f.fact("start_message")), quote(truncate(f.fact("start_message"), 200), 210))
		case f.Kind == KindCrashLoop && f.fact("exit_code") != "":
			m := fmt.Sprintf("the containers exit with code %s (%s)", f.fact("exit_code"), exitMeaningStr(f.fact("exit_code")))
			if r := f.fact("reason"); r != "" && r != "Error" {
				m += ", reason " + r
			}
			if l := f.fact("last_log"); l != "" {
				m += "; last log line: " + quote(lastLineOfExit(l, f.fact("exit_code")), 200)
			}
			return m
		case f.fact("line") != "":
			return quote(ReadableLine(f.fact("line")), 200)
		case f.fact("last_log") != "":
			return quote(ReadableLine(f.fact("last_log")), 200)
		case f.Source == SrcEvents && f.fact("message") != "" && f.fact("resolved") == "":
			return fmt.Sprintf("%s: %s", orWord(f.fact("reason"), "event"), quote(truncate(f.fact("message"), 200), 210))
		}
	}
	return ""
}

// networkChangeWord names what a network change changed: a NetworkPolicy,
// a security group, a firewall rule, egress rules.
func networkChangeWord(c *Finding) string {
	desc := strings.ToLower(c.fact("description") + " " + c.Summary)
	for _, w := range []struct{ re, word string }{{"networkpolic", "NetworkPolicy"}, {"network polic", "network policy"}, {"security group", "security group"}, {"firewall", "firewall rule"}, {"egress", "egress rule"}, {"acl", "network ACL"}} {
		if strings.Contains(desc, w.re) {
			return w.word
		}
	}
	return "network rule"
}

// timeoutTargets lists the destinations the timeouts of h (and those it
// is supported by from the same caller) reach.
func timeoutTargets(h *Hypothesis, def string) string {
	var ts []string
	for _, f := range append(slices.Clone(h.Primary), h.Support...) {
		if f.Kind != KindTimeout {
			continue
		}
		if d := orWord(f.fact("well_known"), f.fact("dependency")); d != "" && d != h.fact("caller") && !containsStr(ts, d) {
			ts = append(ts, d)
		}
	}
	if len(ts) == 0 {
		return def
	}
	return strings.Join(ts, ", ")
}
