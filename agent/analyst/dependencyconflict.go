package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// KindDependencyConflict: the code calls a name its installed library
// does not have, because the library resolved to another version than
// the one the code was written against: a rebuild of the same commit
// pulled a newer release of a dependency it does not pin (Flask pinned,
// Werkzeug not: Werkzeug 3 removed url_quote, and Flask 2.2 imports it),
// or two versions of one library sit on a JVM's classpath and the one
// loaded lacks the method a caller compiled against (a client library
// brought protobuf 3 beside the service's protobuf 4). The runtime says
// so in its own words: Python's "ImportError: cannot import name X from
// Y" and "module Y has no attribute X", the JVM's NoSuchMethodError,
// NoSuchFieldError, NoClassDefFoundError, AbstractMethodError, Node's
// "does not provide an export named", .NET's MissingMethodException,
// Ruby's "can't activate". A package missing altogether ("No module
// named", "Cannot find module") is not this cause: nothing conflicts,
// something was not installed.
const KindDependencyConflict Kind = "dependency_conflict"

var depConflict = &mechanism{
	kind:       KindDependencyConflict,
	class:      classCause,
	label:      "dependency version conflict (code calls a name its installed library lacks)",
	lines:      depConflictRE,
	lineWeight: 0.85,
	detect: func(ev *Gathered, found []Finding) []Finding {
		for i := range found {
			if f := &found[i]; f.Kind == KindDependencyConflict {
				explainDepConflict(f, ev)
			}
		}
		return nil
	},
	// The library changed with a build of the service (a rebuild, a
	// dependency bump, a new client library): a change elsewhere is a
	// coincidence.
	strictTriggers: true,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return c.Subject == h.Subject && (c.Kind == KindDeploy || c.Kind == KindConfigChange)
	},
	describe: func(h *Hypothesis, sc Scope) string {
		s := h.Subject
		d := fmt.Sprintf("%s fails on a dependency version conflict: %s", s, quote(ReadableLine(h.fact("line")), 200))
		name, pkg := h.fact("missing_name"), h.fact("package")
		if name != "" && pkg != "" {
			d += fmt.Sprintf(" — the code (or a library it uses) calls %s, which the %s installed in its image does not have", name, pkg)
		}
		if v := h.fact("versions"); v != "" {
			d += fmt.Sprintf("; the versions of %s listed differ (%s)", orWord(pkg, "the library"), v)
		}
		if u := h.fact("unpinned"); u != "" {
			d += fmt.Sprintf("; %s does not pin it, so a build takes whatever release is newest", u)
		}
		if h.Trigger != nil && matchLine(rebuildRE, changeText(h.Trigger)) {
			d += ". The code did not change: the rebuild of the image pulled the new dependency version"
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		s := h.Subject
		pkg := orWord(h.fact("package"), "the conflicting library")
		r.rollback()
		r.high("Pin %s in %s's build to one version every caller of it supports (listed: %s), or upgrade the caller to a release that supports the one installed", pkg, s, orWord(h.fact("versions"), "see the image's dependency listing"))
		r.med("Build from a lock file (pip freeze/pip-compile, package-lock, mvn dependency:tree with dependencyManagement, gradle constraints) so that a rebuild of the same commit installs the same versions")
		r.low("Fail the build on a dependency conflict (pip check, mvn enforcer dependencyConvergence, gradle failOnVersionConflict) and smoke-test the image before rolling it out")
	},
}

var (
	depConflictRE = regexp.MustCompile(`(?i)ImportError: cannot import name|AttributeError: module '[\w.]+' has no attribute|java\.lang\.(?:NoSuchMethodError|NoSuchFieldError|AbstractMethodError|IncompatibleClassChangeError|NoClassDefFoundError)\b|does not provide an export named|System\.MissingMethodException|MissingMethodException: Method not found|can't activate \S+|Gem::ConflictError`)
	// Python: the name and the module.
	pyImportRE = regexp.MustCompile(`cannot import name '([\w.]+)' from '([\w.]+)'`)
	pyAttrRE   = regexp.MustCompile(`module '([\w.]+)' has no attribute '(\w+)'`)
	// JVM: 'boolean com.google.protobuf.GeneratedMessageV3.isStringEmpty(java.lang.Object)',
	// com.google.common.base.Preconditions.checkArgument(ZLjava/lang/String;)V,
	// org/apache/commons/lang3/StringUtils.
	jvmMemberRE  = regexp.MustCompile(`(?:NoSuchMethodError|NoSuchFieldError|AbstractMethodError|IncompatibleClassChangeError|NoClassDefFoundError|MissingMethodException)[^:]*:\s*(?:Method not found:\s*)?'?(?:[\w.$\[\]<>]+\s+)?([\w$]+(?:[./][\w$]+)+)`)
	nodeExportRE = regexp.MustCompile(`requested module '([^']+)' does not provide an export named '([\w$]+)'`)
	// Words of a package coordinate that do not name it.
	pkgNoiseWords = map[string]bool{"com": true, "org": true, "io": true, "net": true, "java": true, "javax": true, "jakarta": true, "google": true, "apache": true, "github": true, "lang": true, "internal": true, "common": true, "util": true, "system": true, "void": true}
	// A version in a listing: "Werkzeug 3.1.3", "werkzeug==2.3.8",
	// "com.google.protobuf:protobuf-java:3.25.3 -> 4.28.2".
	versionRE = regexp.MustCompile(`\b\d+\.\d+(?:\.\d+)*(?:[.-][\w]+)?\b`)
	// A change that rebuilt the image without changing the code.
	rebuildRE = regexp.MustCompile(`(?i)rebuil|base image|image refresh|no code change|nightly|dependenc|bump|renovate|dependabot|lock ?file`)
	// A file that declares dependencies.
	depFileRE = regexp.MustCompile(`(?i)requirements[\w.-]*\.txt|pyproject\.toml|setup\.(?:py|cfg)|Pipfile|package\.json|pom\.xml|build\.gradle(?:\.kts)?|Gemfile|go\.mod|\.csproj`)
)

// conflictNames reads the missing name and its package from the runtime's
// line.
func conflictNames(line string) (name, pkg string) {
	switch {
	case matchLine(pyImportRE, line):
		m := findSubmatch(pyImportRE, line)
		name, pkg = m[1], m[2]
	case matchLine(pyAttrRE, line):
		m := findSubmatch(pyAttrRE, line)
		pkg, name = m[1], m[2]
	case matchLine(nodeExportRE, line):
		m := findSubmatch(nodeExportRE, line)
		pkg, name = m[1], m[2]
	case matchLine(jvmMemberRE, line):
		m := findSubmatch(jvmMemberRE, line)
		full := strings.ReplaceAll(m[1], "/", ".")
		name = full
		if i := strings.LastIndex(full, "."); i > 0 {
			pkg = full[:i]
		}
	}
	return name, pkg
}

// packageWords are the words of a module or class path that may name its
// package in a listing: "werkzeug.urls" gives "werkzeug";
// "com.google.protobuf.GeneratedMessageV3" gives "protobuf".
func packageWords(pkg string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(pkg), func(r rune) bool { return r == '.' || r == '/' || r == '@' }) {
		if len(w) < 3 || pkgNoiseWords[w] || w[0] >= 'A' && w[0] <= 'Z' {
			continue
		}
		out = append(out, w)
	}
	// Class names (capitalised in the original) are not packages.
	var keep []string
	for _, w := range out {
		if strings.Contains(pkg, strings.ToUpper(w[:1])+w[1:]) && !strings.Contains(pkg, w) {
			continue
		}
		keep = append(keep, w)
	}
	return keep
}

// explainDepConflict adds the missing name, its package, the versions of
// that package the commands handed over list (pip list/freeze of two
// images, mvn dependency:tree, gradle dependencies) and whether the
// dependency file pins it.
func explainDepConflict(f *Finding, ev *Gathered) {
	name, pkg := conflictNames(f.fact("line"))
	if name == "" {
		return
	}
	f.setFact("missing_name", name)
	words := packageWords(pkg)
	if len(words) > 0 {
		f.setFact("package", words[0])
	}
	var versions []string
	var label string
	for _, c := range ev.Commands {
		run := c.Run + " " + c.Command
		mentions := false
		for _, l := range c.Lines {
			low := strings.ToLower(l)
			w := firstContained(low, words)
			if w == "" || otherArtifact(l, w) {
				continue
			}
			mentions = true
			// The listing's own spelling of the package.
			if label == "" {
				if fs := strings.Fields(l); len(fs) > 0 && strings.Contains(strings.ToLower(fs[0]), w) {
					label = strings.TrimLeft(strings.Split(fs[0], "==")[0], "+-|\\` ")
				}
			}
			for _, v := range findAllString(versionRE, l, -1) {
				v = strings.TrimSuffix(strings.TrimSuffix(v, ".jar"), ".whl")
				if !slices.Contains(versions, v) {
					versions = append(versions, v)
				}
			}
		}
		if !mentions && matchLine(depFileRE, run) && len(words) > 0 && len(c.Lines) > 0 {
			f.setFact("unpinned", findString(depFileRE, run))
		}
	}
	if len(versions) >= 2 && len(words) > 0 {
		if label != "" {
			f.setFact("package", label)
		}
		f.setFact("versions", strings.Join(versions, ", "))
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s is listed at versions %s", f.fact("package"), strings.Join(versions, " and ")))
		f.Weight = max(f.Weight, 0.92)
	}
	if u := f.fact("unpinned"); u != "" {
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s does not pin %s", u, f.fact("package")))
	}
	// The runtime names what is missing and where it looked: the
	// conflict is seen directly.
	if f.fact("package") != "" {
		f.setFact("why", fmt.Sprintf("the installed %s lacks %s that the code calls", f.fact("package"), name))
	}
}

func firstContained(s string, words []string) string {
	for _, w := range words {
		if strings.Contains(s, w) {
			return w
		}
	}
	return ""
}

// otherArtifact reports whether the package word in a listing's line is
// only part of another library's artifact name ("grpc-protobuf-1.68.1.jar"
// is grpc's, not protobuf's).
func otherArtifact(line, w string) bool {
	low := strings.ToLower(line)
	for i := strings.Index(low, w); i >= 0; {
		if i < 2 || line[i-1] != '-' || !(line[i-2] >= 'a' && line[i-2] <= 'z' || line[i-2] >= '0' && line[i-2] <= '9') {
			return false
		}
		j := strings.Index(low[i+len(w):], w)
		if j < 0 {
			break
		}
		i += len(w) + j
	}
	return true
}
