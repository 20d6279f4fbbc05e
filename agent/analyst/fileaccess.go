package analyst

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// A process refused access to a file or directory by the operating
// system (Python's PermissionError [Errno 13], Go's "permission denied",
// Java's AccessDeniedException, EACCES) fails, but the refusal does not say
// why. The why is the pair of who the process runs as and who owns the
// path: an image whose user is not root (distroless and Chainguard
// ":nonroot" images run as uid 65532, a Dockerfile USER 1001, a pod's
// runAsUser), a volume whose root directory is owned by root with mode
// 755, and no fsGroup in the pod's securityContext to give the pod's group
// the volume. The owner is read from ls -l output, the user from `id`, the
// pod's securityContext (jsonpath JSON or -o yaml), its image and the
// change that moved the image; each is named, the absent fsGroup too when
// the securityContext was read.

// kindFileRefused marks, among the kinds of a failed run's log line, a
// file access the operating system refused (a line classified otherwise).
const kindFileRefused Kind = "file_refused"

var (
	// javaAccessDeniedRE is Java's refusal of a file by the operating
	// system (java.nio.file.AccessDeniedException, FileNotFoundException
	// "(Permission denied)" is caught by fileRefusedRE).
	javaAccessDeniedRE = regexp.MustCompile(`AccessDeniedException: /`)
	// refusedPathRE is the path a file-access refusal names.
	refusedPathRE = regexp.MustCompile(`'(/[^']+)'|"(/[^"]+)"|(?:denied|EACCES|AccessDeniedException):? (/\S+)|open (/\S+): permission denied|(/\S+): Permission denied`)
	// idOutputRE is the output of id.
	idOutputRE = regexp.MustCompile(`\buid=(\d+)(?:\(([\w.-]+)\))?`)
	// lsLineRE is a line of ls -l (numeric or named owners).
	lsLineRE = regexp.MustCompile(`^([dl-][rwxsStT-]{9})[.+@]?\s+\d+\s+(\S+)\s+(\S+)\s+\d+\s+\w{3}\s+\d+\s+[\d:]+\s+(.+)$`)
	// yamlSecRE is a securityContext field in -o yaml output.
	yamlSecRE = regexp.MustCompile(`^\s*(runAsUser|runAsGroup|fsGroup|runAsNonRoot):\s*(\S+)`)
	// nonrootImageRE is an image whose default user is the non-root uid
	// 65532 (distroless and Chainguard ":nonroot" tags, the nonroot user).
	nonrootImageRE = regexp.MustCompile(`(?i)\S*(?:distroless|chainguard|cgr\.dev)\S*:\S*nonroot\S*|\S+:nonroot\b|\S+-nonroot\b`)
	// dockerUserRE is a Dockerfile USER named in a change.
	dockerUserRE = regexp.MustCompile(`\bUSER\s+(\d+|[a-z_][\w-]*)`)
)

// fileAccessWhy reads, for a finding whose line is a file-access refusal,
// who the process runs as and who owns the refused path, and states it as
// the finding's facts run_as, owner, fsgroup and file_why.
func fileAccessWhy(ev *Gathered, f *Finding) {
	line := f.fact("line")
	if !matchLine(fileRefusedRE, line) && !matchLine(javaAccessDeniedRE, line) {
		return
	}
	f.setFact("file_refused", "true")
	path := ""
	if m := findSubmatch(refusedPathRE, line); m != nil {
		path = orWord(m[1], orWord(m[2], orWord(m[3], orWord(m[4], m[5]))))
	}
	runAs, fsGroup, secRead := "", "", false
	for _, c := range ev.Commands {
		for _, l := range c.Lines {
			if m := findSubmatch(idOutputRE, l); m != nil && strings.Contains(l, "gid=") {
				runAs = "uid " + m[1]
				if m[2] != "" {
					runAs += " (" + m[2] + ")"
				}
			}
			if m := findSubmatch(yamlSecRE, l); m != nil && strings.Contains(strings.ToLower(c.Command), "yaml") {
				secRead = true
				switch m[1] {
				case "fsGroup":
					fsGroup = m[2]
				case "runAsUser":
					if runAs == "" {
						runAs = "uid " + m[2] + " (runAsUser)"
					}
				}
			}
			if t := strings.TrimSpace(l); strings.HasPrefix(t, "{") && strings.Contains(strings.ToLower(c.Command), "securitycontext") {
				var sc map[string]any
				if json.Unmarshal([]byte(t), &sc) != nil {
					continue
				}
				secRead = true
				if v, ok := sc["fsGroup"].(float64); ok {
					fsGroup = strconv.Itoa(int(v))
				}
				if v, ok := sc["runAsUser"].(float64); ok && runAs == "" {
					runAs = fmt.Sprintf("uid %d (runAsUser)", int(v))
				}
				if v, ok := sc["runAsNonRoot"].(bool); ok && v {
					f.setFact("run_as_nonroot", "true")
				}
			}
		}
	}
	// The image's own user: a pod's image, or the change that moved it.
	if runAs == "" {
		var texts []string
		for _, p := range ev.K8s.Pods {
			if strings.HasPrefix(p.Name, f.Subject) {
				for _, c := range p.Spec.Containers {
					texts = append(texts, c.Image)
				}
			}
		}
		for _, c := range slices.Concat(ev.Earlier, ev.Changes) {
			if c.Service == f.Subject || strings.Contains(c.Description, f.Subject) {
				texts = append(texts, c.Description)
			}
		}
		for _, t := range texts {
			if m := findString(nonrootImageRE, t); m != "" {
				runAs = "uid 65532 (the nonroot user of its image " + strings.TrimRight(m, ",;)") + ")"
				break
			}
			if m := findSubmatch(dockerUserRE, t); m != nil {
				runAs = "the image's USER " + m[1]
				break
			}
		}
	}
	if runAs == "" && f.fact("run_as_nonroot") != "" {
		runAs = "a non-root user (runAsNonRoot)"
	}
	owner := pathOwner(ev, path)
	if runAs != "" {
		f.setFact("run_as", runAs)
		f.Evidence = append(f.Evidence, "the process runs as "+runAs)
	}
	if owner != "" {
		f.setFact("owner", owner)
		f.Evidence = append(f.Evidence, "ls -l: "+owner)
	}
	if secRead && fsGroup == "" {
		f.setFact("fsgroup", "no fsGroup in the pod's securityContext")
	}
	var why []string
	if runAs != "" {
		why = append(why, "the process runs as "+runAs)
	}
	if owner != "" {
		why = append(why, owner)
	}
	if g := f.fact("fsgroup"); g != "" && (runAs != "" || owner != "") {
		why = append(why, "and there is "+g+" to give the pod's group the volume")
	}
	if len(why) > 0 {
		f.setFact("file_why", strings.Join(why, "; "))
		f.setFact("why", "the user the process runs as may not write the path its owner keeps")
	}
}

// pathOwner is the owner of the deepest component of path that an ls -l
// output lists: "/export/tax is owned by uid 0 (root), mode drwxr-xr-x".
func pathOwner(ev *Gathered, path string) string {
	if path == "" {
		return ""
	}
	parts := strings.Split(strings.Trim(path, "/"), "/")
	type entry struct{ mode, user, group string }
	listed := map[string]entry{}
	for _, c := range ev.Commands {
		for _, l := range c.Lines {
			if m := findSubmatch(lsLineRE, strings.TrimSpace(l)); m != nil {
				listed[strings.TrimSpace(m[4])] = entry{m[1], m[2], m[3]}
			}
		}
	}
	for i := len(parts) - 1; i >= 0; i-- {
		e, ok := listed[parts[i]]
		if !ok {
			continue
		}
		who := "uid " + e.user
		if e.user == "0" || e.user == "root" {
			who = "root (uid 0)"
		}
		d := fmt.Sprintf("/%s is owned by %s, group %s, mode %s", strings.Join(parts[:i+1], "/"), who, e.group, e.mode)
		if e.mode[8] != 'w' && (e.user == "0" || e.user == "root") {
			d += ": only root may write it"
		}
		return d
	}
	return ""
}
