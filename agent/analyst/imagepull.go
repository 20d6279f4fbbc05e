package analyst

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// An image that cannot be pulled: the pods wait in ImagePullBackOff or
// ErrImagePull. The kubelet's message says why, one hop further: the tag
// does not exist, the registry refuses the credentials (or their absence),
// or the registry cannot be reached.
// pullChangeRE is a change that speaks of what an image pull needs.
var pullChangeRE = regexp.MustCompile(`(?i)image|registry|\bpull|namespace|service ?account|secret|credential`)

var imagePull = &mechanism{
	kind:      KindImagePull,
	class:     classCause,
	label:     "image pull failure",
	container: pullingContainer,
	event: func(e *corev1.Event) (float64, bool) {
		msg := strings.ToLower(e.Message)
		switch e.Reason {
		case "ErrImagePull", "ImagePullBackOff":
			return 0.85, true
		case "Failed":
			return 0.85, imageEvent(msg) && !matchLine(nonRootRefusedRE, e.Message)
		case "BackOff":
			return 0.8, strings.Contains(msg, "pulling image")
		case "FailedToRetrieveImagePullSecret":
			// The pull secret the pod names does not exist: the pull
			// goes without credentials.
			return 0.85, true
		}
		return 0, false
	},
	eventCritical: true,
	detect: func(ev *Gathered, found []Finding) []Finding {
		followPullNodes(ev, found)
		return followPullCredentials(ev, found)
	},
	eventFacts: func(f *Finding, e *corev1.Event) {
		f.setFact("image", imageFromMessage(e.Message))
		if m := findSubmatch(pullSecretRE, e.Message); m != nil && e.Reason == "FailedToRetrieveImagePullSecret" {
			f.setFact("pull_secret", m[1])
		}
	},
	// A deploy, an image, or what decides the pull's credentials and path
	// (a namespace moved to, a ServiceAccount, a pull Secret, a
	// registry).
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return c.Kind == KindDeploy || c.fact("image") != "" || matchLine(pullChangeRE, changeText(c))
	},
	// A flag or a setting of the subject that says nothing of images did
	// not make the pull fail; a change anywhere that names the image, its
	// registry or its tag (a registry moved, a tag deleted) did.
	contentTriggers: true,
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("%s pods cannot start because the image pull fails (ImagePullBackOff/ErrImagePull)", h.Subject)
		d += h.clause(" for image ", "image")
		if why := pullProblem(pullMessage(h)); why == pullRateLimited {
			d += ": " + rateLimitWords(h)
		} else if why != "" {
			d += ": " + why
		}
		if n := h.fact("pull_platform"); n != "" {
			d += "; " + n
		} else if n := h.fact("pull_nodes"); n != "" {
			d += "; " + n
		}
		if o := h.fact("other_images"); o != "" && pullProblem(pullMessage(h)) != pullNoTag {
			d += fmt.Sprintf("; the pods' other images (%s) are not the ones failing", o)
		}
		if sec := h.fact("pull_secret"); sec != "" {
			d += fmt.Sprintf("; the image pull secret %s that the pods reference (imagePullSecrets) does not exist (FailedToRetrieveImagePullSecret), so the pull goes without credentials", sec)
		}
		if sec := h.fact("pull_dropped_secret"); sec != "" {
			d += fmt.Sprintf("; the new pods name no image pull secret, while the running pod %s of the same workload pulls from that registry with imagePullSecrets %s: the new pod template dropped the pull secret (a chart or values change that moved or renamed imagePullSecrets), so the kubelet asks the registry without credentials", h.fact("pull_sibling"), sec)
		}
		if sa := h.fact("pull_sa"); sa != "" {
			d += fmt.Sprintf("; the pods run as ServiceAccount %s, which has no imagePullSecrets (nor does the pod spec name one), so the kubelet asks the registry without credentials", sa)
			d += h.clause("; ", "pull_elsewhere")
		}
		if m := pullMessage(h); m != "" {
			d += " — " + truncate(registryAnswer(m), 200)
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		if h.fact("pull_platform") == "" {
			// A rolled-back pod lands on the same nodes of the other
			// platform.
			r.rollback()
		}
		if sec := h.fact("pull_secret"); sec != "" {
			r.high("Create the image pull secret %s in the namespace of %s (kubectl create secret docker-registry %s ...), or point its imagePullSecrets at the secret that exists", sec, h.Subject, sec)
		}
		if sec := h.fact("pull_dropped_secret"); sec != "" {
			r.high("Put imagePullSecrets %s back into the pod template of %s: set it where the current chart reads it (a chart that moved it, e.g. to global.imagePullSecrets, ignores the old key) or on its ServiceAccount, then roll the pods", sec, h.Subject)
		}
		if sa := h.fact("pull_sa"); sa != "" {
			ns, name, _ := strings.Cut(sa, "/")
			if sec := h.fact("pull_secret_elsewhere"); sec != "" {
				r.high("Create the image pull secret %s in namespace %s (a copy of the one namespace %s uses) and add it to the imagePullSecrets of ServiceAccount %s there (kubectl patch serviceaccount %s -n %s -p '{\"imagePullSecrets\":[{\"name\":\"%s\"}]}')", sec, ns, h.fact("pull_ns_elsewhere"), name, name, ns, sec)
			} else {
				r.high("Create an image pull secret for the registry in namespace %s and add it to the imagePullSecrets of ServiceAccount %s (or the pod spec)", ns, name)
			}
		}
		switch pullProblem(pullMessage(h)) {
		case pullRateLimited:
			reg := registryName(h.fact("image"), pullMessage(h))
			r.high("Pull %s with credentials for %s: an imagePullSecret on the pods or their ServiceAccount (an account's pull limit is higher than what anonymous pulls share per node address); or pull it from a mirror: a pull-through cache (an ECR or Artifact Registry pull-through cache rule, Harbor, a containerd registry mirror) or a copy pushed to your own registry", orWord(h.fact("image"), "the image"), reg)
			r.med("Keep scale-ups from pulling all at once from %s: pin the image to a digest with imagePullPolicy IfNotPresent and pre-pull it into the node image, so new nodes do not each hit the limit", reg)
			r.low("Alert on ErrImagePull events whose message says 429 Too Many Requests or toomanyrequests, apart from missing images and refused credentials")
			return
		case pullNoCredentials:
			r.high("Give %s credentials for its registry: an imagePullSecret on the pod spec or its ServiceAccount (or node credentials) that the registry accepts%s", h.Subject, parenthesized(h.fact("image")))
		case pullNoPlatform:
			if k, v := h.fact("platform_key"), h.fact("platform_running"); k != "" && v != "" {
				r.high("Keep %s on the nodes its image is built for: add nodeSelector %s: %s to its pod template (or taint the other nodes, e.g. os=%s:NoSchedule, so that only workloads that tolerate it land there)", h.Subject, k, v, orWord(h.fact("platform_failing"), "windows"))
			} else {
				r.high("Keep %s on nodes of the platform its image is built for (a kubernetes.io/os or kubernetes.io/arch nodeSelector on the pod template), or build and push the image for the other platform too (docker buildx build --platform ...)", h.Subject)
			}
			r.med("Build %s for every platform of the cluster's node pools, or taint node pools of another OS or architecture so that workloads must opt in", orWord(h.fact("image"), "the image"))
			r.low("Alert on ErrImagePull events whose message says no match for platform, apart from missing tags")
			return
		case pullUnreachable:
			r.high("Make the registry of %s reachable from the nodes (its DNS name, egress rules, proxy)%s", h.Subject, parenthesized(h.fact("image")))
		default:
			r.high("Fix the image reference of %s%s: check the tag exists in the registry and the pull secret is valid, or roll back to the last working image", h.Subject, parenthesized(h.fact("image")))
		}
		r.med("Verify registry credentials (imagePullSecrets) and registry reachability from the nodes")
		r.low("Gate deploys on the image existing in the registry (CI pushes before the manifest is applied)")
	},
}

// pullSecretRE reads the secrets a FailedToRetrieveImagePullSecret event
// names: "Unable to retrieve some image pull secrets (ghcr-creds); ...".
var pullSecretRE = regexp.MustCompile(`(?i)image pull secrets? \(([\w.,\s-]+)\)`)

const (
	pullRateLimited   = "the registry refuses the pull with its pull rate limit (429 Too Many Requests)"
	pullNoTag         = "the image or its tag does not exist in the registry (not found)"
	pullNoCredentials = "the registry refuses the pull (unauthorized: no or wrong pull credentials)"
	pullUnreachable   = "the registry cannot be reached from the node"
	pullNoPlatform    = "the image exists but has no variant for the node's platform (operating system/architecture): no match for platform in manifest"
)

// pullPlatformRE is a registry answer that the image exists without a
// variant for the node's OS or architecture: containerd's "no match for
// platform in manifest", Docker's "no matching manifest for windows/amd64
// in the manifest list entries", CRI-O's "no image found in manifest list
// for architecture arm64, variant "v8", OS linux", and Windows hosts'
// "image operating system "linux" cannot be used on this platform".
var pullPlatformRE = regexp.MustCompile(`(?i)no match for platform|no matching manifest for|no image found in (?:image index|manifest list) for architecture|image operating system "?\w+"? cannot be used on this platform|does not match the specified platform`)

// pullMessage is the message of h's findings that says why the pull
// fails (the registry's answer in an event, when the container's state
// only says "Back-off pulling image"), or the first message.
func pullMessage(h *Hypothesis) string {
	for _, f := range h.Primary {
		if m := f.fact("message"); pullProblem(m) != "" {
			return m
		}
	}
	return h.fact("message")
}

// pullProblem says why a pull failed, from the kubelet's message ("" when
// it does not say).
func pullProblem(msg string) string {
	l := strings.ToLower(msg)
	switch {
	case l == "":
		return ""
	case matchLine(pullRateLimitRE, msg):
		// Before the rest: the registry's limit message says
		// "unauthenticated" and names a URL.
		return pullRateLimited
	case matchLine(pullPlatformRE, msg):
		// Before "not found": containerd ends its platform answer with
		// ": not found".
		return pullNoPlatform
	case strings.Contains(l, "not found") || strings.Contains(l, "manifest unknown") || strings.Contains(l, "does not exist"):
		return pullNoTag
	case strings.Contains(l, "unauthorized") || strings.Contains(l, "401") || strings.Contains(l, "403") || strings.Contains(l, "denied") || strings.Contains(l, "authentication required") || strings.Contains(l, "no basic auth credentials"):
		return pullNoCredentials
	case strings.Contains(l, "no such host") || strings.Contains(l, "i/o timeout") || strings.Contains(l, "connection refused") || strings.Contains(l, "dial tcp"):
		return pullUnreachable
	}
	return ""
}

// imageEvent reports whether a kubelet "Failed" event's (lowercase)
// message is about pulling the image.
func imageEvent(msg string) bool {
	return strings.Contains(msg, "pull") || strings.Contains(msg, "image")
}

// pullingContainer judges a container waiting for an image it cannot pull.
func pullingContainer(c *containerState) []Finding {
	if c.killedByOOM() || !c.waitingFor("ImagePullBackOff", "ErrImagePull", "InvalidImageName", "ErrImageNeverPull") {
		return nil
	}
	waiting := c.Waiting
	f := c.Base
	f.Kind, f.Severity, f.Weight = KindImagePull, SevCritical, 0.95
	f.Time = containerSince(c.Pod, c.Status)
	image := c.image()
	f.Summary = fmt.Sprintf("%s cannot pull%s (%s)", c.Object, prefixed(" image ", image), waiting.Reason)
	f.Evidence = []string{fmt.Sprintf("%s is waiting with reason %s%s", c.Object, waiting.Reason, prefixed(" for image ", image))}
	if waiting.Message != "" {
		f.Evidence = append(f.Evidence, fmt.Sprintf("kubelet: %s", quote(waiting.Message, 300)))
	}
	f.setFact("image", image)
	f.setFact("message", waiting.Message)
	f.setFact("container", c.Status.Name)
	f.setFact("other_images", otherRegistries(c.Pod, image))
	return []Finding{f}
}

// prefixed is prefix+s, or nothing when s is empty (a kubectl get pods
// row names no image).
func prefixed(prefix, s string) string {
	if s == "" {
		return ""
	}
	return prefix + s
}

var imageRE = regexp.MustCompile(`image "([^"]+)"`)

func imageFromMessage(msg string) string {
	if m := findSubmatch(imageRE, msg); m != nil {
		return m[1]
	}
	return ""
}

// followPullCredentials follows a pull the registry refused (401,
// unauthorized, no basic auth credentials) to the credentials the pods
// present: when their ServiceAccount lists no imagePullSecrets and their
// spec names none, the kubelet pulls anonymously. A ServiceAccount of
// another namespace that lists a pull secret, or the same image running
// there, says what the new namespace lacks (a namespace split, a chart
// installed into a fresh namespace).
func followPullCredentials(ev *Gathered, found []Finding) []Finding {
	for i := range found {
		f := &found[i]
		if f.Kind != KindImagePull || f.fact("pull_sa") != "" {
			continue
		}
		if pullProblem(f.fact("message")) != pullNoCredentials && pullProblem(strings.Join(f.Evidence, " ")) != pullNoCredentials {
			continue
		}
		pod := podOfWorkload(ev.K8s.Pods, f.Namespace, f.Subject, func(p *corev1.Pod) bool { return pullFailing(p) })
		if pod == nil || len(pod.Spec.ImagePullSecrets) > 0 {
			continue
		}
		// A running pod of the same workload (the previous ReplicaSet)
		// that names a pull secret for the same registry: the new pod
		// template dropped it.
		if sib := pullSecretSibling(ev.K8s.Pods, pod); sib != nil {
			f.setFact("pull_dropped_secret", sib.Spec.ImagePullSecrets[0].Name)
			f.setFact("pull_sibling", sib.Name)
			f.Evidence = append(f.Evidence, fmt.Sprintf("pod %s/%s of the same workload runs %s with imagePullSecrets %s; the failing pod %s names none", sib.Namespace, sib.Name, pullImage(sib), pullSecretNames(sib), pod.Name))
			f.Weight = max(f.Weight, 0.95)
			continue
		}
		saName := orWord(pod.Spec.ServiceAccountName, "default")
		sa := serviceAccountNamed(ev.K8s.ServiceAccounts, pod.Namespace, saName)
		if sa == nil || len(sa.ImagePullSecrets) > 0 {
			continue // not read, or it lists one (then the secret's content is wrong)
		}
		f.setFact("pull_sa", pod.Namespace+"/"+saName)
		f.Evidence = append(f.Evidence, fmt.Sprintf("ServiceAccount %s/%s, which pod %s runs as, has no image pull secrets", pod.Namespace, saName, pod.Name))
		image := pullImage(pod)
		registry, _, _ := strings.Cut(image, "/")
		// Elsewhere: the same image running, a ServiceAccount with a pull
		// secret.
		for j := range ev.K8s.Pods {
			p := &ev.K8s.Pods[j]
			if p.Namespace == pod.Namespace || image == "" || pullImage(p) != image || pullFailing(p) || p.Status.Phase != corev1.PodRunning {
				continue
			}
			f.setFact("pull_ns_elsewhere", p.Namespace)
			f.Evidence = append(f.Evidence, fmt.Sprintf("the same image %s runs in namespace %s (pod %s)", image, p.Namespace, p.Name))
			break
		}
		for _, o := range ev.K8s.ServiceAccounts {
			if o.Namespace == pod.Namespace || len(o.ImagePullSecrets) == 0 {
				continue
			}
			if ns := f.fact("pull_ns_elsewhere"); ns != "" && o.Namespace != ns {
				continue
			}
			f.setFact("pull_secret_elsewhere", o.ImagePullSecrets[0].Name)
			f.setFact("pull_ns_elsewhere", o.Namespace)
			f.Evidence = append(f.Evidence, fmt.Sprintf("ServiceAccount %s/%s lists the image pull secret %s", o.Namespace, o.Name, o.ImagePullSecrets[0].Name))
			break
		}
		if ns := f.fact("pull_ns_elsewhere"); ns != "" {
			d := fmt.Sprintf("in namespace %s", ns)
			if sec := f.fact("pull_secret_elsewhere"); sec != "" {
				d += fmt.Sprintf(" the pods pull %s with the image pull secret %s", orWord(registry, "the registry"), sec)
			} else {
				d += " the same image pulls"
			}
			f.setFact("pull_elsewhere", d+", which namespace "+pod.Namespace+" lacks")
		}
		f.Weight = max(f.Weight, 0.95)
	}
	return nil
}

// pullSecretSibling is a running pod of the failing pod's workload, from
// the same registry, whose spec names image pull secrets; nil when none.
func pullSecretSibling(pods []corev1.Pod, pod *corev1.Pod) *corev1.Pod {
	wl := WorkloadOfPod(pod)
	registry, _, _ := strings.Cut(pullImage(pod), "/")
	for i := range pods {
		p := &pods[i]
		if p.Namespace != pod.Namespace || p.Name == pod.Name || WorkloadOfPod(p) != wl || pullFailing(p) || len(p.Spec.ImagePullSecrets) == 0 {
			continue
		}
		if r, _, _ := strings.Cut(pullImage(p), "/"); registry == "" || r != registry {
			continue
		}
		return p
	}
	return nil
}

// pullSecretNames lists the image pull secrets a pod's spec names.
func pullSecretNames(p *corev1.Pod) string {
	var names []string
	for _, s := range p.Spec.ImagePullSecrets {
		names = append(names, s.Name)
	}
	return strings.Join(names, ",")
}

// pullFailing reports whether a pod waits on an image it cannot pull.
func pullFailing(p *corev1.Pod) bool {
	for _, cs := range append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...) {
		if w := cs.State.Waiting; w != nil && (w.Reason == "ImagePullBackOff" || w.Reason == "ErrImagePull") {
			return true
		}
	}
	return false
}

// pullImage is the image of a pod's first container ("" for none).
func pullImage(p *corev1.Pod) string {
	if len(p.Spec.Containers) > 0 && p.Spec.Containers[0].Image != "" {
		return p.Spec.Containers[0].Image
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Image != "" {
			return cs.Image
		}
	}
	return ""
}

// podOfWorkload is a pod of workload in namespace ns that ok accepts (the
// first whose spec was read wins), or nil.
func podOfWorkload(pods []corev1.Pod, ns, workload string, ok func(*corev1.Pod) bool) *corev1.Pod {
	var found *corev1.Pod
	for i := range pods {
		p := &pods[i]
		if p.Namespace != ns || WorkloadOfPod(p) != workload || !ok(p) {
			continue
		}
		if p.Spec.ServiceAccountName != "" {
			return p
		}
		if found == nil {
			found = p
		}
	}
	return found
}

// serviceAccountNamed is the ServiceAccount ns/name among those gathered,
// or nil.
func serviceAccountNamed(sas []corev1.ServiceAccount, ns, name string) *corev1.ServiceAccount {
	for i := range sas {
		if sas[i].Namespace == ns && sas[i].Name == name {
			return &sas[i]
		}
	}
	return nil
}

// pullRateLimitRE is a registry refusing a pull for its rate limit, as the
// kubelet relays it from containerd, CRI-O or Docker: Docker Hub's "429
// Too Many Requests - Server message: toomanyrequests: You have reached
// your pull rate limit", GHCR's and ECR Public's "toomanyrequests: Rate
// exceeded", Artifact Registry's "429 ... Quota exceeded", Quay's "429".
var pullRateLimitRE = regexp.MustCompile(`(?i)\b429 Too Many Requests|(?:status|code)(?: code)?:? 429\b|toomanyrequests|too many requests|pull rate limit|rate limit exceeded|\brate exceeded|quota exceeded`)

// registryName names the registry an image is pulled from, from its
// reference or the kubelet's message: an image without a registry host is
// Docker Hub's.
func registryName(image, msg string) string {
	host := ""
	if first, _, ok := strings.Cut(image, "/"); ok && (strings.ContainsAny(first, ".:") || first == "localhost") {
		host = first
	}
	l := strings.ToLower(host + " " + msg)
	switch {
	case host == "" && image != "" || host == "docker.io" || host == "index.docker.io" || host == "" && strings.Contains(l, "registry-1.docker.io"):
		return "Docker Hub (docker.io)"
	case strings.Contains(host, "public.ecr.aws"):
		return "Amazon ECR Public (public.ecr.aws)"
	case strings.Contains(host, ".dkr.ecr."):
		return "Amazon ECR (" + host + ")"
	case host == "quay.io":
		return "Quay (quay.io)"
	case host == "ghcr.io":
		return "GitHub Container Registry (ghcr.io)"
	case strings.HasSuffix(host, "gcr.io") || strings.HasSuffix(host, "-docker.pkg.dev"):
		return "Google Artifact Registry (" + host + ")"
	case strings.HasSuffix(host, ".azurecr.io"):
		return "Azure Container Registry (" + host + ")"
	case host != "":
		return host
	}
	return "the registry"
}

// rateLimitWords says which registry limits the pulls and how it says it.
func rateLimitWords(h *Hypothesis) string {
	msg := pullMessage(h)
	reg := registryName(h.fact("image"), msg)
	d := fmt.Sprintf("%s refuses the pulls with its pull rate limit (429 Too Many Requests", reg)
	if strings.Contains(strings.ToLower(msg), "toomanyrequests") {
		d += ", toomanyrequests"
	}
	d += ")"
	if strings.Contains(strings.ToLower(msg), "unauthenticated") || strings.Contains(strings.ToLower(msg), "anonymous") {
		d += ": the nodes pull anonymously, and anonymous pulls share a small limit per source address, so pods scheduled on nodes that do not have the image yet (a scale-up, new nodes) all pull at once and hit it"
	} else {
		d += ": the image exists and the registry answers; it refuses more pulls from these nodes for now"
	}
	return d
}

// registryAnswer is the part of a pull's message that holds the
// registry's answer (its status and server message), when the message
// is longer than that: "429 Too Many Requests - Server message:
// toomanyrequests: ...".
func registryAnswer(msg string) string {
	if loc := pullRateLimitRE.FindStringIndex(msg); loc != nil && loc[0] > 120 {
		return "…" + msg[loc[0]:]
	}
	return msg
}

// otherRegistries lists the pod's other images with their registries
// (those not image): the pull that fails is not theirs.
func otherRegistries(p *corev1.Pod, image string) string {
	if p == nil || image == "" {
		return ""
	}
	failReg := registryName(image, "")
	var out []string
	for _, c := range append(slices.Clone(p.Spec.InitContainers), p.Spec.Containers...) {
		if c.Image == "" || c.Image == image {
			continue
		}
		reg := registryName(c.Image, "")
		if reg == failReg {
			continue
		}
		s := c.Image + " from " + reg
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return strings.Join(out, ", ")
}

// followPullNodes says where the pulls fail when it is only on some
// nodes: the workload's pods that wait for the image are all on nodes
// where none of its pods runs, and those nodes are newer than the ones
// where they run (a scale-up that added nodes): the older nodes have the
// image already, the new ones must pull it.
func followPullNodes(ev *Gathered, found []Finding) {
	nodeAge := map[string]time.Time{}
	for i := range ev.K8s.Nodes {
		nodeAge[ev.K8s.Nodes[i].Name] = ev.K8s.Nodes[i].CreationTimestamp.Time
	}
	for i := range found {
		f := &found[i]
		if f.Kind != KindImagePull || f.fact("pull_nodes") != "" || f.Subject == "" {
			continue
		}
		failing, running := map[string]bool{}, map[string]bool{}
		for j := range ev.K8s.Pods {
			p := &ev.K8s.Pods[j]
			if p.Namespace != f.Namespace || WorkloadOfPod(p) != f.Subject || p.Spec.NodeName == "" {
				continue
			}
			if pullFailing(p) {
				failing[p.Spec.NodeName] = true
			} else if p.Status.Phase == corev1.PodRunning {
				running[p.Spec.NodeName] = true
			}
		}
		if len(failing) == 0 || len(running) == 0 {
			continue
		}
		var newest, oldestFailing time.Time
		ok := true
		for n := range failing {
			if running[n] || nodeAge[n].IsZero() {
				ok = false
			}
			oldestFailing = earliest(oldestFailing, nodeAge[n])
		}
		for n := range running {
			newest = latest(newest, nodeAge[n])
		}
		if pullProblem(f.fact("message")) == pullNoPlatform || pullProblem(strings.Join(f.Evidence, " ")) == pullNoPlatform {
			pullPlatformNodes(ev, f, failing, running)
		}
		if !ok || newest.IsZero() || !oldestFailing.After(newest) {
			continue
		}
		nodes := slices.Sorted(maps.Keys(failing))
		f.setFact("pull_nodes", fmt.Sprintf("the pods that cannot pull are all on %s, created %s, after the nodes where the pods of %s run (those have the image already; the new ones must pull it)",
			plural(len(nodes), "node "+strings.Join(nodes, ", "), "nodes "+strings.Join(nodes, ", ")), oldestFailing.UTC().Format("2006-01-02 15:04 UTC"), f.Subject))
		f.Evidence = append(f.Evidence, f.fact("pull_nodes"))
	}
}

// platformKeys are the node labels that say which image variant a node
// runs.
var platformKeys = []string{"kubernetes.io/os", "kubernetes.io/arch"}

// pullPlatformNodes follows a pull that found no variant for the node's
// platform to the nodes: when the pods that cannot pull are all on nodes
// whose kubernetes.io/os (or arch) label differs from the one of every
// node where the workload runs, the scheduler put them on a platform the
// image is not built for, and nothing in the pod spec kept them off it.
func pullPlatformNodes(ev *Gathered, f *Finding, failing, running map[string]bool) {
	labels := map[string]map[string]string{}
	for i := range ev.K8s.Nodes {
		labels[ev.K8s.Nodes[i].Name] = ev.K8s.Nodes[i].Labels
	}
	value := func(nodes map[string]bool, key string) string {
		v := ""
		for n := range nodes {
			l := labels[n][key]
			if l == "" || (v != "" && l != v) {
				return ""
			}
			v = l
		}
		return v
	}
	for _, key := range platformKeys {
		bad, good := value(failing, key), value(running, key)
		if bad == "" || good == "" || bad == good {
			continue
		}
		nodes := slices.Sorted(maps.Keys(failing))
		f.setFact("platform_key", key)
		f.setFact("platform_running", good)
		f.setFact("platform_failing", bad)
		s := fmt.Sprintf("the pods that cannot pull are all on %s labelled %s=%s, while its running pods are on %s=%s nodes: the scheduler placed them on a platform the image has no variant for",
			plural(len(nodes), "node "+strings.Join(nodes, ", "), "nodes "+strings.Join(nodes, ", ")), key, bad, key, good)
		if pod := podOfWorkload(ev.K8s.Pods, f.Namespace, f.Subject, func(p *corev1.Pod) bool { return pullFailing(p) && p.Spec.NodeName != "" }); pod != nil && describedSpec(pod) && pod.Spec.NodeSelector[key] == "" {
			s += fmt.Sprintf(", since the pod spec has no %s nodeSelector", key)
		}
		f.setFact("pull_platform", s)
		f.Evidence = append(f.Evidence, s)
		return
	}
}

// describedSpec reports whether pod's spec was read whole (YAML, JSON or
// kubectl describe), so that a field it lacks is known to be unset (a get
// pods row says nothing of the spec's node selector).
func describedSpec(pod *corev1.Pod) bool {
	switch pod.Annotations["rootcause.dev/kubectl-text"] {
	case "", "describe":
		return len(pod.Spec.Containers) > 0
	}
	return false
}
