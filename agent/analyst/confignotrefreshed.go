package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// A ConfigMap (or Secret) edited while the pods that read it run on: the
// kubelet refreshes a ConfigMap volume in place (a new ..data symlink
// within a minute or so), except where the container mounts one key of it
// with subPath, a bind mount of the file as it was when the container
// started. The edit never reaches the running pods: the app's hot reload (a file watcher) sees nothing, the old
// values stay in force, and nothing fails. A key read as an environment
// variable (configMapKeyRef, envFrom) is set once, when the container
// starts: an edit of the ConfigMap the change names, with no rollout
// after it, is the same answer. Read from the workload's pod
// template (a volume of the ConfigMap the change names, mounted with
// subPath) and its pods, all started before the change; a release of the
// workload itself starts new pods and is not this. (A rotated Secret read
// as an environment variable is credentialrotated.go's.) The workload's
// container may be known only from a projection of it (kubectl get deploy
// x -o yaml | yq '.spec.template.spec.containers[0]').

// KindConfigNotRefreshed is a ConfigMap or Secret change that running
// pods never see (a subPath mount).
const KindConfigNotRefreshed Kind = "config_not_refreshed"

var configNotRefreshed = &mechanism{
	kind:           KindConfigNotRefreshed,
	class:          classCause,
	label:          "ConfigMap change never reaches the running pods (read at start: subPath mount or environment variable)",
	detect:         func(ev *Gathered, found []Finding) []Finding { return detectConfigNotRefreshed(ev) },
	strictTriggers: true,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		src := h.fact("source")
		return src != "" && strings.Contains(changeText(c), strings.ToLower(src))
	},
	describe: func(h *Hypothesis, sc Scope) string {
		how := fmt.Sprintf("mounts %s of the %s %s at %s with subPath, a bind mount of the file as it was when the container started, which the kubelet never refreshes",
			orWord(h.fact("key"), "a key"), orWord(h.fact("source_kind"), "ConfigMap"), h.fact("source"), orWord(h.fact("path"), "its path"))
		if env := h.fact("env"); env != "" {
			how = fmt.Sprintf("reads %s of the %s %s as an environment variable, which is set only when the container starts and never re-read, so only a restart (a rollout) brings the new value",
				env, orWord(h.fact("source_kind"), "ConfigMap"), h.fact("source"))
		}
		d := fmt.Sprintf("the change to the %s %s (%s) never reached the running pods of %s: its container %s %s. All %s pods started before the change (the latest at %s) and still serve the old values",
			orWord(h.fact("source_kind"), "ConfigMap"), h.fact("source"), h.fact("change"), h.Subject, orWord(h.fact("container"), ""), how, orWord(h.fact("pods"), "its"), orWord(h.fact("started"), "before"))
		if l := h.fact("watch"); l != "" {
			d += fmt.Sprintf("; its hot reload watches the file (%s) but the file inside the container does not change", quote(l, 160))
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Restart %s to load the new values now: kubectl rollout restart deployment/%s", h.Subject, h.Subject)
		r.med("Mount the whole %s %s as a directory (no subPath) so the kubelet refreshes it in place and the hot reload sees edits, or roll the pods on each change (a checksum annotation, Reloader)", orWord(h.fact("source_kind"), "ConfigMap"), h.fact("source"))
		r.low("Check after a config change that the pods serve the new values (an endpoint or a metric exposing the loaded config's version)")
	},
}

// fileWatchRE is an app's log line saying it watches its config file.
var fileWatchRE = regexp.MustCompile(`(?i)watch(?:ing|er)?\b[^\n]{0,60}\b(?:file|config|flags?)|fsnotify|hot[- ]?reload`)

func detectConfigNotRefreshed(ev *Gathered) []Finding {
	var out []Finding
	deps := append(append([]appsv1.Deployment(nil), ev.K8s.Deployments...), projectedDeployments(ev)...)
	for i := range deps {
		d := &deps[i]
		for _, ch := range ev.Changes {
			// An edit of the object's data, not a release of the workload
			// (a rollout starts new pods that read the new values).
			if !ev.Window.recent(ch.Timestamp) || strings.EqualFold(ch.Kind, "deploy") || strings.EqualFold(ch.Kind, "rollout") {
				continue
			}
			text := strings.ToLower(ch.Description)
			f := configUse(d, text)
			if f == nil {
				continue
			}
			// Every pod of the workload started before the change.
			n, latest := 0, time.Time{}
			for j := range ev.K8s.Pods {
				p := &ev.K8s.Pods[j]
				if p.Namespace != "" && d.Namespace != "" && p.Namespace != d.Namespace || !strings.EqualFold(WorkloadOfPod(p), d.Name) || p.Status.Phase != corev1.PodRunning {
					continue
				}
				st := p.CreationTimestamp.Time
				if p.Status.StartTime != nil {
					st = p.Status.StartTime.Time
				}
				if st.IsZero() || !st.Before(ch.Timestamp) {
					n = -1
					break
				}
				n++
				if st.After(latest) {
					latest = st
				}
			}
			if n <= 0 {
				continue
			}
			f.Subject, f.Namespace = d.Name, d.Namespace
			f.Kind, f.Severity, f.Weight, f.Source = KindConfigNotRefreshed, SevCritical, 0.85, SrcKubernetes
			f.Time = ch.Timestamp
			f.Object = "deployment " + d.Name
			f.setFact("change", fmt.Sprintf("%s, %s", truncate(ch.Description, 160), ts(ch.Timestamp)))
			f.setFact("pods", fmt.Sprint(n))
			f.setFact("started", ts(latest))
			for _, ls := range ev.Logs {
				if !strings.EqualFold(ls.Subject, d.Name) {
					continue
				}
				for _, t := range ls.Templates {
					if matchLine(fileWatchRE, t.Example) && (f.Facts["path"] == "" || strings.Contains(t.Example, f.Facts["path"])) {
						f.setFact("watch", ReadableLine(t.Example))
					}
				}
			}
			f.Summary = fmt.Sprintf("the change to %s %s at %s never reached the %d running pods of %s", f.Facts["source_kind"], f.Facts["source"], hm(ch.Timestamp), n, d.Name)
			if env := f.Facts["env"]; env != "" {
				f.Evidence = append(f.Evidence, fmt.Sprintf("deployment %s: container %s reads %s from %s %s as an environment variable", d.Name, f.Facts["container"], env, f.Facts["source_kind"], f.Facts["source"]))
			} else {
				f.Evidence = append(f.Evidence, fmt.Sprintf("deployment %s: container %s mounts %s %s (volume %s) at %s with subPath %s", d.Name, f.Facts["container"], f.Facts["source_kind"], f.Facts["source"], f.Facts["volume"], f.Facts["path"], f.Facts["key"]))
			}
			f.Evidence = append(f.Evidence,
				fmt.Sprintf("change at %s: %s", ts(ch.Timestamp), truncate(ch.Description, 200)),
				fmt.Sprintf("all %d running pods of %s started before it (the latest at %s)", n, d.Name, ts(latest)))
			if w := f.Facts["watch"]; w != "" {
				f.Evidence = append(f.Evidence, "its log: "+quote(w, 200))
			}
			out = append(out, *f)
			break
		}
	}
	return out
}

// configUse finds in d's pod template a ConfigMap or Secret the change
// text names that a container mounts with subPath. nil when none.
func configUse(d *appsv1.Deployment, text string) *Finding {
	named := func(n string) bool {
		return len(n) >= 4 && regexp.MustCompile(`(?:^|[^\w.-])`+regexp.QuoteMeta(strings.ToLower(n))+`(?:$|[^\w-])`).MatchString(text)
	}
	vols := map[string][2]string{} // volume -> kind, source
	for _, v := range d.Spec.Template.Spec.Volumes {
		switch {
		case v.ConfigMap != nil:
			vols[v.Name] = [2]string{"ConfigMap", v.ConfigMap.Name}
		case v.Secret != nil:
			vols[v.Name] = [2]string{"Secret", v.Secret.SecretName}
		}
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		// An environment variable of the ConfigMap's key, or all its keys
		// (envFrom): set once, when the container starts. (A rotated
		// Secret read so is credentialrotated.go's.)
		for _, e := range c.Env {
			if e.ValueFrom == nil {
				continue
			}
			kind, src, key := "", "", ""
			switch {
			case e.ValueFrom.ConfigMapKeyRef != nil:
				kind, src, key = "ConfigMap", e.ValueFrom.ConfigMapKeyRef.Name, e.ValueFrom.ConfigMapKeyRef.Key
			}
			// The change names the object and the variable or key.
			if src == "" || !named(src) || !named(e.Name) && !named(key) {
				continue
			}
			f := &Finding{}
			f.setFact("source_kind", kind)
			f.setFact("source", src)
			f.setFact("key", key)
			f.setFact("env", e.Name)
			f.setFact("container", c.Name)
			return f
		}
		for _, ef := range c.EnvFrom {
			kind, src := "", ""
			switch {
			case ef.ConfigMapRef != nil:
				kind, src = "ConfigMap", ef.ConfigMapRef.Name
			}
			if src == "" || !named(src) {
				continue
			}
			f := &Finding{}
			f.setFact("source_kind", kind)
			f.setFact("source", src)
			f.setFact("env", "its keys (envFrom)")
			f.setFact("container", c.Name)
			return f
		}
		for _, m := range c.VolumeMounts {
			src, ok := vols[m.Name]
			if !ok || m.SubPath == "" || !named(src[1]) {
				continue
			}
			f := &Finding{}
			f.setFact("source_kind", src[0])
			f.setFact("source", src[1])
			f.setFact("volume", m.Name)
			f.setFact("path", m.MountPath)
			f.setFact("key", m.SubPath)
			f.setFact("container", c.Name)
			return f
		}
	}
	return nil
}

// getDeployRE is a kubectl get of one Deployment by name.
var getDeployRE = regexp.MustCompile(`\bkubectl\s+(?:\S+\s+)*?get\s+(?:deploy|deployment|deployments)(?:\.apps)?(?:/|\s+)([a-z0-9][a-z0-9.-]*)`)

// projectedDeployments reads the Deployments a transcript shows only as a
// projection of their container (kubectl get deploy x -o yaml | yq
// '.spec.template.spec.containers[0]', or a selection of its fields: env,
// volumeMounts), for what the container reads; Deployments read whole are
// not repeated.
func projectedDeployments(ev *Gathered) []appsv1.Deployment {
	var out []appsv1.Deployment
	for _, c := range ev.Commands {
		m := findSubmatch(getDeployRE, c.Command)
		if m == nil || !strings.Contains(c.Command, "|") || len(c.Lines) == 0 {
			continue
		}
		name, ns := m[1], c.Namespace
		if slices.ContainsFunc(ev.K8s.Deployments, func(d appsv1.Deployment) bool { return d.Name == name && (ns == "" || d.Namespace == ns) }) {
			continue
		}
		var ctr corev1.Container
		if yaml.Unmarshal([]byte(strings.Join(c.Lines, "\n")), &ctr) != nil || len(ctr.Env) == 0 && len(ctr.EnvFrom) == 0 && len(ctr.VolumeMounts) == 0 {
			continue
		}
		if ctr.Name == "" {
			ctr.Name = name
		}
		d := appsv1.Deployment{}
		d.Name, d.Namespace = name, orWord(ns, ev.Scope.Namespace)
		d.Spec.Template.Spec.Containers = []corev1.Container{ctr}
		out = append(out, d)
	}
	return out
}
