package kubetext

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// block is one command and the lines of its output.
type block struct {
	cmd   *command
	text  string // the command line, when it is not kubectl
	line  int    // 1-based line of the command
	host  string // the machine the prompt names, if it does
	lines []string
}

type objKey struct{ kind, ns, name string }

type parser struct {
	ref    time.Time
	res    Result
	objs   map[objKey]int // index in res.Objects
	form   map[objKey]string
	events map[eventKey]int
	// cutMsgs are the events whose message kubectl get events cut at
	// its first line ("...: exit status 32..."), by their key without the
	// message, so that the whole message (kubectl events, describe)
	// replaces them.
	cutMsgs  map[eventKey][]int
	logLines int
	// cutObjects and cutEvents record that a limit was reached (reported once).
	cutObjects, cutEvents, cutOutputs bool
	// workloadLogs are kubectl logs KIND/NAME outputs waiting for their pod.
	workloadLogs []workloadLog
	// exported are the events read from an event exporter's log without
	// a namespace (placeExportedEvents), by index in res.Events.
	exported []int
	// shellHost is the machine an interactive "ssh host" opened: the
	// commands typed after it ran there, until exit or the next ssh.
	shellHost string
}

func newParser(ref time.Time) *parser {
	return &parser{ref: ref, objs: map[objKey]int{}, form: map[objKey]string{}, events: map[eventKey]int{}, cutMsgs: map[eventKey][]int{}}
}

func (p *parser) result() *Result { return &p.res }

func (p *parser) skip(line int, cmd, reason string) {
	if len(p.res.Skipped) >= MaxSkips {
		return
	}
	p.res.Skipped = append(p.res.Skipped, Skip{Line: line, Command: cmd, Reason: reason})
}

// splitLines cuts data into lines, dropping "\r" and cutting lines longer
// than MaxLine.
func splitLines(data []byte) []string {
	n := bytes.Count(data, []byte{'\n'}) + 1
	out := make([]string, 0, n)
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		var l []byte
		if i < 0 {
			l, data = data, nil
		} else {
			l, data = data[:i], data[i+1:]
		}
		l = bytes.TrimRight(l, "\r")
		if len(l) > MaxLine {
			l = l[:MaxLine]
		}
		out = append(out, strings.ToValidUTF8(strings.ReplaceAll(stripANSI(string(l)), "\t", "    "), "\uFFFD"))
	}
	return out
}

func (p *parser) run(data []byte) {
	lines := stripStamps(splitLines(data))
	ps := learnPrompts(lines)
	var blocks []*block
	var pre bool
	var session *block // an interactive kubectl exec shell, until its exit
	closed := false    // a code fence ended the last command's output
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		text, ok := ps.command(l)
		if ok {
			// A command continued with a trailing backslash.
			first := i
			for n := 0; ; n++ {
				t, more := continued(text)
				if !more || i+1 >= len(lines) || n >= maxContinued || len(text) > MaxLine {
					break
				}
				i++
				text = strings.TrimSpace(t + " " + continuation(lines[i]))
			}
			closed = false
			b := &block{text: text, line: first + 1, host: promptHost(l)}
			b.cmd, _ = parseCommand(text, first+1)
			if session != nil && b.cmd == nil {
				// "$ env" typed in the exec shell: the session goes on.
				session.lines = append(session.lines, lines[first:i+1]...)
				if shellExit(text) {
					session = nil
				}
				continue
			}
			session = nil
			if b.cmd != nil && execSession(b.cmd) {
				session = b
			}
			blocks = append(blocks, b)
			continue
		}
		if fence(l) {
			// A Markdown code fence ends the output: the prose after it is
			// no command's output.
			closed = true
			continue
		}
		if len(blocks) == 0 || closed {
			if strings.TrimSpace(l) != "" && !pre && len(blocks) == 0 {
				pre = true
				p.skip(i+1, "", "text before the first \"$ kubectl\" line")
			}
			continue
		}
		b := blocks[len(blocks)-1]
		b.lines = append(b.lines, l)
		if session != nil {
			if m := shellPromptRe.FindStringSubmatch(l); m != nil && shellExit(m[1]) {
				session = nil
			}
		}
	}
	for _, b := range blocks {
		p.block(b)
	}
	p.applyRollouts()
	p.applyHistories()
	p.resolveWorkloadLogs()
	p.placeExportedEvents()
	p.nameRowContainers()
	slices.SortStableFunc(p.res.Outputs, func(a, b Output) int { return a.Line - b.Line })
}

func (p *parser) block(b *block) {
	c := b.cmd
	out := b.lines
	if c == nil && b.text != "" {
		if h, ok := sshShell(b.text); ok {
			p.shellHost = h
		} else if shellExit(strings.TrimSpace(b.text)) {
			p.shellHost = ""
		} else if b.host == "" {
			b.host = p.shellHost
		}
	}
	// Trailing blank lines carry nothing, nor does a prompt the
	// transcript ends with, nothing typed after it ("❯ ", "PS C:\> ").
	for len(out) > 0 && barePrompt(out[len(out)-1]) {
		out = out[:len(out)-1]
	}
	if redirected(b.text) {
		// The output went to a file: what the terminal shows after the
		// command is its stderr (an error, a warning), or nothing but a
		// prompt.
		kept := out[:0:0]
		for _, l := range out {
			if !barePrompt(l) {
				kept = append(kept, l)
			}
		}
		if c != nil && len(kept) > 0 {
			kept = p.notFound(c, kept, b.line+1)
		}
		if len(kept) > 0 {
			p.keepHost(b, kept)
		}
		return
	}
	if c == nil {
		// stern's output is logs; another program's output (curl, dig,
		// psql, systemctl status) is kept as text.
		if b.text != "" && len(out) > 0 && !p.stern(b.text, out, b.line) {
			p.helm(b.text, out, b.line)
			if logQueryRe.MatchString(b.text) {
				// A log store's query of an event exporter's stream
				// holds events, as kubectl logs of the exporter does.
				p.exportedEvents(out)
			}
			p.keepHost(b, out)
		}
		return
	}
	if len(out) == 0 {
		return
	}
	if strings.HasPrefix(strings.TrimSpace(out[0]), "No resources found") && len(out) == 1 {
		return // an empty answer: nothing to read
	}
	if out = p.notFound(c, out, b.line+1); len(out) == 0 {
		return // only NotFound answers, recorded as absences
	}
	if strings.Contains(b.text, "--show-managed-fields") {
		// The objects read drop their managedFields; who changed which
		// field (a hand-run kubectl set, edit or patch) is kept as text.
		p.keepHost(b, out)
	}
	if n := kubectlNotes(c, out); n > 0 {
		// kubectl's own warnings on stderr before the output (a short
		// name's ambiguity, a deprecated API, an API group it could not
		// list): kept as text, the output read after them.
		p.keepText(c.text, c, out[:n], b.line)
		if out = out[n:]; len(out) == 0 {
			return
		}
		b.line += n
	}
	switch c.verb {
	case "rollout":
		p.rollout(c, out, b.line)
		return
	case "exec", "debug", "attach":
		p.exec(c, out, b.line)
		return
	case "run":
		if execSession(c) || strings.Contains(c.text, " -- ") {
			p.exec(c, out, b.line)
			return
		}
	case "auth":
		p.auth(c, out, b.line)
		return
	case "stern":
		p.stern(c.text, out, b.line)
		return
	}
	if msg := kubectlError(c, out); msg != "" {
		// The error is evidence too (Forbidden: the credentials may not
		// list pods; the connection to the server was refused): kept as
		// text.
		p.skip(b.line, c.text, "kubectl answered an error (kept as text): "+msg)
		p.keepText(c.text, c, out, b.line)
		return
	}
	switch c.verb {
	case "describe":
		p.describe(c, out, b.line+1)
	case "get":
		p.get(c, out, b.line+1)
	case "events":
		p.eventsTable(c, out, b.line+1)
	case "logs", "log":
		p.logs(c, out, b.line)
	case "top":
		p.top(c, out, b.line+1)
	default:
		// Kept as text: kubectl version, api-resources, config view...
		p.keepText(c.text, c, out, b.line)
		p.skip(b.line, c.text, fmt.Sprintf("kubectl %s output is not read into objects (kept as text)", c.verb))
	}
}

// logsErrorRe are the errors kubectl logs prints instead of a log (a log
// line of the application may well start with "error:").
var logsErrorRe = regexp.MustCompile(`^(Error from server \(|error: (a container name must be specified|container \S+ is not valid|the server doesn't have|unable to|You must be logged in|pods? "[^"]*" not found))`)

// notFoundRe is kubectl's answer for an object the API server does not
// have: `Error from server (NotFound): secrets "x" not found` (the
// resource may carry its group: deployments.apps); kubectl logs of 1.2x
// and later says `error: error from server (NotFound): pods "x" not found
// in namespace "shop"`.
var notFoundRe = regexp.MustCompile(`^(?:error: )?[Ee]rror from server \(NotFound\): ([a-z0-9.-]+) "([^"]+)" not found(?: in namespace "([^"]+)")?$`)

// notFound records the NotFound answers of a command as absences and
// returns the rest of its output. kubectl prints them on stderr, among the
// objects it found (get pod a b), so for get and describe they are taken
// from any line; for logs, whose lines are the application's, only from
// a short output's first line (the answer instead of a log). A NotFound
// about another resource than the command names (a namespace) counts too.
func (p *parser) notFound(c *command, out []string, first int) []string {
	switch c.verb {
	case "get", "describe", "logs", "log", "top", "events", "exec", "debug", "attach":
	default:
		return out
	}
	logs := c.verb == "logs" || c.verb == "log" || c.verb == "exec" || c.verb == "debug" || c.verb == "attach"
	if logs && (len(out) > 3 || !notFoundRe.MatchString(strings.TrimSpace(out[0]))) {
		return out
	}
	kept := out[:0:0]
	for i, l := range out {
		m := notFoundRe.FindStringSubmatch(strings.TrimSpace(l))
		if m == nil || logs && i > 0 {
			kept = append(kept, l)
			continue
		}
		kind := kindOf(m[1])
		if kind == "" {
			kind = kindOf(strings.SplitN(m[1], ".", 2)[0])
		}
		if kind == "" {
			p.skip(first+i, c.text, "kubectl answered NotFound for a kind not read: "+strings.TrimSpace(l))
			continue
		}
		ns := c.ns()
		if m[3] != "" {
			ns = m[3]
		}
		if clusterScoped[kind] {
			ns = ""
		}
		if len(p.res.Absent) < MaxAbsent {
			p.res.Absent = append(p.res.Absent, Absence{Kind: kind, Namespace: ns, Name: m[2], Line: first + i, Command: c.text, Message: strings.TrimSpace(l)})
		}
	}
	if len(kept) == len(out) {
		return out
	}
	// what is left may be blank lines between the answers
	for _, l := range kept {
		if strings.TrimSpace(l) != "" {
			return kept
		}
	}
	return nil
}

// kubectlNoteRe matches what kubectl writes on stderr before a command's
// output: "Warning: short name "ev" could also match lower priority
// resource events.events.k8s.io", "Warning: policy/v1beta1
// PodDisruptionBudget is deprecated...", and its klog lines
// ("E0314 10:02:03.123456   4242 memcache.go:265] couldn't get current
// server API group list: ...").
var kubectlNoteRe = regexp.MustCompile(`^(Warning: |[IWEF]\d{4} \d{2}:\d{2}:\d{2}\.\d+ +\d+ [\w.-]+:\d+\] )`)

// kubectlNotes returns how many of the first lines of a command's output
// are kubectl's own notes. Logs and commands run in containers are left
// whole: their lines are the program's (klog lines included).
func kubectlNotes(c *command, out []string) int {
	switch c.verb {
	case "get", "describe", "events", "top", "rollout":
	default:
		return 0 // auth can-i reads its own warnings
	}
	n := 0
	for n < len(out) && n < 64 && kubectlNoteRe.MatchString(strings.TrimSpace(out[n])) {
		n++
	}
	return n
}

// kubectlError returns the error a command printed instead of output.
func kubectlError(c *command, out []string) string {
	first := strings.TrimSpace(out[0])
	if len(out) > 3 {
		return ""
	}
	if c.verb == "logs" || c.verb == "log" {
		if logsErrorRe.MatchString(first) {
			return first
		}
		return ""
	}
	for _, pfx := range []string{"Error from server", "error:", "Error:", "The connection to the server", "Unable to connect"} {
		if strings.HasPrefix(first, pfx) {
			return first
		}
	}
	return ""
}

// ns returns the namespace of a command: -n, else "" (the context's
// namespace, which the transcript does not show).
func (c *command) ns() string { return c.namespace }

// add records an object, merging it with one already seen. Structured
// objects (form "") replace text ones; text ones only fill what is unset.
func (p *parser) add(kind, ns, name, form string, obj runtime.Object) {
	if name == "" {
		return
	}
	k := objKey{kind, ns, name}
	if form != "" {
		if m, ok := obj.(metav1.Object); ok {
			a := m.GetAnnotations()
			if a == nil {
				a = map[string]string{}
			}
			a[SourceAnnotation] = form
			m.SetAnnotations(a)
		}
	}
	if i, ok := p.objs[k]; ok {
		old := p.form[k]
		switch {
		case formRank[form] > formRank[old]:
			// The richer form is the base; a text form fills what it lacks.
			if form != "" {
				obj = merge(obj, p.res.Objects[i])
			}
			p.res.Objects[i], p.form[k] = obj, form
		case form == old:
			// The same form again (a second describe): the later one is
			// the fresher snapshot.
			p.res.Objects[i] = obj
		case old != "":
			p.res.Objects[i] = merge(p.res.Objects[i], obj)
		}
		return
	}
	if len(p.res.Objects) >= MaxObjects {
		if !p.cutObjects {
			p.cutObjects = true
			p.skip(0, "", fmt.Sprintf("more than %d objects: the rest are dropped", MaxObjects))
		}
		return
	}
	p.objs[k] = len(p.res.Objects)
	p.form[k] = form
	p.res.Objects = append(p.res.Objects, obj)
}

// formRank orders the forms an object may come from: a structured copy
// wins over describe, which wins over a table row. A custom-columns row
// (get-columns) ranks with a table row: the two fill each other.
var formRank = map[string]int{"": 3, "describe": 2, "get-wide": 1, "get": 0, "get-columns": 0}

// Combine joins two text forms of one object read from different
// transcripts (a kubectl get row in one file, a describe page in
// another) as Parse joins them within one: the richer form is the base
// and the other fills what it lacks. It reports false, and leaves the
// choice to the caller, when either is not a text form (a structured
// copy, or a pod only seen through commands run in it).
func Combine(old, obj runtime.Object) (runtime.Object, bool) {
	fo, fn := formOf(old), formOf(obj)
	if fo == "" || fn == "" || fo == SeenForm || fn == SeenForm {
		return old, false
	}
	if formRank[fn] > formRank[fo] {
		return merge(obj, old), true
	}
	return merge(old, obj), true
}

// formOf is the text form an object came from ("" for a structured one).
func formOf(o runtime.Object) string {
	m, ok := o.(metav1.Object)
	if !ok {
		return ""
	}
	return m.GetAnnotations()[SourceAnnotation]
}

// merge fills the fields of a that are unset from b (both text forms of
// one object), through their JSON forms.
func merge(a, b runtime.Object) runtime.Object {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil {
		return a
	}
	var ma, mb map[string]any
	if json.Unmarshal(ja, &ma) != nil || json.Unmarshal(jb, &mb) != nil {
		return a
	}
	fill(ma, mb)
	out := a.DeepCopyObject()
	j, err := json.Marshal(ma)
	if err != nil {
		return a
	}
	if err := json.Unmarshal(j, out); err != nil {
		return a
	}
	return out
}

func fill(a, b map[string]any) {
	for k, vb := range b {
		va, ok := a[k]
		if !ok || va == nil || va == "" {
			a[k] = vb
			continue
		}
		if ma, ok := va.(map[string]any); ok {
			if mb, ok := vb.(map[string]any); ok {
				fill(ma, mb)
			}
		}
	}
}

type eventKey struct {
	kind, name, reason, message string
	count                       int32
}

// addEvent records an event, up to MaxEvents; the same event seen twice
// (a describe section and an events table) is kept once.
func (p *parser) addEvent(e corev1.Event) {
	// kubectl get events prints a message of several lines as its first
	// line and "...": the same event as the whole message.
	bare := eventKey{e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, "", e.Count}
	first, _, multi := strings.Cut(e.Message, "\n")
	for _, i := range p.cutMsgs[bare] {
		o := &p.res.Events[i]
		switch {
		case o.Message == first+"..." && multi:
			delete(p.events, eventKey{bare.kind, bare.name, bare.reason, o.Message, bare.count})
			o.Message = e.Message
			p.events[eventKey{bare.kind, bare.name, bare.reason, e.Message, bare.count}] = i
			return
		case strings.HasSuffix(e.Message, "...") && strings.HasPrefix(o.Message, strings.TrimSuffix(e.Message, "...")+"\n"):
			return
		}
	}
	k := eventKey{e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message, e.Count}
	if i, ok := p.events[k]; ok {
		o := &p.res.Events[i]
		if o.InvolvedObject.Namespace == "" || e.InvolvedObject.Namespace == "" || o.InvolvedObject.Namespace == e.InvolvedObject.Namespace {
			if o.InvolvedObject.Namespace == "" {
				o.InvolvedObject.Namespace, o.Namespace = e.InvolvedObject.Namespace, e.Namespace
			}
			if o.Source.Component == "" {
				o.Source = e.Source
			}
			return
		}
	}
	if len(p.res.Events) >= MaxEvents {
		if !p.cutEvents {
			p.cutEvents = true
			p.skip(0, "", fmt.Sprintf("more than %d events: the rest are dropped", MaxEvents))
		}
		return
	}
	e.TypeMeta = metav1.TypeMeta{Kind: "Event", APIVersion: "v1"}
	if e.Name == "" {
		e.Name = fmt.Sprintf("%s.text%d", e.InvolvedObject.Name, len(p.res.Events)+1)
	}
	p.events[k] = len(p.res.Events)
	if len(p.cutMsgs[bare]) < 8 && (multi || strings.HasSuffix(e.Message, "...")) {
		p.cutMsgs[bare] = append(p.cutMsgs[bare], len(p.res.Events))
	}
	p.res.Events = append(p.res.Events, e)
}
