package kubetext

import (
	"bytes"
	"regexp"
	"strings"
	"unicode/utf8"
)

// This file finds the commands of a transcript as terminals show them:
// the prompt before the command, terminal colour codes, a timestamp on
// every line (a terminal logger's copy) and commands continued over
// several lines with a trailing backslash.

// ansiRe matches terminal escape sequences: CSI (colours, cursor moves),
// OSC (window titles, hyperlinks) and two-byte escapes.
var ansiRe = regexp.MustCompile("\x1b(?:\\[[0-?]*[ -/]*[@-~]|\\][^\x07\x1b]*(?:\x07|\x1b\\\\)?|[@-Z\\\\-_])")

// stripANSI removes terminal escape sequences from a line.
func stripANSI(s string) string {
	if strings.IndexByte(s, 0x1b) < 0 {
		return s
	}
	return ansiRe.ReplaceAllString(s, "")
}

// stampRe matches a timestamp leading a line copied from a terminal logger
// (`2026-03-14 10:42:01 `, `[2026-03-14T10:42:01Z] `, `[10:42:01] `).
var stampRe = regexp.MustCompile(`^(?:\[\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?\]|\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?|\[\d{2}:\d{2}:\d{2}(?:\.\d+)?\]) ?`)

// stripStamps removes the timestamp every line of a terminal logger's copy
// starts with. It does so only when the command lines carry one and nine in
// ten non-blank lines do: a transcript of `kubectl logs` output, whose
// lines start with the application's timestamps, keeps them.
func stripStamps(lines []string) []string {
	nonBlank, stamped, commands := 0, 0, 0
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		nonBlank++
		loc := stampRe.FindStringIndex(l)
		if loc == nil {
			if _, ok := commandLine(l); ok {
				return lines // a command without a stamp: not a stamped copy
			}
			continue
		}
		stamped++
		if _, ok := commandLine(l[loc[1]:]); ok {
			commands++
		}
	}
	if commands == 0 || stamped*10 < nonBlank*9 {
		return lines
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		if loc := stampRe.FindStringIndex(l); loc != nil {
			l = l[loc[1]:]
		}
		out[i] = l
	}
	return out
}

// promptEnds are the characters shells end their prompts with, before the
// space that precedes the command: `$` (sh, bash), `%` (zsh), `>` (cmd,
// PowerShell), `#` (root), `❯` (starship, pure), `➜` and `✗`
// (oh-my-zsh), `λ`, `»`, `→`, `▶`.
const promptEnds = "$%>#❯➜✗λ»→▶"

// promptGlyphs start a prompt that may show a directory or a branch
// between the glyph and the command (oh-my-zsh: `➜  shop git:(main) ✗ `).
const promptGlyphs = "❯➜λ»→▶"

// winPromptRe is cmd.exe's prompt, which needs no space before the
// command (`C:\Users\ops>kubectl get pods`).
var winPromptRe = regexp.MustCompile(`^(?:PS )?[A-Za-z]:\\[^>]*>`)

// maxPrompt is the longest shell prompt before a command.
const maxPrompt = 120

// maxCheck is how much of a line is read to tell whether it runs kubectl.
const maxCheck = 1024

// maxContinued is the most lines one command is continued over.
const maxContinued = 64

// commandLine returns the command of a prompt line: "$ kubectl ...", or
// kubectl after a shell prompt ("user@host:~$ ", "[user@host ~]$ ", "% ",
// "❯ ", "➜  dir git:(main) ✗ ", "PS C:\\> ", "C:\\>"). A line starting
// with "$ " is a command whatever it runs (it ends the previous command's
// output); after a longer prompt only kubectl is recognised, so that output
// lines are not taken for commands.
func commandLine(l string) (string, bool) {
	_, text, ok := promptCommand(l)
	return text, ok
}

// promptCommand is commandLine that also returns the prompt.
func promptCommand(l string) (prompt, text string, ok bool) {
	if rest, ok := strings.CutPrefix(l, "$ "); ok {
		return "$ ", strings.TrimSpace(rest), true
	}
	if len(l) == 0 || l[0] == ' ' || l[0] == '\t' {
		return "", "", false // output is indented; prompts are not
	}
	if m := winPromptRe.FindString(l); m != "" {
		if rest := strings.TrimSpace(l[len(m):]); isKubectl(rest) {
			return m, rest, true
		}
	}
	first, _ := utf8.DecodeRuneInString(l)
	glyph := strings.ContainsRune(promptGlyphs, first)
	limit := min(len(l), maxPrompt)
	for i := 1; i < limit; i++ {
		if l[i] != ' ' || l[i-1] == ' ' {
			continue
		}
		// l[:i] is a candidate prompt: it must end with a prompt
		// character, or the line start with a prompt glyph.
		last, _ := utf8.DecodeLastRuneInString(l[:i])
		if !glyph && !strings.ContainsRune(promptEnds, last) {
			continue
		}
		rest := strings.TrimSpace(l[i:])
		if isKubectl(rest) {
			return l[:i+1], rest, true
		}
	}
	return "", "", false
}

// prompts are the prompts a transcript's kubectl commands follow (other
// than "$ "): a line that starts with one of them, word for word, is a
// command too, whatever it runs (dig, curl, openssl after "❯ ").
type prompts map[string]bool

func learnPrompts(lines []string) prompts {
	ps := prompts{}
	for _, l := range lines {
		// "# " and "> " lead output lines too (comments, quoted text, a
		// continued command): they are not learnt.
		if p, _, ok := promptCommand(l); ok && p != "$ " && p != "# " && p != "> " && len(ps) < 16 {
			ps[p] = true
		} else if p, _, _, ok := hostPrompt(l); ok && p != "$ " && len(ps) < 16 {
			// a prompt naming its machine ("[ana@ws-041 media]$ ")
			// leads commands on hosts too
			ps[p] = true
		}
	}
	return ps
}

// command returns the command of a line: commandLine, or any command after
// a prompt learnt from the transcript's kubectl commands.
func (ps prompts) command(l string) (string, bool) {
	if text, ok := commandLine(l); ok {
		return text, true
	}
	for p := range ps {
		if rest, ok := strings.CutPrefix(l, p); ok && rest != "" && rest[0] != ' ' {
			return strings.TrimSpace(rest), true
		}
	}
	return "", false
}

// isKubectl reports whether a command line runs one of kubectl's commands.
func isKubectl(s string) bool {
	// The first word must be able to start a kubectl command line.
	first, _, _ := strings.Cut(s, " ")
	if i := strings.LastIndexByte(first, '/'); i >= 0 {
		first = first[i+1:]
	}
	_, alias := kubectlAliases[first]
	if first == "stern" {
		return true // tails pods' logs
	}
	if !alias && first != "kubectl" && first != "kubectl.exe" && first != "k" && first != "oc" && first != "sudo" && !strings.Contains(first, "=") {
		return false
	}
	if len(s) > maxCheck {
		s = s[:maxCheck] // the verb comes early: a longer line need not be split whole
	}
	c, ok := parseCommand(s, 0)
	return ok && kubectlVerbs[c.verb]
}

// kubectlVerbs are kubectl's commands: after a prompt other than "$ ",
// "kubectl" must be followed by one of them to start a command.
var kubectlVerbs = map[string]bool{}

func init() {
	for _, v := range strings.Fields(`get describe logs log events top alpha apply create delete edit exec port-forward
		rollout scale autoscale set label annotate patch replace cordon uncordon drain taint config version cluster-info
		api-resources api-versions auth debug explain expose run wait diff kustomize plugin proxy cp attach certificate
		completion options`) {
		kubectlVerbs[v] = true
	}
}

// continued reports whether a command line goes on at the next line (it
// ends with a backslash outside quotes), and returns it without the
// backslash.
func continued(s string) (string, bool) {
	t := strings.TrimRight(s, " ")
	if !strings.HasSuffix(t, "\\") || strings.HasSuffix(t, "\\\\") {
		return s, false
	}
	return strings.TrimSuffix(t, "\\"), true
}

// continuation returns the text of a continuation line: the shell's
// secondary prompt ("> ") and indentation removed.
func continuation(l string) string {
	l = strings.TrimSpace(l)
	if l == ">" {
		return ""
	}
	return strings.TrimSpace(strings.TrimPrefix(l, "> "))
}

// fence reports a Markdown code fence line (```, ```console, ~~~).
func fence(l string) bool {
	t := strings.TrimLeft(l, " ")
	if len(l)-len(t) > 3 {
		return false // indented four or more: text inside a block, never a fence
	}
	return fenceRe.MatchString(strings.TrimRight(t, " \t\r"))
}

// fenceRe is a Markdown code fence: three or more backticks or tildes, then
// at most an info string ("```console", "~~~ bash"); not Python's error
// markers under a traceback's code ("~~~~~^^^^^^").
var fenceRe = regexp.MustCompile("^(?:`{3,}|~{3,})\\s*[\\w+.-]*$")

// IsTranscript reports whether data holds a kubectl command after a shell
// prompt (or "$ "), as a terminal transcript does.
func IsTranscript(data []byte) bool {
	found := false
	eachCheckLine(data, func(line string) bool {
		if loc := stampRe.FindStringIndex(line); loc != nil {
			line = line[loc[1]:]
		}
		if _, text, ok := promptCommand(line); ok && isKubectl(text) {
			found = true
			return false
		}
		return true
	})
	return found
}

// eachCheckLine calls fn with each line of data, carriage return and
// colour codes removed and cut to the length a prompt check reads, until
// fn returns false.
func eachCheckLine(data []byte, fn func(line string) bool) {
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		var l []byte
		if i < 0 {
			l, data = data, nil
		} else {
			l, data = data[:i], data[i+1:]
		}
		if len(l) > maxCheck+maxPrompt {
			l = l[:maxCheck+maxPrompt]
		}
		if !fn(stripANSI(strings.TrimRight(string(l), "\r"))) {
			return
		}
	}
}
