package analyst

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// KindNonRootImage is a container the kubelet refuses to create because
// its pod demands a non-root user and its image runs as root.
const KindNonRootImage Kind = "nonroot_image"

// A pod whose securityContext sets runAsNonRoot: true, and an image that
// runs as root (no USER in its Dockerfile, USER root or 0) or names its
// user by a name the kubelet cannot check: the kubelet will not create the
// container, the pod waits in CreateContainerConfigError, and the only word
// of why is the kubelet's Failed event ("Error: container has runAsNonRoot
// and image will run as root (pod: ..., container: app)", "container has
// runAsNonRoot and image has non-numeric user (appuser), cannot verify user
// is non-root", "container's runAsUser breaks non-root policy"). It follows
// a new image (a base image swapped for one without a USER, a Dockerfile
// rewritten) or a securityContext tightened by a change or a policy; the
// Secrets and ConfigMaps the pod reads are not at fault. The image's user
// is read from what was handed over about it (`crane config ... | jq
// .config.User`, `docker inspect -f '{{.Config.User}}'`, `skopeo inspect
// --config`), each tag's.
var nonRootImage = &mechanism{
	kind:  KindNonRootImage,
	class: classCause,
	label: "runAsNonRoot against an image that runs as root",
	event: func(e *corev1.Event) (float64, bool) {
		return 0.95, e.Reason == "Failed" && matchLine(nonRootRefusedRE, e.Message)
	},
	eventCritical: true,
	eventFacts: func(f *Finding, e *corev1.Event) {
		f.setFact("message", strings.TrimPrefix(strings.TrimSpace(e.Message), "Error: "))
		if m := findSubmatch(nonNumericUserRE, e.Message); m != nil {
			f.setFact("image_user", m[1])
		}
	},
	container: func(c *containerState) []Finding {
		if c.killedByOOM() || !c.waitingFor(createErrorReasons...) || !matchLine(nonRootRefusedRE, c.Waiting.Message) {
			return nil
		}
		f := c.Base
		f.Kind, f.Severity, f.Weight = KindNonRootImage, SevCritical, 0.95
		f.Time = containerSince(c.Pod, c.Status)
		f.Summary = fmt.Sprintf("%s cannot start: %s: %s", c.Object, c.Waiting.Reason, c.Waiting.Message)
		f.Evidence = []string{fmt.Sprintf("%s is waiting with reason %s: %s", c.Object, c.Waiting.Reason, quote(c.Waiting.Message, 300))}
		f.setFact("message", c.Waiting.Message)
		f.setFact("container", c.Status.Name)
		return []Finding{f}
	},
	detect: func(ev *Gathered, found []Finding) []Finding {
		var out []Finding
		for _, f := range found {
			if f.Kind != KindNonRootImage {
				continue
			}
			users := imageUsers(ev, f.Subject)
			if len(users) == 0 {
				continue
			}
			g := f
			g.Facts = maps.Clone(f.Facts)
			g.Evidence = slices.Clone(f.Evidence)
			g.Weight = min(1, f.Weight+0.03)
			var words []string
			for _, u := range users {
				words = append(words, fmt.Sprintf("%s runs as %s", u.image, u.user))
				g.Evidence = append(g.Evidence, fmt.Sprintf("the image config of %s: User %s", u.image, orWord(u.raw, "(empty)")))
			}
			g.setFact("image_users", strings.Join(words, ", "))
			out = append(out, g)
		}
		return out
	},
	// The pod waits in CreateContainerConfigError with no message of its
	// own: the same refusal, one hop short.
	refines: []Kind{KindConfigError},
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return c.Kind == KindDeploy || matchLine(imageUserChangeRE, changeText(c))
	},
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("%s pods cannot start: the kubelet refuses to create their container (CreateContainerConfigError) because the pod's securityContext sets runAsNonRoot: true and the image", h.Subject)
		if u := h.fact("image_user"); u != "" {
			d += fmt.Sprintf(" names its user %s, not a numeric uid, so the kubelet cannot verify it is non-root", u)
		} else {
			d += " will run as root (its config sets no USER, or USER root/0)"
		}
		d += h.clause(" — ", "image_users")
		d += h.quoteClause("; the kubelet: ", "message", 200)
		d += ". The Secrets and ConfigMaps the pod reads are not what fails"
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.rollback()
		r.high("Make the image of %s run as a non-root numeric user (USER 10001 in its Dockerfile, with the files it needs owned by it), or set runAsUser to a non-zero uid in its pod securityContext; do not drop runAsNonRoot", h.Subject)
		r.med("Check the image config's User (crane config, docker inspect) in the pipeline when a base image changes")
		r.low("Alert on pods stuck in CreateContainerConfigError")
	},
}

var (
	// nonRootRefusedRE is the kubelet's refusal of a root or unverifiable
	// image under runAsNonRoot.
	nonRootRefusedRE = regexp.MustCompile(`(?i)runAsNonRoot and image (?:will run as root|has non-numeric user)|runAsUser breaks non-root policy`)
	nonNumericUserRE = regexp.MustCompile(`(?i)non-numeric user \(([^)]+)\)`)
	// imageUserChangeRE are the words of a change that moves an image's
	// user or the pod's demand on it.
	imageUserChangeRE = regexp.MustCompile(`(?i)base image|dockerfile|\bUSER\b|runAsNonRoot|runAsUser|securityContext|distroless|-slim|alpine`)
	// imageInspectRE is a command that prints an image's config; the
	// image is the first argument after it that looks like a reference.
	imageInspectRE = regexp.MustCompile(`(?i)\b(?:crane\s+config|docker\s+(?:image\s+)?inspect|podman\s+(?:image\s+)?inspect|skopeo\s+inspect|nerdctl\s+(?:image\s+)?inspect)\b`)
	imageRefRE     = regexp.MustCompile(`^(?:docker://)?([\w.-]+(?:[:/][\w.@:/-]+)+)$`)
)

// imageUser is what an image's config says of its user.
type imageUser struct{ image, user, raw string }

// imageUsers reads the user of each image of subject whose config was
// handed over: the first line a `.config.User` / `{{.Config.User}}` query
// printed, or a `"User": ...` field of the whole config.
func imageUsers(ev *Gathered, subject string) []imageUser {
	var out []imageUser
	for _, c := range ev.Commands {
		ref := inspectedImage(c.Run)
		if ref == "" || !strings.Contains(strings.ToLower(ref), strings.ToLower(subject)) {
			continue
		}
		raw, ok := "", false
		if strings.Contains(strings.ToLower(c.Run), "user") {
			// docker inspect prints an empty line for no user.
			ok = len(c.Lines) > 0
			for _, l := range c.Lines {
				if t := strings.TrimSpace(l); t != "" {
					raw = t
					break
				}
			}
		} else {
			for _, l := range c.Lines {
				t := strings.TrimSpace(l)
				if k, v, found := strings.Cut(t, ":"); found && strings.Trim(k, `" `) == "User" {
					raw, ok = strings.TrimRight(strings.TrimSpace(v), ","), true
					break
				}
			}
		}
		if !ok {
			continue
		}
		raw = strings.Trim(raw, `"`)
		user := raw
		switch strings.ToLower(raw) {
		case "", "null", "<no value>", "root", "0", "0:0":
			user = "root (no USER)"
			if raw == "root" || strings.HasPrefix(raw, "0") {
				user = "root"
			}
		default:
			user = "user " + raw
		}
		if i := strings.LastIndex(ref, "/"); i >= 0 {
			ref = ref[i+1:]
		}
		if !slices.ContainsFunc(out, func(u imageUser) bool { return u.image == ref }) {
			out = append(out, imageUser{image: ref, user: user, raw: raw})
		}
	}
	return out
}

// inspectedImage is the image a crane, docker, podman, skopeo or nerdctl
// command inspects ("" when it is not one): the first argument after the
// command that looks like an image reference, past flags and their quoted
// values.
func inspectedImage(run string) string {
	loc := imageInspectRE.FindStringIndex(run)
	if loc == nil {
		return ""
	}
	rest := run[loc[1]:]
	if i := strings.IndexByte(rest, '|'); i >= 0 {
		rest = rest[:i]
	}
	for _, w := range strings.Fields(rest) {
		if strings.HasPrefix(w, "-") || strings.ContainsAny(w, `'"{}`) {
			continue
		}
		if m := findSubmatch(imageRefRE, w); m != nil {
			return m[1]
		}
	}
	return ""
}
