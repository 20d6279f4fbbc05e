package analyst

import (
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// A Kubernetes client (an operator, a controller, a job that calls the
// API) that builds its in-cluster configuration at start-up from the
// service account token the kubelet mounts at
// /var/run/secrets/kubernetes.io/serviceaccount, in a pod where no token
// is mounted: automountServiceAccountToken: false on its ServiceAccount
// (a hardened chart's default, CIS 5.1.6) or on its pod. Reading the token
// fails with "no such file or directory" and the client exits before it
// ever calls the API server, so its pods crash-loop. Its RBAC is not in
// question: no request was made. The fix is the mount (automount on the
// pod, or a projected token volume), not a rollback of the permissions.

// KindSATokenMissing is a Kubernetes client whose pod has no service
// account token mounted.
const KindSATokenMissing Kind = "sa_token_missing"

var saTokenMissing = &mechanism{
	kind:      KindSATokenMissing,
	class:     classCause,
	label:     "no service account token is mounted for the in-cluster Kubernetes client",
	fromCrash: saTokenMissingFromCrash,
	related: func(h *Hypothesis, f *Finding) bool {
		switch f.Kind {
		case KindCrashLoop, KindRestarts, KindLogErrors, KindAppCrash:
			return strings.EqualFold(f.Subject, h.Subject)
		}
		return false
	},
	describe:  describeSATokenMissing,
	recommend: recommendSATokenMissing,
}

// saTokenRE is a client failing to read the mounted service account
// token or CA: client-go's "open /var/run/secrets/kubernetes.io/
// serviceaccount/token: no such file or directory", fabric8's "(No such
// file or directory)", Node's "ENOENT: no such file or directory, open
// '.../ca.crt'", the Python client's "Service token file does not
// exist".
var saTokenRE = regexp.MustCompile(`(?i)/var/run/secrets/kubernetes\.io/serviceaccount/(?:token|ca\.crt|namespace)\W+.{0,20}(?:no such file|not found|does not exist|ENOENT)|(?:no such file or directory|ENOENT)[^/]{0,40}/var/run/secrets/kubernetes\.io/serviceaccount/|service token file does not exist|serviceaccount token (?:file )?(?:not found|does not exist|is missing)`)

func saTokenMissingFromCrash(crash Finding, c *containerState) (Finding, bool) {
	line := ""
	for _, l := range c.LastLines {
		if matchLine(saTokenRE, l.Text) {
			line = strings.TrimSpace(l.Text)
			break
		}
	}
	if line == "" {
		return Finding{}, false
	}
	f := crash
	f.Facts = nil
	f.Kind, f.Severity, f.Weight = KindSATokenMissing, SevCritical, 0.92
	f.setFact("line", line)
	f.setFact("container", c.Status.Name)
	f.Evidence = []string{"its last log lines before the crash: " + quote(line, 220)}
	if p := c.Pod; p != nil {
		sa := p.Spec.ServiceAccountName
		if sa == "" {
			sa = p.Spec.DeprecatedServiceAccount
		}
		f.setFact("serviceaccount", sa)
		if a := p.Spec.AutomountServiceAccountToken; a != nil && !*a {
			f.setFact("pod_automount", "false")
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s sets automountServiceAccountToken: false", c.Base.Object))
		} else if len(p.Spec.Volumes) > 0 && !mountsSAToken(c) {
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s mounts no service account token volume (no kube-api-access projected volume)", c.Object))
		}
	}
	f.Evidence = append(f.Evidence, crash.Evidence...)
	f.Summary = fmt.Sprintf("%s cannot build its in-cluster Kubernetes config: no service account token is mounted", crash.Subject)
	return f, true
}

// mountsSAToken reports whether a container mounts the service account
// token directory or the pod has a projected token volume.
func mountsSAToken(c *containerState) bool {
	for _, v := range c.Pod.Spec.Volumes {
		if strings.HasPrefix(v.Name, "kube-api-access") || v.Projected != nil && projectsToken(v.Projected.Sources) {
			return true
		}
	}
	if c.Spec != nil {
		for _, m := range c.Spec.VolumeMounts {
			if strings.HasPrefix(m.MountPath, "/var/run/secrets/kubernetes.io/serviceaccount") {
				return true
			}
		}
	}
	return false
}

func describeSATokenMissing(h *Hypothesis, sc Scope) string {
	s := h.Subject
	where := "its ServiceAccount"
	if sa := h.fact("serviceaccount"); sa != "" {
		where = "its ServiceAccount " + sa
	}
	if h.fact("pod_automount") == "false" {
		where = "its pod spec"
	}
	d := fmt.Sprintf("%s cannot start: no service account token is mounted in its pods (automountServiceAccountToken: false on %s), so building its in-cluster Kubernetes client config fails reading /var/run/secrets/kubernetes.io/serviceaccount/token (no such file or directory) and it exits before it calls the API server; its RBAC permissions are not in question, no request was made", s, where)
	return d + ": " + quote(ReadableLine(h.fact("line")), 200)
}

func recommendSATokenMissing(h *Hypothesis, sc Scope, r *recommender) {
	s := h.Subject
	r.high("Mount a service account token in %s's pods: set automountServiceAccountToken: true in its pod template (it overrides the ServiceAccount's false), or add a projected serviceAccountToken volume at /var/run/secrets/kubernetes.io/serviceaccount", s)
	r.med("Leave the RBAC bindings as they are: check them with kubectl auth can-i --as=system:serviceaccount:<namespace>:<serviceaccount> once the client starts")
	r.low("When a chart hardens its ServiceAccount (automount off), enable the token on the pods that call the Kubernetes API")
}

// projectsToken reports whether projected sources hold a service account
// token.
func projectsToken(srcs []corev1.VolumeProjection) bool {
	for _, s := range srcs {
		if s.ServiceAccountToken != nil {
			return true
		}
	}
	return false
}
