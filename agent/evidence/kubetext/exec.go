package kubetext

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Output is the verbatim output of a command whose output is not
// Kubernetes state kubetext reads into objects: a command run in a
// container with kubectl exec (or typed in a kubectl exec shell), a
// command run on the operator's machine (curl, dig, openssl, psql), or a
// kubectl command whose output is not read (auth can-i, get of a custom
// resource). It is plain text evidence: nothing in it is interpreted.
type Output struct {
	Line    int    // 1-based line of the command (of the typed command, in an exec shell)
	Command string // the command line as typed, without the prompt
	// Exec: the command ran in a container, through kubectl exec.
	Exec      bool
	Namespace string // -n of kubectl exec; empty when the command did not say
	// Pod is the pod the command ran in; empty when kubectl exec named a
	// workload ("deploy/web": Target) or the command did not run in a pod.
	Pod    string
	Target string // what kubectl exec named, as typed ("web-1", "deploy/web")
	// Container is -c, or the container kubectl said it defaulted to
	// ("Defaulted container "app" out of: app, istio-proxy"); empty when
	// the transcript does not say.
	Container string
	// Run is the command run in the container: what follows "--", or what
	// was typed at the exec shell's prompt. For other commands, Command.
	Run string
	// ExitCode is the code kubectl reported ("command terminated with exit
	// code 7"); -1 when the transcript does not show it.
	ExitCode int
	// Host is the machine a command ran on, when the transcript says: the
	// host of "ssh host command", or the one the prompt names
	// ("ana@ws-041:~$ "). Empty for kubectl exec and unnamed prompts.
	Host string
	// Debug: the command ran in a kubectl debug container (an ephemeral
	// container beside the pod's, sharing its network), not in one of the
	// pod's own containers: what it printed is no log of the pod.
	Debug bool
	Lines []string
}

// MaxOutputs is the most command outputs one Parse keeps.
const MaxOutputs = 5000

// shellPromptRe matches the prompt of a shell in a container and the
// command typed after it: `root@web-5d9f8:/app# `, `bash-5.1$ `, `/ # `,
// `/app $ `, `~ # `, `# `, `I have no name!@web-1:/$ `, netshoot's
// `web-1  ~  # `.
var shellPromptRe = regexp.MustCompile(`^(?:(?:[\w.-]+|I have no name!)@[\w.-]+:[^\s#$]*[#$]|(?:bash|sh|ash|zsh|dash)-[\d.]+[#$]|[/~][^\s#$]* ?[#$]|[\w.-]+\s+[~/]\S*\s+[#$]|[#$]) (.*)$`)

// execVerbs run commands in the cluster: exec in a pod's container, debug
// in an ephemeral container of a pod (or on a node), run in a new pod,
// attach to a running container.
var execVerbs = map[string]bool{"exec": true, "debug": true, "run": true, "attach": true}

// shells are the commands that open an interactive shell.
var shells = map[string]bool{"sh": true, "bash": true, "ash": true, "zsh": true, "dash": true, "ksh": true}

// execSession reports whether a kubectl exec opens an interactive shell:
// -i/-t (or both) with a shell, or with no command at all.
func execSession(c *command) bool {
	if !execVerbs[c.verb] {
		return false
	}
	inter := false
	for f := range c.flags {
		switch f {
		case "-it", "-ti", "-i", "-t", "--stdin", "--tty":
			inter = true
		}
	}
	if !inter {
		return false
	}
	run := execRun(c)
	if run == "" {
		return true
	}
	w, _ := splitWords(run)
	if len(w) == 0 {
		return true
	}
	bin := w[0]
	if i := strings.LastIndexByte(bin, '/'); i >= 0 {
		bin = bin[i+1:]
	}
	if bin == "busybox" && len(w) > 1 {
		bin = w[1]
	}
	return shells[bin] && (len(w) == 1 || len(w) == 2 && (w[1] == "-l" || w[1] == "-i"))
}

// shellExit reports whether a command typed in a shell ends it.
func shellExit(s string) bool {
	w := strings.Fields(s)
	return len(w) > 0 && (w[0] == "exit" || w[0] == "logout")
}

// execRun returns the command a kubectl exec runs: the text after " -- ",
// or (the deprecated form `kubectl exec POD CMD`) the words after the pod.
func execRun(c *command) string {
	if _, after, ok := strings.Cut(c.text, " -- "); ok {
		return strings.TrimSpace(after)
	}
	if len(c.args) > 1 {
		return strings.Join(c.args[1:], " ")
	}
	if c.verb == "run" {
		return overridesRun(c.flags["--overrides"])
	}
	return ""
}

// overridesRun is the command of the first container a kubectl run's
// --overrides JSON names (command then args, joined by spaces): a
// one-shot pod that mounts a volume to list it gives its command there.
func overridesRun(v string) string {
	v = strings.Trim(strings.TrimSpace(v), `'`)
	var o struct {
		Spec struct {
			Containers []struct {
				Command []string `json:"command"`
				Args    []string `json:"args"`
			} `json:"containers"`
		} `json:"spec"`
	}
	if v == "" || json.Unmarshal([]byte(v), &o) != nil || len(o.Spec.Containers) == 0 {
		return ""
	}
	c := o.Spec.Containers[0]
	w := slices.Concat(c.Command, c.Args)
	for i, a := range w {
		if strings.ContainsAny(a, " \t") {
			w[i] = "'" + a + "'"
		}
	}
	return strings.Join(w, " ")
}

// execNoise are kubectl's own lines around an exec's output.
var (
	defaultedRe  = regexp.MustCompile(`^Defaulted container "([^"]+)" out of: `)
	exitCodeRe   = regexp.MustCompile(`^command terminated with exit code (\d+)$`)
	debugNameRe  = regexp.MustCompile(`^Defaulting debug container name to (\S+?)\.?$`)
	execNoiseRes = []*regexp.Regexp{
		regexp.MustCompile(`^Unable to use a TTY - input is not a terminal or the right kind of file$`),
		regexp.MustCompile(`^kubectl exec \[POD\] \[COMMAND\] is DEPRECATED`),
		regexp.MustCompile(`^If you don't see a command prompt, try pressing enter\.$`),
		regexp.MustCompile(`^Session ended, resume using '.*' command when the pod is running$`),
		regexp.MustCompile(`^pod "[^"]+" deleted(?: from \S+ namespace)?$`),
		regexp.MustCompile(`^Creating debugging pod \S+ with container \S+ on node \S+\.$`),
	}
)

// execFailureRes are the lines kubectl or the container runtime print when
// a command could not run in the container at all: the tool's result, not
// anything the container printed. kubectl's client and the API server's
// ("error: unable to upgrade connection: container not found ("app")",
// "error: Internal error occurred: error executing command in container:
// ...", "Error from server: error dialing backend: ...", "error: cannot
// exec into a container in a completed pod", "Error from server
// (Forbidden): pods "x" is forbidden: User "u" cannot create resource
// "pods/exec""), and the OCI runtime's (runc,
// crun: "OCI runtime exec failed: exec failed: unable to start container
// process: exec: "bash": executable file not found in $PATH: unknown").
var execFailureRes = []*regexp.Regexp{
	regexp.MustCompile(`^(?:[Ee]rror: )?(?:unable to upgrade connection|Internal error occurred: error executing command in container|cannot exec into a container|error dialing backend|Timeout occurred$|container not found|container \S+ not found in pod|pod \S+ does not have a host assigned)`),
	regexp.MustCompile(`^Error from server(?: \([A-Za-z]+\))?: (?:error dialing backend|container \S+ is not valid for pod|(?:a )?container name must be specified|pod \S+ does not have a host assigned|error executing command in container)`),
	// The API server refusing the exec call itself (the asker's RBAC or
	// credentials: pods/exec forbidden, Unauthorized): the command never
	// reached the container.
	regexp.MustCompile(`^(?:[Ee]rror: )?(?:[Ee]rror from server \(Forbidden\): pods "[^"]*" is forbidden: User "[^"]*" cannot (?:create|get) resource "pods/(?:exec|attach)"|You must be logged in to the server|[Ee]rror from server \(Unauthorized\))`),
	regexp.MustCompile(`OCI runtime exec failed|(?:^|: )failed to exec in container|exec failed: unable to start container process|rpc error: code = \w+ desc = (?:failed to exec|container not found|cannot exec)`),
}

// ExecFailure reports whether a line of a kubectl exec's output is kubectl's
// or the container runtime's own error saying the command could not run in
// the container (execFailureRes), or, for a command that exited 126 (not
// executable) or 127 (not found), any of its lines: the shell's "sh: curl:
// not found" is about the command typed, not the container's program.
func ExecFailure(line string, exitCode int) bool {
	if exitCode == 126 || exitCode == 127 {
		return true
	}
	t := strings.TrimSpace(line)
	for _, re := range execFailureRes {
		if re.MatchString(t) {
			return true
		}
	}
	return false
}

// exec reads the output of kubectl exec: one Output for a command, one per
// typed command for an interactive shell.
func (p *parser) exec(c *command, out []string, line int) {
	target := ""
	if len(c.args) > 0 {
		target = c.args[0]
	}
	if target == "" || strings.HasPrefix(target, "-") {
		p.keepText(c.text, c, out, line)
		return
	}
	base := Output{Line: line, Command: c.text, Exec: true, Namespace: c.ns(), Target: target, Container: c.container, ExitCode: -1}
	if k, n, ok := strings.Cut(target, "/"); ok {
		if kindOf(k) == "Pod" {
			base.Pod = n
		}
	} else if c.verb == "run" {
		base.Target = "pod/" + target + " (kubectl run)" // a new pod, not one of the evidence
	} else {
		base.Pod = target
	}
	if c.verb == "debug" && hasFlag(c, "--copy-to") {
		base.Pod, base.Target = "", target+" (a copy: kubectl debug --copy-to)"
	}
	base.Debug = c.verb == "debug"
	// kubectl's own lines: the defaulted container, the exit code.
	var kept []int // indexes in out of the command's own lines
	for i, l := range out {
		t := strings.TrimSpace(l)
		if m := defaultedRe.FindStringSubmatch(t); m != nil {
			if base.Container == "" {
				base.Container = m[1]
			}
			continue
		}
		if m := debugNameRe.FindStringSubmatch(t); m != nil {
			if base.Container == "" {
				base.Container = m[1]
			}
			continue
		}
		if m := exitCodeRe.FindStringSubmatch(t); m != nil {
			base.ExitCode, _ = strconv.Atoi(m[1])
			continue
		}
		noise := false
		for _, re := range execNoiseRes {
			noise = noise || re.MatchString(t)
		}
		if !noise {
			kept = append(kept, i)
		}
	}
	if !execSession(c) {
		o := base
		o.Run = execRun(c)
		for _, i := range kept {
			o.Lines = append(o.Lines, out[i])
		}
		p.addOutput(o)
		return
	}
	// An interactive shell: each prompt line starts a command. Lines before
	// the first prompt are the shell's banner.
	var cur *Output
	prompted := false
	for _, i := range kept {
		l := out[i]
		m := shellPromptRe.FindStringSubmatch(l)
		if m != nil {
			prompted = true
		}
		if m == nil {
			if cur != nil {
				cur.Lines = append(cur.Lines, l)
			}
			continue
		}
		if cur != nil {
			p.addOutput(*cur)
			cur = nil
		}
		run := strings.TrimSpace(m[1])
		if run == "" || shellExit(run) {
			continue
		}
		o := base
		o.Line, o.Run, o.ExitCode = line+1+i, run, -1
		cur = &o
	}
	if cur != nil {
		p.addOutput(*cur)
	}
	if !prompted && len(kept) > 0 {
		// No prompt the parser knows (a themed shell): the session's
		// output is kept whole rather than lost.
		o := base
		o.Run = cmpOrStr(execRun(c), "(interactive session)")
		for _, i := range kept {
			if !strings.HasPrefix(strings.TrimSpace(out[i]), "If you don't see a command prompt") {
				o.Lines = append(o.Lines, out[i])
			}
		}
		if len(o.Lines) > 0 {
			p.addOutput(o)
		}
	}
}

func cmpOrStr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// secretNameRe is a variable or key name that says it holds a secret.
const secretNameRe = `[A-Za-z0-9_.-]*(?:PASSWORD|PASSWD|SECRET|TOKEN|API_?KEY|PRIVATE_?KEY|ACCESS_?KEY|CREDENTIAL)[A-Za-z0-9_.-]*`

// secretAssignRe matches a NAME=value or NAME: value line whose name says
// it holds a secret (env output, config dumps); urlUserinfoRe a URL's
// password.
var (
	// A quoted name is closed before its = or : (a JSON key); an unquoted
	// one is followed by = or by ": " (env, YAML). A string that holds a
	// colon ("secretsmanager:GetSecretValue", an IAM action) is a value,
	// not an assignment.
	secretAssignRe = regexp.MustCompile(`(?i)^(\s*(?:export\s+)?(?:"` + secretNameRe + `"\s*[=:]|` + secretNameRe + `\s*(?:=|:(?:\s|$)))\s*)\S.*$`)
	urlUserinfoRe  = regexp.MustCompile(`(://[^/\s:@]+:)[^@\s/]+@`)
	credentialRe   = regexp.MustCompile(`(?i)(authorization:\s*(?:bearer|basic)\s+|--password[= ]|x-api-key:\s*)[^\s'"]+`)
)

// redact removes what looks like a secret's value from a line of command
// output: the value of a PASSWORD/SECRET/TOKEN/API_KEY... assignment and
// the password of a URL. Command outputs are evidence, and secret values
// are never kept.
func redact(l string) string {
	if m := secretAssignRe.FindStringSubmatchIndex(l); m != nil {
		l = l[:m[3]] + "<redacted>"
	}
	l = credentialRe.ReplaceAllString(l, "${1}<redacted>")
	return urlUserinfoRe.ReplaceAllString(l, "${1}<redacted>@")
}

// redactCommand removes credentials from a command line: a URL's
// password, an Authorization header, --password.
func redactCommand(s string) string {
	s = credentialRe.ReplaceAllString(s, "${1}<redacted>")
	return urlUserinfoRe.ReplaceAllString(s, "${1}<redacted>@")
}

// keepText keeps the output of a command that is not read as Kubernetes
// state, verbatim.
func (p *parser) keepText(text string, c *command, out []string, line int) {
	o := Output{Line: line, Command: text, Run: text, ExitCode: -1, Lines: out}
	if c != nil {
		o.Namespace = c.ns()
	}
	p.addOutput(o)
}

// keepHost keeps the output of a command that is not read into objects,
// with the machine it ran on: the host of "ssh host command" (Run is then
// the command run there), else the host the prompt names.
func (p *parser) keepHost(b *block, out []string) {
	o := Output{Line: b.line, Command: b.text, Run: b.text, ExitCode: -1, Lines: out, Host: b.host}
	if b.cmd != nil {
		o.Namespace = b.cmd.ns()
	} else if h, run, ok := sshCommand(b.text); ok {
		o.Host, o.Run = h, run
	}
	p.addOutput(o)
}

func (p *parser) addOutput(o Output) {
	if len(p.res.Outputs) >= MaxOutputs {
		if !p.cutOutputs {
			p.cutOutputs = true
			p.skip(o.Line, o.Command, fmt.Sprintf("more than %d command outputs: the rest are dropped", MaxOutputs))
		}
		return
	}
	room := MaxLogLines - p.logLines
	if len(o.Lines) > room {
		p.skip(o.Line, o.Command, fmt.Sprintf("more than %d log and output lines: the rest are dropped", MaxLogLines))
		o.Lines = o.Lines[:max(room, 0)]
	}
	p.logLines += len(o.Lines)
	o.Command, o.Run = redactCommand(o.Command), redactCommand(o.Run)
	lines := make([]string, len(o.Lines))
	for i, l := range o.Lines {
		lines[i] = redact(l)
	}
	o.Lines = lines
	p.res.Outputs = append(p.res.Outputs, o)
}
