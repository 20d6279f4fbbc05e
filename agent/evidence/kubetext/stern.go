package kubetext

import (
	"regexp"
	"strings"
)

// stern (and the kubectl stern plugin) tails the logs of several pods at
// once, each line led by the pod and container it came from:
//
//	+ checkout-6d8f9c7b5-x2x9k › app
//	checkout-6d8f9c7b5-x2x9k app 2026-03-14T10:40:01Z ERROR payment failed
//
// and, with --all-namespaces, by the namespace first. Its lines are read
// as the logs of those containers; lines that do not start with a pod seen
// in a "+ pod › container" line or shaped as a pod name are kept as text.

var (
	sternMarkRe = regexp.MustCompile(`^[+-] (?:(\S+) )?(\S+) › (\S+)$`)
	podNameRe   = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)
)

// sternCommand returns the words of a stern command line, or nil.
func sternCommand(text string) []string {
	words, _ := splitWords(text)
	for len(words) > 0 && (words[0] == "sudo" || strings.Contains(words[0], "=") && !strings.HasPrefix(words[0], "-")) {
		words = words[1:]
	}
	if len(words) > 1 && (words[0] == "kubectl" || words[0] == "k") && words[1] == "stern" {
		words = words[1:]
	}
	if len(words) == 0 || words[0] != "stern" && !strings.HasSuffix(words[0], "/stern") {
		return nil
	}
	return words
}

// stern reads stern's output into one Log per pod and container, and keeps
// the lines of no pod as text; it reports whether the command is stern.
func (p *parser) stern(text string, out []string, line int) bool {
	words := sternCommand(text)
	if words == nil {
		return false
	}
	ns, all := "", false
	for i := 1; i < len(words); i++ {
		w := words[i]
		switch {
		case w == "-n" || w == "--namespace":
			if i+1 < len(words) {
				ns = words[i+1]
				i++
			}
		case strings.HasPrefix(w, "--namespace="):
			ns = strings.TrimPrefix(w, "--namespace=")
		case strings.HasPrefix(w, "-n") && len(w) > 2 && !strings.HasPrefix(w, "--"):
			ns = w[2:]
		case w == "-A" || w == "--all-namespaces":
			all = true
		}
	}
	if strings.Contains(ns, ",") {
		all, ns = true, ""
	}
	type key struct{ ns, pod, container string }
	logs := map[key]int{} // index in p.res.Logs
	known := map[string]bool{}
	var rest []string
	for _, l := range out {
		if m := sternMarkRe.FindStringSubmatch(strings.TrimSpace(l)); m != nil {
			known[m[2]] = true
			continue
		}
		f := strings.SplitN(l, " ", 4)
		k := key{ns: ns}
		msg := ""
		switch {
		case all && len(f) >= 3 && podNameRe.MatchString(f[0]) && podNameRe.MatchString(f[1]) && podNameRe.MatchString(f[2]):
			k.ns, k.pod, k.container = f[0], f[1], f[2]
			if len(f) > 3 {
				msg = f[3]
			}
		case !all && len(f) >= 2 && podNameRe.MatchString(f[0]) && podNameRe.MatchString(f[1]) && (known[f[0]] || strings.Count(f[0], "-") >= 1):
			k.pod, k.container = f[0], f[1]
			msg = strings.Join(f[2:], " ")
		default:
			rest = append(rest, l)
			continue
		}
		if p.logLines >= MaxLogLines {
			break
		}
		i, ok := logs[k]
		if !ok {
			i = len(p.res.Logs)
			logs[k] = i
			p.res.Logs = append(p.res.Logs, Log{Namespace: k.ns, Pod: k.pod, Container: k.container, Line: line})
		}
		p.res.Logs[i].Lines = append(p.res.Logs[i].Lines, msg)
		p.logLines++
	}
	if len(rest) > 0 {
		p.keepText(text, nil, rest, line)
	}
	return true
}
