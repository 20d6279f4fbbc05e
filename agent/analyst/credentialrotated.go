package analyst

import (
	"cmp"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// A credential rotated under running clients: a secret manager (AWS
// Secrets Manager's rotation function, Vault's rotate-root, a rotation
// job) changes a database or service password, and the clients that read
// the old one at startup (an environment variable from a Secret, a config
// file) keep it. Their open connections keep working; every new one is
// refused ("password authentication failed", MySQL's "Access denied for
// user", SQL Server's "Login failed for user", Redis' WRONGPASS), so the
// errors begin some minutes after the rotation, as the pools recycle
// their connections, and grow. No deploy precedes them: the rotation is
// the change, recorded by the rotation function's log, CloudTrail
// (RotateSecret, PutSecretValue), the database's own log (ALTER USER …
// PASSWORD) or the secret's LastRotatedDate.

// KindCredentialRotated is clients refused after their credential was
// rotated.
const KindCredentialRotated Kind = "credential_rotated"

// refusedClient is what the logs of one client a server refuses say: its
// namespace, when the refusals began and were last seen, how many there
// were and the line that tells most.
type refusedClient struct {
	first, last time.Time
	line        string
	n           int
	ns          string
}

// tallyRefusal counts n refusals, first seen at and last seen last, in
// the logs of client set.Subject, and returns the client.
func tallyRefusal(clients map[string]*refusedClient, set *LogSet, at, last time.Time, n int) *refusedClient {
	c := clients[set.Subject]
	if c == nil {
		c = &refusedClient{ns: set.Namespace}
		clients[set.Subject] = c
	}
	c.first = earliest(c.first, at)
	c.last = latest(c.last, last)
	c.n += n
	return c
}

// refusedByPattern tallies the clients whose incident log lines match re,
// each keeping the line that tells most, and returns them with their names
// most refused first; each is called with every matching line. Mechanisms
// that blame the refused client's own setting (a paused account, a test
// key) start here.
func refusedByPattern(ev *Gathered, re *regexp.Regexp, each func(line string)) (map[string]*refusedClient, []string) {
	clients := map[string]*refusedClient{}
	for x := range incidentMatches(ev, re) {
		tallyRefusal(clients, x.set, orTime(x.t.FirstIncident, x.t.FirstSeen), x.t.LastSeen, x.t.Incident).keep(x.line)
		if each != nil {
			each(x.line)
		}
	}
	return clients, mostRefused(clients)
}

// workloadFinding is the finding of kind about the refused client subject:
// critical, read from its logs, with its count, its line and when the
// refusals began.
func (c *refusedClient) workloadFinding(kind Kind, subject string) Finding {
	f := Finding{Kind: kind, Subject: subject, Namespace: c.ns, Time: c.first, Severity: SevCritical, Weight: 0.9,
		Source: SrcLogs, Object: "workload " + subject}
	f.addCount(c.n)
	f.setFact("line", c.line)
	f.setFact("refused_from", hm(c.first))
	return f
}

// mostRefused names the clients, the one refused most first (ties in
// name order, so that the choice never depends on a map's order).
func mostRefused(clients map[string]*refusedClient) []string {
	names := slices.Collect(maps.Keys(clients))
	slices.SortFunc(names, func(a, b string) int {
		if d := cmp.Compare(clients[b].n, clients[a].n); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	return names
}

// keep keeps line as the client's line when it tells more than the one
// kept.
func (c *refusedClient) keep(line string) {
	if c.line == "" || RootCauseScore(line) > RootCauseScore(c.line) {
		c.line = line
	}
}

// refusalOf reports whether a finding is an authentication, log-error,
// error-rate or database finding of the hypothesis's client (its subject
// or the caller it names) or one for which also holds.
func refusalOf(h *Hypothesis, f *Finding, also bool) bool {
	switch f.Kind {
	case KindAuth, KindLogErrors, KindErrorRate, KindDatabase:
		return f.Subject == h.Subject || f.fact("caller") == h.Subject || also
	}
	return false
}

// dbServerLog reports whether a log set is a database server's own (a
// host's database role, or RDS's in CloudWatch), not a client's.
func dbServerLog(set *LogSet) bool {
	return hostRole(*set) != "" || set.Origin == SrcCloudWatch && strings.Contains(set.Source, "/rds/")
}

var credentialRotated = &mechanism{
	kind:   KindCredentialRotated,
	class:  classCause,
	label:  "credential rotated, clients still use the old one",
	detect: detectRotatedCredential,
	related: func(h *Hypothesis, f *Finding) bool {
		return refusalOf(h, f, slices.Contains(f.Related, h.Subject) || f.Kind == KindAuth && matchLine(staleCredentialRE, f.fact("line")))
	},
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("the credential %s uses was rotated at %s UTC (%s)", h.Subject, h.fact("rotated_at"), quote(ReadableLine(h.fact("rotation")), 180))
		d += h.clause(", secret ", "secret")
		d += fmt.Sprintf(", and %s still holds the old password: from %s UTC each new connection it opens is refused, authentication fails (%s)",
			h.Subject, h.fact("refused_from"), quote(ReadableLine(h.fact("line")), 180))
		if u := h.fact("user"); u != "" {
			d += fmt.Sprintf("; the database refuses user %s too", u)
		}
		if p := h.fact("pods_since"); p != "" {
			d += fmt.Sprintf(". Its pods started %s, before the rotation, and read the password %s once at startup", p, orWord(h.fact("read_from"), "then"))
		}
		d += "; connections opened before the rotation keep working, so the errors grow as the pool replaces them"
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Restart %s (kubectl rollout restart) so that its pods read the current password%s", h.Subject, rotatedIf(h.fact("secret"), " of "+h.fact("secret")))
		r.med("Make %s pick up a rotated credential: read it from a mounted file or the secret manager at connect time (AWS JDBC wrapper, a reloader that restarts on Secret changes), or use a rotation strategy that keeps the previous password valid (alternating users)", h.Subject)
		r.low("Alert on authentication failures after each rotation and rehearse the rotation in staging")
	},
}

var (
	// A client refused for its password or key (not a missing
	// permission): PostgreSQL 28P01, MySQL 1045, SQL Server 18456,
	// Oracle ORA-01017, Redis WRONGPASS, MongoDB, Kafka SASL, RabbitMQ.
	staleCredentialRE = regexp.MustCompile(`(?i)password authentication failed|Access denied for user '[^']*'@|Login failed for user|ORA-01017|WRONGPASS|invalid username-password pair|SASL authentication failed|Authentication failed\.|ACCESS_REFUSED - Login was refused|SQLSTATE\[28P01\]|SQLState: 28P01|invalid password`)
	// A credential being rotated or a password changed: a rotation
	// function's steps (AWS's createSecret/setSecret/finishSecret),
	// CloudTrail's calls, the database's ALTER USER, Vault, the secret's
	// LastRotatedDate.
	rotationRE = regexp.MustCompile(`(?i)\bcredential rotation\b|\bnew (?:DB |database )?password (?:written|stored|set|generated|saved)|"operation":\s*"(?:update|create)"\s*,\s*"path":\s*"[^"]*(?:/db|database|passw|cred)[^"]*"|\b(?:RotateSecret|PutSecretValue|UpdateSecretVersionStage|RotateRootCredentials|ResetUserPassword)\b|(?:set|finish)Secret: Successfully|\bRotation step (?:set|finish)Secret\b|\b(?:scheduled|automatic|manual|immediate) rotation of\b|rotation (?:of \S+ )?(?:succeeded|completed|complete|finished)|rotated (?:the )?(?:secret|password|credentials?)|ALTER (?:USER|ROLE|LOGIN) \S+ (?:WITH )?(?:ENCRYPTED )?PASSWORD|ALTER USER .* IDENTIFIED (?:WITH \S+ )?BY|SET PASSWORD FOR|rotate-root|LastRotatedDate|password (?:was )?(?:changed|rotated|reset) for`)
	// The user a refusal names.
	refusedUserRE = regexp.MustCompile(`(?i)(?:for user|user) ["'\x60]?([\w.@-]+)["'\x60]?`)
	// The secret a rotation names (an ARN's secret:NAME, --secret-id).
	rotatedSecretRE = regexp.MustCompile(`secret:([\w/+=.@-]+?)(?:-[A-Za-z0-9]{6})?(?:[\s.,"]|$)`)
)

// detectRotatedCredential finds clients refused for their password from
// some time after a rotation of a credential (up to a day before), and
// names the rotation.
func detectRotatedCredential(ev *Gathered, _ []Finding) []Finding {
	clients := map[string]*refusedClient{}
	var user string
	var serverFirst time.Time
	for x := range incidentMatches(ev, staleCredentialRE) {
		set, t, line := x.set, x.t, x.line
		at := orTime(t.FirstSeen, t.FirstIncident)
		if dbServerLog(set) {
			// The server's own log: who it refuses.
			serverFirst = earliest(serverFirst, at)
			if m := findSubmatch(refusedUserRE, line); m != nil && user == "" {
				user = m[1]
			}
			continue
		}
		tallyRefusal(clients, set, at, t.LastSeen, t.Incident).keep(line)
	}
	if len(clients) == 0 {
		return nil
	}
	names := mostRefused(clients)
	name := names[0]
	c := clients[name]
	onset := c.first
	// The rotation: the latest one within a day before the refusals began
	// (a pool recycles its connections within hours), not after them.
	var steps []timedLine
	for _, l := range append(changeLines(ev, rotationRE), eventLines(ev, rotationRE)...) {
		if !l.Time.IsZero() && !l.Time.After(onset.Add(time.Minute)) && onset.Sub(l.Time) <= 24*time.Hour {
			steps = append(steps, l)
		}
	}
	sort.SliceStable(steps, func(i, j int) bool { return steps[i].Time.Before(steps[j].Time) })
	// The client's own record of reading a changed credential (its
	// secret-rendering sidecar, its file watcher) shortly before the
	// refusals: a rotation it picked up, recorded or not elsewhere.
	var reload timedLine
	for _, l := range reloadLines(ev, name) {
		if !l.Time.After(onset.Add(time.Minute)) && onset.Sub(l.Time) <= time.Hour && (reload.Text == "" || l.Time.Before(reload.Time)) {
			reload = l
		}
	}
	if len(steps) == 0 && reload.Text != "" {
		steps = append(steps, reload)
	}
	if len(steps) == 0 {
		return nil
	}
	// Of the last rotation's steps (ten minutes up to its last record),
	// the one that changed the password on the server says when the old
	// one stopped working.
	end := steps[len(steps)-1].Time
	var rot timedLine
	for _, l := range steps {
		if end.Sub(l.Time) <= 10*time.Minute && (rot.Text == "" || rotationStepRank(l.Text) > rotationStepRank(rot.Text)) {
			rot = l
		}
	}
	kind := KindCredentialRotated
	// Clients that read the credential again after the rotation (their
	// containers started since) and are still refused hold the new one:
	// the server still has the old.
	reloaded := reloadedAfter(ev.K8s.Pods, name, rot.Time)
	if reload.Text != "" && !reload.Time.Before(rot.Time) && (reloaded.IsZero() || reload.Time.Before(reloaded)) {
		reloaded = reload.Time
	}
	if !reloaded.IsZero() && !reloaded.After(c.first.Add(time.Minute)) {
		kind = KindCredentialNotApplied
	}
	f := Finding{Kind: kind, Subject: name, Namespace: c.ns, Time: rot.Time, Severity: SevCritical, Weight: 0.9,
		Source: SrcLogs, Object: "workload " + name}
	f.setFact("rotation", rot.Text)
	f.setFact("rotated_at", rot.Time.UTC().Format("2006-01-02 15:04:05"))
	// The database's own refusals may be read from further back than the
	// clients' logs.
	first := c.first
	if !serverFirst.IsZero() && serverFirst.Before(first) && !serverFirst.Before(rot.Time) {
		first = serverFirst
	}
	f.setFact("refused_from", first.UTC().Format("15:04:05"))
	f.setFact("line", c.line)
	f.setFact("user", user)
	for _, l := range steps {
		if end.Sub(l.Time) > 10*time.Minute || f.fact("secret") != "" {
			continue
		}
		if m := findSubmatch(rotatedSecretRE, l.Text+" "); m != nil {
			f.setFact("secret", m[1])
		} else if s := commandFlag(l.From, "--secret-id", "--name"); s != "" {
			f.setFact("secret", s)
		}
	}
	f.addCount(c.n)
	f.Evidence = append(f.Evidence,
		fmt.Sprintf("%s: the credential was rotated at %s: %s", rot.From, ts(rot.Time), quote(rot.Text, 200)),
		fmt.Sprintf("%s logged %d lines of refused authentication from %s to %s: %s", name, c.n, ts(c.first), ts(c.last), quote(ReadableLine(c.line), 200)))
	for _, l := range steps {
		if l.Text != rot.Text && end.Sub(l.Time) <= 10*time.Minute && len(f.Evidence) < 5 && rotationStepRank(l.Text) >= 2 {
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s: %s", l.From, quote(l.Text, 200)))
		}
	}
	if !serverFirst.IsZero() && user != "" {
		f.Evidence = append(f.Evidence, fmt.Sprintf("the database's own log refuses user %s from %s", user, ts(serverFirst)))
	}
	if kind == KindCredentialNotApplied {
		f.setFact("reloaded_at", ts(reloaded))
		f.setFact("why", "the client read the rotated credential and the server still refuses it")
		if m := findSubmatch(refusedUserRE, c.line); m != nil && user == "" {
			f.setFact("user", m[1])
		}
		n := 0
		for _, l := range reloadLines(ev, name) {
			if l.Time.Before(rot.Time) || l.Time.After(onset.Add(time.Minute)) || n >= 2 {
				continue
			}
			n++
			if strings.HasPrefix(l.From, "previous log") || matchLine(reloadExitRE, l.Text) {
				f.setFact("reload_exit", l.Text)
			}
			if l.Text != rot.Text {
				f.Evidence = append(f.Evidence, fmt.Sprintf("%s: %s read the changed credential at %s: %s", l.From, name, ts(l.Time), quote(ReadableLine(l.Text), 200)))
			}
		}
		if n == 0 || len(f.Evidence) < 3 {
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s read the changed credential at %s, after the rotation, and is refused from then on", name, ts(reloaded)))
		}
		f.Summary = fmt.Sprintf("%s's new credential, rotated at %s, refused from %s UTC: the server still has the old one", name, hm(rot.Time), hm(first)[:5])
		return []Finding{f}
	}
	// The pods that hold the old password: started before the rotation.
	started, from := podsStartedBefore(ev.K8s.Pods, name, rot.Time)
	if !started.IsZero() {
		f.setFact("pods_since", ts(started))
		f.setFact("read_from", from)
		f.Evidence = append(f.Evidence, fmt.Sprintf("the pods of %s started at %s, before the rotation, and were not restarted since", name, ts(started)))
	}
	f.Summary = fmt.Sprintf("%s's connections refused from %s UTC after its credential was rotated at %s", name, hm(first)[:5], hm(rot.Time))
	return []Finding{f}
}

// changeLines lists the recorded changes whose description matches re, as
// lines with their times.
func changeLines(ev *Gathered, re *regexp.Regexp) []timedLine {
	var out []timedLine
	for _, c := range append(slices.Clone(ev.Earlier), ev.Changes...) {
		if matchLine(re, c.Description) {
			out = append(out, timedLine{Time: c.Timestamp, Text: c.Description, From: "change of " + c.Service})
		}
	}
	return out
}

// credentialReloadRE matches a client reading a changed credential: Vault
// Agent re-rendering a secrets file, an application's file watcher,
// Stakater Reloader restarting a workload for a changed Secret, a
// process reloading its credentials.
var credentialReloadRE = regexp.MustCompile(`(?i)\(runner\) rendered .*=> "?[^"\s]*(?:secret|cred|passw|/db)|\bcredentials? (?:file )?\S* ?(?:changed|updated|rotated)\b|Changes detected in '[^']+' of type 'SECRET'|\b(?:reload(?:ing|ed)?|re-?read(?:ing)?|picking up) (?:the )?(?:new |rotated )?(?:db |database )?(?:credentials?|password|secret)\b`)

// reloadExitRE is a process stopping itself to pick a credential up.
var reloadExitRE = regexp.MustCompile(`(?i)\bexit(?:ing)?\b|restart(?:ing)?\b|shutting down`)

// reloadLines are the lines of workload's logs, current and previous,
// where it read a changed credential, each at the last time it did.
func reloadLines(ev *Gathered, workload string) []timedLine {
	var out []timedLine
	for i := range ev.Logs {
		set := &ev.Logs[i]
		if set.Subject != workload {
			continue
		}
		for _, t := range set.Templates {
			if l := templateLine(t, credentialReloadRE); l != "" {
				out = append(out, timedLine{Time: orTime(t.LastSeen, t.FirstSeen), Text: l, From: "logs " + set.Source})
			}
		}
	}
	for key, lines := range ev.K8s.PreviousLogs {
		// key is namespace/pod/container.
		parts := strings.SplitN(key, "/", 3)
		if len(parts) < 2 {
			continue
		}
		pod := parts[1]
		wl := workloadOfName(pod)
		for i := range ev.K8s.Pods {
			if ev.K8s.Pods[i].Name == pod {
				wl = WorkloadOfPod(&ev.K8s.Pods[i])
			}
		}
		if wl != workload {
			continue
		}
		for _, l := range lines {
			if matchLine(credentialReloadRE, l.Text) && !l.Time.IsZero() {
				out = append(out, timedLine{Time: l.Time, Text: l.Text, From: "previous log of pod " + pod})
			}
		}
	}
	return out
}

// reloadedAfter is when the last container of workload's running pods
// (re)started, if that is after t (zero otherwise): a client that started
// since a rotation read the rotated credential.
func reloadedAfter(pods []corev1.Pod, workload string, t time.Time) time.Time {
	var last time.Time
	for i := range pods {
		p := &pods[i]
		if WorkloadOfPod(p) != workload || p.Status.Phase != corev1.PodRunning {
			continue
		}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Running != nil && cs.State.Running.StartedAt.After(t) {
				last = latest(last, cs.State.Running.StartedAt.Time)
			}
		}
	}
	return last
}

// rotationStepRank orders the records of one rotation by what they say:
// the password set on the server, then the call that rotated the secret,
// then a stage moved, then a date of last rotation.
func rotationStepRank(s string) int {
	l := strings.ToLower(s)
	switch {
	case strings.Contains(l, "setsecret"), strings.Contains(l, "alter "), strings.Contains(l, "set password"), strings.Contains(l, "rotate-root"):
		return 4
	case strings.Contains(l, "rotatesecret"), strings.Contains(l, "putsecretvalue"), strings.Contains(l, "rotat"):
		return 3
	case strings.Contains(l, "finishsecret"), strings.Contains(l, "updatesecretversionstage"):
		return 2
	case strings.Contains(l, "lastrotateddate"):
		return 0
	}
	return 1
}

// podsStartedBefore reports when the running pods of workload started
// (the latest start, all before t; zero when any started after t or none
// is known) and, as words, where their containers read a password from
// ("from Secret statements-db into SPRING_DATASOURCE_PASSWORD").
func podsStartedBefore(pods []corev1.Pod, workload string, t time.Time) (time.Time, string) {
	var last time.Time
	from := ""
	for i := range pods {
		p := &pods[i]
		if WorkloadOfPod(p) != workload || p.Status.Phase != corev1.PodRunning {
			continue
		}
		st := p.CreationTimestamp.Time
		if p.Status.StartTime != nil {
			st = p.Status.StartTime.Time
		}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Running != nil && cs.State.Running.StartedAt.After(st) {
				st = cs.State.Running.StartedAt.Time
			}
		}
		if st.IsZero() || !st.Before(t) {
			return time.Time{}, ""
		}
		last = latest(last, st)
		for _, c := range p.Spec.Containers {
			for _, e := range c.Env {
				if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && strings.Contains(strings.ToLower(e.Name+e.ValueFrom.SecretKeyRef.Key), "pass") && from == "" {
					from = fmt.Sprintf("from Secret %s into the environment variable %s", e.ValueFrom.SecretKeyRef.Name, e.Name)
				}
			}
		}
	}
	return last, from
}

// rotatedIf is s when cond is set.
func rotatedIf(cond, s string) string {
	if cond == "" {
		return ""
	}
	return s
}
