package kubetext

import (
	"regexp"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// History is what one kubectl rollout history command printed: the
// revisions of a Deployment, DaemonSet or StatefulSet with their change
// causes, or (--revision=N) one revision's pod template. kubectl prints no
// times: when a revision happened is known only from the ReplicaSet it
// names, if the transcript shows that ReplicaSet's age.
type History struct {
	Kind      string // Deployment, DaemonSet or StatefulSet
	Namespace string // from -n; empty when the command did not say
	Name      string
	Line      int    // 1-based line of the command
	Command   string // the command line, without the prompt
	Revisions []Revision
}

// Revision is one revision rollout history lists.
type Revision struct {
	Number int64
	// ChangeCause is the kubernetes.io/change-cause annotation; empty
	// when kubectl printed <none>.
	ChangeCause string
	// PodTemplateHash is the pod-template-hash label of a Deployment
	// revision's pod template (--revision=N only): the revision's
	// ReplicaSet is NAME-HASH.
	PodTemplateHash string
	// Images are the containers' images (--revision=N only), by container.
	Images map[string]string
	Line   int // 1-based line of the revision's row or header
}

var (
	historyHeadRe = regexp.MustCompile(`^([a-z.]+)/(\S+)\s*$`)
	historyRevRe  = regexp.MustCompile(`^([a-z.]+)/(\S+) with revision #(\d+)\s*$`)
	historyRowRe  = regexp.MustCompile(`^(\d+)\s+(.*?)\s*$`)
)

// history reads kubectl rollout history: the REVISION CHANGE-CAUSE table
// of one or several workloads, or one revision's pod template.
func (p *parser) history(c *command, out []string, line int) {
	cc := *c
	cc.args = c.args[1:]
	ts := cc.targets()
	h := History{Namespace: c.ns(), Line: line, Command: c.text}
	if len(ts) == 1 && ts[0].name != "" {
		h.Kind, h.Name = ts[0].kind, ts[0].name
	}
	var cur *Revision // a --revision=N page
	var inContainers bool
	container := ""
	flush := func() {
		if h.Name != "" && len(h.Revisions) > 0 && len(p.res.Histories) < MaxAbsent {
			p.res.Histories = append(p.res.Histories, h)
		}
	}
	read := false
	for i, l := range out {
		t := strings.TrimSpace(l)
		if m := historyRevRe.FindStringSubmatch(t); m != nil && !strings.HasPrefix(l, " ") {
			flush()
			n, _ := strconv.ParseInt(m[3], 10, 64)
			h = History{Kind: kindOf(strings.SplitN(m[1], ".", 2)[0]), Namespace: c.ns(), Name: m[2], Line: line, Command: c.text,
				Revisions: []Revision{{Number: n, Line: line + 1 + i, Images: map[string]string{}}}}
			cur, inContainers, read = &h.Revisions[0], false, true
			continue
		}
		if m := historyHeadRe.FindStringSubmatch(t); m != nil && !strings.HasPrefix(l, " ") && kindOf(strings.SplitN(m[1], ".", 2)[0]) != "" {
			flush()
			h = History{Kind: kindOf(strings.SplitN(m[1], ".", 2)[0]), Namespace: c.ns(), Name: m[2], Line: line, Command: c.text}
			cur = nil
			continue
		}
		if cur != nil {
			// the pod template of one revision
			key, val, _ := strings.Cut(t, ":")
			val = strings.TrimSpace(val)
			switch {
			case strings.HasPrefix(t, "pod-template-hash="):
				cur.PodTemplateHash = strings.TrimPrefix(t, "pod-template-hash=")
			case key == "Labels" && strings.Contains(val, "pod-template-hash="):
				for _, kv := range strings.Split(val, ",") {
					if k, v, ok := strings.Cut(strings.TrimSpace(kv), "="); ok && k == "pod-template-hash" {
						cur.PodTemplateHash = v
					}
				}
			case key == "Annotations" || strings.HasPrefix(t, "kubernetes.io/change-cause:"):
				if _, cause, ok := strings.Cut(t, "kubernetes.io/change-cause:"); ok {
					cur.ChangeCause = strings.TrimSpace(cause)
				}
			case key == "Containers" && indentOf(l) <= 2:
				inContainers = true
			case key == "Init Containers" || key == "Volumes" || key == "Node-Selectors" || key == "Tolerations":
				inContainers = false
			case inContainers && val == "" && strings.HasSuffix(t, ":") && indentOf(l) <= 4 && !strings.Contains(t, " "):
				container = strings.TrimSuffix(t, ":")
			case inContainers && key == "Image" && container != "":
				cur.Images[container] = val
			}
			continue
		}
		if t == "" || strings.HasPrefix(t, "REVISION") {
			read = read || strings.HasPrefix(t, "REVISION")
			continue
		}
		if m := historyRowRe.FindStringSubmatch(t); m != nil && read {
			n, _ := strconv.ParseInt(m[1], 10, 64)
			cause := m[2]
			if unset(cause) {
				cause = ""
			}
			h.Revisions = append(h.Revisions, Revision{Number: n, ChangeCause: cause, Line: line + 1 + i})
			continue
		}
		p.skip(line+1+i, c.text, "rollout history line not understood")
	}
	flush()
	if !read {
		p.skip(line, c.text, "no REVISION table in the rollout history output")
	}
}

// applyHistories puts what rollout history says on the transcript's
// ReplicaSets of a Deployment. A ReplicaSet named DEPLOYMENT-HASH in the
// Deployment's namespace (the name the controller gives it) that shows no
// owner gets the Deployment as its owner; one whose revision (its
// deployment.kubernetes.io/revision annotation, or the pod-template-hash
// of a --revision=N page) is a listed revision gets that revision's number
// and change cause. With its age, such a ReplicaSet is a dated rollout for
// list_changes; the history alone dates nothing.
func (p *parser) applyHistories() {
	for _, h := range p.res.Histories {
		if h.Kind != "Deployment" {
			continue
		}
		ns := h.Namespace
		if dk, ok := p.findObject("Deployment", h.Namespace, h.Name); ok {
			ns = dk.ns
		}
		byHash := map[string]Revision{}
		byNumber := map[string]Revision{}
		for _, r := range h.Revisions {
			if r.PodTemplateHash != "" {
				byHash[r.PodTemplateHash] = r
			}
			byNumber[strconv.FormatInt(r.Number, 10)] = r
		}
		for k, i := range p.objs {
			if k.kind != "ReplicaSet" || ns != "" && k.ns != ns {
				continue
			}
			rs, ok := p.res.Objects[i].(*appsv1.ReplicaSet)
			if !ok {
				continue
			}
			hash, named := strings.CutPrefix(k.name, h.Name+"-")
			named = named && rsHashRe.MatchString(hash)
			owner := ""
			for _, o := range rs.OwnerReferences {
				if o.Kind == "Deployment" {
					owner = o.Name
				}
			}
			if owner != h.Name && (owner != "" || !named) {
				continue
			}
			r, ok := byHash[hash]
			if !ok || !named {
				r, ok = byNumber[rs.Annotations["deployment.kubernetes.io/revision"]]
			}
			ann := map[string]string{}
			if ok {
				ann["deployment.kubernetes.io/revision"] = strconv.FormatInt(r.Number, 10)
				if r.ChangeCause != "" {
					ann["kubernetes.io/change-cause"] = r.ChangeCause
				}
			}
			t := true
			obj := &appsv1.ReplicaSet{TypeMeta: typeMeta("ReplicaSet"), ObjectMeta: metav1.ObjectMeta{Name: k.name, Namespace: k.ns, Annotations: ann,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: h.Name, Controller: &t}}}}
			p.add("ReplicaSet", k.ns, k.name, "rollout-history", obj)
		}
	}
}

// rsHashRe is a pod-template-hash as a ReplicaSet's name ends with it.
var rsHashRe = regexp.MustCompile(`^[a-z0-9]{4,10}$`)
