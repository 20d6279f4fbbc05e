package analyst

import (
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A script entrypoint saved with Windows line endings (CRLF). Its first
// line, "#!/bin/sh\r\n", names the interpreter "/bin/sh\r", which exists
// in no image, so the kernel's execve fails with ENOENT and runc prints
// "exec /app/entrypoint.sh: no such file or directory" although the script
// is there, executable, and /bin/sh too. The pods crash-loop at once with
// no output of the application's. It comes from a checkout or an editor
// that wrote CRLF (a .gitattributes with "* text=auto eol=lf" removed, a
// commit from Windows with core.autocrlf=false). What shows it: the
// script's first bytes (od -c "#  !  /  b  i  n  /  s  h  \r  \n", xxd
// "...7368 0d0a", cat -A "#!/bin/sh^M$") or file(1)'s "with CRLF line
// terminators", read beside a start failure that names the script.

// KindShebangCRLF is a script entrypoint whose shebang line ends in a
// carriage return.
const KindShebangCRLF Kind = "shebang_crlf"

var shebangCRLF = &mechanism{
	kind:    KindShebangCRLF,
	class:   classCause,
	label:   "a script entrypoint with CRLF line endings (its interpreter is not found)",
	detect:  detectShebangCRLF,
	related: kindsOnSubject(KindStartFailure, KindCrashLoop, KindRestarts, KindAppCrash, KindRolloutStuck),
	refines: []Kind{KindStartFailure},
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return c.Kind == KindDeploy || c.fact("image") != ""
	},
	describe: describeShebangCRLF,
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		s := orWord(h.fact("script"), "the entrypoint script")
		r.high("Convert %s to LF line endings (dos2unix, or sed -i 's/\\r$//') and rebuild the image; roll %s back to the last image that starts meanwhile", s, h.Subject)
		r.med("Pin line endings in the repository (.gitattributes: *.sh text eol=lf) so that no checkout or editor writes CRLF into scripts again")
		r.low("Smoke-test new images in CI by starting them with the deployment's command, and lint scripts for carriage returns")
	},
}

var (
	// odShebangCRLFRE is od -c's first line of a script whose shebang
	// ends in \r: "0000000   #   !   /   b   i   n   /   s   h  \r  \n".
	odShebangCRLFRE = regexp.MustCompile(`^[0-7]+\s+#\s+!\s+((?:\S\s+)+?)\\r\s+\\n`)
	// catShebangCRLFRE is cat -A (or cat -v) of it: "#!/bin/sh^M$".
	catShebangCRLFRE = regexp.MustCompile(`^#!\s*(/\S+?)\^M\$?$`)
	// hexShebangCRLFRE is xxd's or hexdump -C's: "2321 2f62 696e 2f73 680d 0a"
	// or "23 21 2f 62 69 6e 2f 73  68 0d 0a".
	hexShebangCRLFRE = regexp.MustCompile(`(?i)^[0-9a-f]+:?\s+23\s*21\s*((?:[0-9a-f]{2}\s*)+?)0d\s*0a`)
	// fileCRLFRE is file(1)'s verdict: "entrypoint.sh: POSIX shell script,
	// ASCII text executable, with CRLF line terminators".
	fileCRLFRE = regexp.MustCompile(`^(\S+):\s.*\bwith CRLF(?:, \w+)* line terminators`)
	// gitattributesRE is a commit that took line-ending rules away.
	gitattributesRE = regexp.MustCompile(`(?i)^[0-9a-f]{7,40}\s+.*(?:(?:remove|delete|drop)\w*\s+\.gitattributes|\.gitattributes\s+(?:removed|deleted)|autocrlf|line endings?)`)
)

// crlfRead is what a command showed of a script's line endings.
type crlfRead struct {
	script, interp, line, command string
}

// readCRLF reads the commands' outputs for scripts whose lines end in
// CRLF: the script (from the command line or file's verdict), the
// interpreter of its shebang when its bytes were shown, the line.
func readCRLF(cmds []evidence.CommandOutput) (reads []crlfRead, gitLine string) {
	for _, c := range cmds {
		script := scriptOfCommand(c.Command)
		for _, l := range c.Lines {
			t := strings.TrimSpace(l)
			switch {
			case gitLine == "" && strings.Contains(c.Command, "git") && gitattributesRE.MatchString(t):
				gitLine = t
			case odShebangCRLFRE.MatchString(t):
				m := odShebangCRLFRE.FindStringSubmatch(t)
				reads = append(reads, crlfRead{script, strings.Join(strings.Fields(m[1]), ""), t, c.Command})
			case catShebangCRLFRE.MatchString(t):
				reads = append(reads, crlfRead{script, catShebangCRLFRE.FindStringSubmatch(t)[1], t, c.Command})
			case hexShebangCRLFRE.MatchString(t):
				m := hexShebangCRLFRE.FindStringSubmatch(t)
				reads = append(reads, crlfRead{script, hexText(m[1]), t, c.Command})
			case fileCRLFRE.MatchString(t):
				reads = append(reads, crlfRead{fileCRLFRE.FindStringSubmatch(t)[1], "", t, c.Command})
			}
		}
	}
	return reads, gitLine
}

// hexText decodes "2f62 696e 2f73 68" to "/bin/sh"; "" when it is not
// printable.
func hexText(h string) string {
	h = strings.Join(strings.Fields(h), "")
	var b strings.Builder
	for i := 0; i+1 < len(h); i += 2 {
		var c byte
		if _, err := fmt.Sscanf(h[i:i+2], "%02x", &c); err != nil || c < 0x20 || c > 0x7e {
			return ""
		}
		b.WriteByte(c)
	}
	return b.String()
}

// scriptPathRE is a script's path on a command line.
var scriptPathRE = regexp.MustCompile(`(?:^|[\s'"=])((?:~|\.{0,2})?/?[\w.@~/-]*[\w-]\.(?:sh|bash|py|pl|rb))\b`)

// scriptOfCommand is the script a command reads ("head -n 1
// /app/entrypoint.sh | od -c"), "" when it names none.
func scriptOfCommand(cmd string) string {
	if m := scriptPathRE.FindStringSubmatch(cmd); m != nil {
		return m[1]
	}
	return ""
}

func detectShebangCRLF(ev *Gathered, found []Finding) []Finding {
	reads, gitLine := readCRLF(ev.Commands)
	if len(reads) == 0 {
		return nil
	}
	var out []Finding
	seen := map[string]bool{}
	for i := range found {
		sf := &found[i]
		if sf.Kind != KindStartFailure || seen[sf.Subject] {
			continue
		}
		msg := orWord(sf.fact("start_message"), sf.Summary)
		if !strings.Contains(strings.ToLower(msg), "no such file or directory") {
			continue
		}
		m := findSubmatch(execNameRE, msg)
		if m == nil {
			continue
		}
		script := m[1] + m[2]
		var hit *crlfRead
		for j := range reads {
			if reads[j].script != "" && path.Base(reads[j].script) == path.Base(script) {
				hit = &reads[j]
				if reads[j].interp != "" {
					break
				}
			}
		}
		if hit == nil {
			continue
		}
		seen[sf.Subject] = true
		f := Finding{Kind: KindShebangCRLF, Subject: sf.Subject, Object: sf.Object, Namespace: sf.Namespace,
			Source: sf.Source, Time: sf.Time, Severity: SevCritical, Weight: 0.97,
			Summary: fmt.Sprintf("%s: the entrypoint %s has CRLF line endings, its shebang names an interpreter with a trailing carriage return", sf.Subject, script)}
		f.setFact("script", script)
		f.setFact("interpreter", hit.interp)
		f.setFact("start_message", msg)
		f.setFact("crlf_line", hit.line)
		f.setFact("git_line", gitLine)
		f.Evidence = append(f.Evidence, fmt.Sprintf("$ %s: %s", truncate(hit.command, 160), quote(hit.line, 200)))
		for _, r := range reads {
			if r.line != hit.line && path.Base(r.script) == path.Base(script) && len(f.Evidence) < 3 {
				f.Evidence = append(f.Evidence, fmt.Sprintf("$ %s: %s", truncate(r.command, 160), quote(r.line, 200)))
			}
		}
		if gitLine != "" {
			f.Evidence = append(f.Evidence, "repository history: "+quote(gitLine, 200))
		}
		f.Evidence = append(f.Evidence, sf.Evidence...)
		out = append(out, f)
	}
	return out
}

func describeShebangCRLF(h *Hypothesis, sc Scope) string {
	script := orWord(h.fact("script"), "its entrypoint script")
	d := fmt.Sprintf("%s cannot start: its entrypoint %s was saved with CRLF (Windows) line endings", h.Subject, script)
	if i := h.fact("interpreter"); i != "" {
		d += fmt.Sprintf(", so its shebang names the interpreter %q followed by a carriage return (\\r), %s\\r, which does not exist", i, i)
	} else {
		d += ", so its shebang line ends in a carriage return (\\r) and names an interpreter that does not exist"
	}
	d += "; the kernel cannot exec the script and the runtime reports it as missing"
	d += h.quoteClause(", ", "start_message", 160)
	d += " although the file is in the image, so every new pod crash-loops before the application runs"
	if g := h.fact("git_line"); g != "" {
		d += "; the repository lost its line-ending rules: " + quote(g, 160)
	}
	return d
}
