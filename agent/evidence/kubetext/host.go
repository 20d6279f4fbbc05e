package kubetext

import (
	"regexp"
	"strings"
)

// This file reads what a transcript says about where its commands ran and
// where their output went: host-command transcripts (systemctl status,
// cat /etc/resolv.conf, dig, an HAProxy config, typed at a shell prompt
// with no kubectl command at all), the host a prompt or an ssh command
// names, and output redirected to a file, which the terminal never showed.

// hostPromptRe is a shell prompt that names its machine: "user@host:~$ ",
// "[user@host dir]$ ", "user@host % ", "root@host:/# ". Group 1 is the
// host.
var hostPromptRe = regexp.MustCompile(`^(?:\[[A-Za-z0-9._-]+@([A-Za-z0-9._-]+)(?: [^\]]{0,80})?\]|[A-Za-z0-9._-]+@([A-Za-z0-9._-]+)(?::[^\s$#%]{0,80})?) ?[$#%] `)

// commandWordRe is how a command typed at a prompt starts: a program name
// or path (sudo, ssh, /usr/bin/dig, ./check.sh), a variable assignment,
// or a quoted word piped on (echo "show stat" | socat ...).
var commandWordRe = regexp.MustCompile(`^(?:[A-Za-z_][A-Za-z0-9_]*=\S*\s+)*(?:[./~]{0,2}/?[A-Za-z_][A-Za-z0-9_.+/-]*)(?:\s|$)`)

// hostPrompt returns the prompt and command of a line typed at a host
// shell prompt: "$ " or a prompt naming its machine, followed by a
// command word.
func hostPrompt(l string) (prompt, host, text string, ok bool) {
	if rest, ok := strings.CutPrefix(l, "$ "); ok {
		text = strings.TrimSpace(rest)
		return "$ ", "", text, commandWordRe.MatchString(text)
	}
	m := hostPromptRe.FindStringSubmatch(l)
	if m == nil {
		return "", "", "", false
	}
	text = strings.TrimSpace(l[len(m[0]):])
	return m[0], m[1] + m[2], text, text != "" && commandWordRe.MatchString(text)
}

// IsHostTranscript reports whether data is a terminal transcript of
// commands run on hosts rather than kubectl: its first non-blank line is a
// shell prompt of a known form ("$ ", "user@host:~$ ", "[user@host dir]$ ")
// followed by a command (or a shell comment). A log file starts with its first entry instead,
// so a log stays a log.
func IsHostTranscript(data []byte) bool {
	found := false
	eachCheckLine(data, func(line string) bool {
		if strings.TrimSpace(line) == "" {
			return true
		}
		// A shell comment typed at the prompt ("$ # from the failed
		// job") opens a transcript as a command does: a log never
		// starts with a prompt.
		var text string
		_, _, text, found = hostPrompt(line)
		found = found || strings.HasPrefix(text, "# ") && len(text) > 2
		return false
	})
	return found
}

// promptHost returns the machine a prompt line names ("ana@ws-041:~$ ":
// ws-041), or "".
func promptHost(l string) string {
	if m := hostPromptRe.FindStringSubmatch(l); m != nil {
		return m[1] + m[2]
	}
	return ""
}

// sshValueFlags are ssh options that take a value in the next word.
var sshValueFlags = map[string]bool{"-p": true, "-i": true, "-l": true, "-o": true, "-J": true, "-F": true,
	"-b": true, "-c": true, "-D": true, "-E": true, "-e": true, "-L": true, "-R": true, "-m": true, "-O": true,
	"-Q": true, "-S": true, "-W": true, "-w": true, "-B": true, "-I": true}

// sshCommand reads "ssh [options] [user@]host command...": the host and
// the command run there. ok is false for anything else, and for an ssh
// that opens a shell (no command).
func sshCommand(text string) (host, run string, ok bool) {
	words := strings.Fields(text)
	if len(words) > 0 && words[0] == "sudo" {
		words = words[1:]
	}
	if len(words) < 3 || words[0] != "ssh" {
		return "", "", false
	}
	for i := 1; i < len(words); i++ {
		w := words[i]
		if strings.HasPrefix(w, "-") {
			if sshValueFlags[w] {
				i++
			}
			continue
		}
		if i+1 >= len(words) {
			return "", "", false
		}
		host = w
		if at := strings.LastIndexByte(host, '@'); at >= 0 {
			host = host[at+1:]
		}
		run = strings.Join(words[i+1:], " ")
		if len(run) >= 2 && (run[0] == '\'' || run[0] == '"') && run[len(run)-1] == run[0] {
			run = run[1 : len(run)-1]
		}
		return host, run, host != ""
	}
	return "", "", false
}

// redirected reports whether a command line sends its standard output to
// a file ("> f", ">> f", "&> f"): the transcript then shows none of its
// output, only what it printed on stderr. "2> f" and "2>&1" leave the
// output where it was; ">&2" still prints it on the terminal.
func redirected(text string) bool {
	var quote byte
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else if c == '\\' && quote == '"' {
				i++
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '\\':
			i++
		case c == '>':
			if i > 0 && text[i-1] >= '0' && text[i-1] <= '9' && text[i-1] != '1' {
				continue // 2> file: stderr only
			}
			j := i + 1
			if j < len(text) && text[j] == '>' {
				j++
			}
			if j < len(text) && text[j] == '&' {
				continue // >&2: still on the terminal
			}
			return true
		}
	}
	return false
}

// barePrompt reports whether an output line is only a prompt with nothing
// typed after it (the transcript's last line, "❯ ", "$ ", "PS C:\> ").
func barePrompt(l string) bool {
	t := strings.TrimSpace(l)
	if t == "" {
		return true
	}
	// prompt characters alone ("❯", "$", "%", "➜"), not a comment "#"
	// ending a file's output
	if t != "#" && strings.Trim(t, promptEnds) == "" {
		return true
	}
	if winPromptRe.FindString(t) == t {
		return true
	}
	return hostPromptRe.FindString(t+" ") == t+" "
}

// sshShell reads "ssh [options] [user@]host" with no command: an
// interactive shell on host, where the commands typed next run.
func sshShell(text string) (host string, ok bool) {
	words := strings.Fields(text)
	if len(words) < 2 || words[0] != "ssh" {
		return "", false
	}
	for i := 1; i < len(words); i++ {
		w := words[i]
		if strings.HasPrefix(w, "-") {
			if sshValueFlags[w] {
				i++
			}
			continue
		}
		if i+1 < len(words) || strings.ContainsAny(w, "$`|;&") {
			return "", false
		}
		if at := strings.LastIndexByte(w, '@'); at >= 0 {
			w = w[at+1:]
		}
		return w, w != ""
	}
	return "", false
}
