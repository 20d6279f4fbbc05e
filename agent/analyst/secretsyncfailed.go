package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/finding"
)

// A Secret written by a controller that can no longer write it: an
// ExternalSecret (External Secrets Operator) whose provider refuses it
// (its SecretStore's own credential expired or was revoked, the secret
// was removed from the vault) or a SealedSecret the sealed-secrets
// controller cannot decrypt (sealed with another cluster's certificate,
// or with a key the controller no longer holds). Nothing fails at once:
// the Secret keeps what the last sync wrote. The workload fails only when
// it needs what the sync would have brought — a key added since (the pod
// stays in CreateContainerConfigError: couldn't find key), or a value
// rotated at the provider since (the pods restarted by anything at all
// read the stale password and are refused). The controller's own record
// says why: the ExternalSecret's SecretSyncedError condition and
// UpdateFailed events, the controller's log (Azure's AADSTS codes, AWS's
// and Google's refusals), the SealedSecret's ErrUnsealFailed event and
// the controller's "no key could decrypt secret" line.

// KindSecretSyncFailed is a workload failing on a Secret its controller
// cannot sync.
const KindSecretSyncFailed Kind = "secret_sync_failed"

var secretSyncFailed = &mechanism{
	kind:   KindSecretSyncFailed,
	class:  classCause,
	label:  "the Secret it reads is not synced by its controller",
	detect: detectSecretSyncFailed,
	related: exceptChanges(func(h *Hypothesis, f *Finding) bool {
		return f.Kind != KindSecretSyncFailed && (strings.EqualFold(f.Subject, h.Subject) || f.fact("caller") == h.Subject || slices.Contains(h.top().Related, f.Subject))
	}),
	strictTriggers: true,
	fitsChange:     func(h *Hypothesis, c *Finding) bool { return false },
	describe:       describeSecretSyncFailed,
	recommend:      recommendSecretSyncFailed,
}

var (
	// A secret controller failing to write a Secret: External Secrets'
	// condition reasons, events and log messages, sealed-secrets'
	// events and log lines.
	secretSyncFailRE = regexp.MustCompile(`(?i)SecretSyncedError|could not get secret data from provider|error retrieving secret|error processing spec\.data|unable to fetch secret|ErrUnsealFailed|Failed to unseal|no key could decrypt secret|giving up: .*decrypt|crypto/rsa: decryption error`)
	// The provider's own reason behind a refused sync, most specific
	// first in secretReasonRank.
	secretReasonRE = regexp.MustCompile(`(?i)AADSTS\d+:[^"\\]*?(?:\.\s|\.$|$)|no key could decrypt secret(?: \([^)]*\))?|crypto/rsa: decryption error|(?:ExpiredToken|InvalidClientTokenId|UnrecognizedClientException|AccessDeniedException|ResourceNotFoundException)[^"\\]{0,160}|PermissionDenied[^"\\]{0,160}|SecretNotFound[^"\\]{0,120}|ClientSecretCredential authentication failed|invalid_client|permission denied[^"\\]{0,120}`)
	// The object a controller's line names: sealed-secrets' "Updating
	// ns/name", External Secrets' structured "ExternalSecret":{"name":..}
	// and its klog form externalsecret="ns/name".
	sealedLogObjRE = regexp.MustCompile(`(?i)(?:Error updating|Updating|unseal(?:ing)?)\s+([\w.-]+)/([\w.-]+)`)
	esoLogObjRE    = regexp.MustCompile(`(?i)"ExternalSecret":\s*\{\s*"name":\s*"([\w.-]+)",\s*"namespace":\s*"([\w.-]+)"|externalsecret="?([\w.-]+)/([\w.-]+)"?`)
	// The store a controller's line names.
	esoStoreRE = regexp.MustCompile(`"SecretStore":\s*\{\s*"name":\s*"([\w.-]+)",\s*"kind":\s*"(\w+)"`)
)

// secretSync is what was read of one Secret's controller failing.
type secretSync struct {
	ns, name   string
	controller string // ExternalSecret or SealedSecret
	since      time.Time
	reason     string // the provider's reason, most specific read
	line       string // the failure as the controller says it
	store      string
}

func secretReasonRank(s string) int {
	l := strings.ToLower(s)
	switch {
	case strings.HasPrefix(l, "aadsts"), strings.HasPrefix(l, "no key could decrypt"), strings.HasPrefix(l, "crypto/rsa"):
		return 3
	case strings.Contains(l, "clientsecretcredential") || l == "invalid_client":
		return 1
	}
	return 2
}

func (s *secretSync) note(at time.Time, line string) {
	if !at.IsZero() && (s.since.IsZero() || at.Before(s.since)) {
		s.since = at
	}
	if s.line == "" {
		s.line = line
	}
	for _, r := range findAllString(secretReasonRE, line, -1) {
		r = strings.TrimSpace(strings.ReplaceAll(r, `\n`, " "))
		if s.reason == "" || secretReasonRank(r) > secretReasonRank(s.reason) {
			s.reason = r
		}
	}
	if m := findSubmatch(esoStoreRE, line); m != nil && s.store == "" {
		s.store = m[2] + " " + m[1]
	}
}

// secretSyncs reads the Secrets whose controllers fail to write them, by
// namespace/name.
func secretSyncs(ev *Gathered) *keyed[secretSync] {
	var out keyed[secretSync]
	get := func(ns, name, ctrl string) *secretSync {
		s := out.get(ns + "/" + name)
		s.ns, s.name = ns, name
		if s.controller == "" {
			s.controller = ctrl
		}
		return s
	}
	for _, e := range ev.K8s.Events {
		kind := strings.ToLower(strings.SplitN(e.InvolvedObject.Kind, ".", 2)[0])
		if kind != "externalsecret" && kind != "sealedsecret" {
			continue
		}
		if !matchLine(secretSyncFailRE, e.Reason+" "+e.Message) {
			continue
		}
		ctrl := "ExternalSecret"
		if kind == "sealedsecret" {
			ctrl = "SealedSecret"
		}
		ns := orWord(e.InvolvedObject.Namespace, e.Namespace)
		get(ns, e.InvolvedObject.Name, ctrl).note(eventFirst(e), e.Reason+": "+e.Message)
	}
	for x := range incidentMatches(ev, secretSyncFailRE) {
		for _, line := range x.t.Lines() {
			if !matchLine(secretSyncFailRE, line) {
				continue
			}
			at := orTime(x.t.FirstSeen, x.t.FirstIncident)
			if m := findSubmatch(esoLogObjRE, line); m != nil {
				if m[1] != "" {
					get(m[2], m[1], "ExternalSecret").note(at, line)
				} else {
					get(m[3], m[4], "ExternalSecret").note(at, line)
				}
			} else if m := findSubmatch(sealedLogObjRE, line); m != nil && strings.Contains(strings.ToLower(line), "decrypt") {
				get(m[1], m[2], "SealedSecret").note(at, line)
			}
		}
	}
	// The controller's log printed by a command (kubectl logs of its
	// Deployment).
	for _, c := range ev.Commands {
		for _, line := range c.Lines {
			if !matchLine(secretSyncFailRE, line) && findString(secretReasonRE, line) == "" {
				continue
			}
			if m := findSubmatch(esoLogObjRE, line); m != nil {
				ns, name := m[2], m[1]
				if name == "" {
					ns, name = m[3], m[4]
				}
				get(ns, name, "ExternalSecret").note(time.Time{}, line)
			} else if m := findSubmatch(sealedLogObjRE, line); m != nil && strings.Contains(strings.ToLower(line), "decrypt") {
				get(m[1], m[2], "SealedSecret").note(time.Time{}, line)
			}
		}
	}
	// The controller's log lines that name the object without the
	// failure words (the provider's answer printed after them).
	for i := range ev.Logs {
		for _, t := range ev.Logs[i].Templates {
			for _, line := range t.Lines() {
				if findString(secretReasonRE, line) == "" {
					continue
				}
				if m := findSubmatch(esoLogObjRE, line); m != nil {
					ns, name := m[2], m[1]
					if name == "" {
						ns, name = m[3], m[4]
					}
					if s := out.m[ns+"/"+name]; s != nil {
						s.note(time.Time{}, line)
					}
				}
			}
		}
	}
	return &out
}

// eventFirst is when an event was first seen, or zero when it was seen
// once and its age says only when (a table's LAST SEEN).
func eventFirst(e corev1.Event) time.Time {
	if e.Count <= 1 {
		return time.Time{}
	}
	if !e.FirstTimestamp.IsZero() {
		return e.FirstTimestamp.Time
	}
	if !e.EventTime.IsZero() {
		return e.EventTime.Time
	}
	return e.LastTimestamp.Time
}

// podSecretKeys names the keys of Secret name that a pod's containers
// read (env secretKeyRef), "*" for the whole Secret (envFrom, a volume).
func podSecretKeys(p *corev1.Pod, name string) []string {
	var keys []string
	cs := append(slices.Clone(p.Spec.InitContainers), p.Spec.Containers...)
	for _, c := range cs {
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && e.ValueFrom.SecretKeyRef.Name == name {
				keys = appendNew(keys, e.ValueFrom.SecretKeyRef.Key)
			}
		}
		for _, e := range c.EnvFrom {
			if e.SecretRef != nil && e.SecretRef.Name == name {
				keys = appendNew(keys, "*")
			}
		}
	}
	for _, v := range p.Spec.Volumes {
		if v.Secret != nil && v.Secret.SecretName == name {
			keys = appendNew(keys, "*")
		}
	}
	return keys
}

// detectSecretSyncFailed reports a workload in trouble whose pods read a
// Secret its controller fails to sync.
func detectSecretSyncFailed(ev *Gathered, found []Finding) []Finding {
	syncs := secretSyncs(ev)
	if len(syncs.order) == 0 {
		return nil
	}
	var out []Finding
	done := map[string]bool{}
	for _, k := range syncs.order {
		s := syncs.m[k]
		pods := slices.Clone(ev.K8s.Pods)
		// A pod the kubelet reports missing a key of the Secret reads it,
		// whether or not its spec was read.
		for _, e := range ev.K8s.Events {
			if e.InvolvedObject.Kind != "Pod" || e.InvolvedObject.Namespace != s.ns {
				continue
			}
			if m := findSubmatch(missingRefRE, e.Message); m != nil && m[3] != "" && (m[5] == s.name || m[5] == s.ns+"/"+s.name) {
				p := corev1.Pod{}
				p.Name, p.Namespace = e.InvolvedObject.Name, s.ns
				p.Spec.Containers = []corev1.Container{{Env: []corev1.EnvVar{{Name: m[3], ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: s.name}, Key: m[3]}}}}}}
				pods = append(pods, p)
			}
		}
		for i := range pods {
			p := &pods[i]
			if p.Namespace != s.ns {
				continue
			}
			keys := podSecretKeys(p, s.name)
			if len(keys) == 0 {
				continue
			}
			w := workloadOfPodNamed(ev.K8s, p.Namespace, p.Name)
			if done[w] {
				continue
			}
			// The workload must be in trouble: a finding of its own that
			// is not a change.
			var victim *Finding
			for j := range found {
				f := &found[j]
				if infoOf(f.Kind).class == classChange || !strings.EqualFold(f.Subject, w) {
					continue
				}
				if victim == nil || f.Severity > victim.Severity || f.Kind == KindConfigError {
					victim = f
				}
			}
			if victim == nil {
				continue
			}
			done[w] = true
			f := Finding{Kind: KindSecretSyncFailed, Subject: w, Namespace: s.ns, Severity: SevCritical, Weight: 0.95,
				Source: SrcKubernetes, Object: fmt.Sprintf("%s %s/%s", s.controller, s.ns, s.name), Time: victim.Time}
			if f.Time.IsZero() || !ev.Window.recent(f.Time) {
				f.Time = ev.Window.Start
			}
			// The missing key the kubelet names, else the keys read.
			key := ""
			for _, e := range ev.K8s.Events {
				if m := findSubmatch(missingRefRE, e.Message); m != nil && m[3] != "" && (m[5] == s.name || strings.HasSuffix(m[5], "/"+s.name)) {
					key = m[3]
				}
			}
			f.setFact("secret", s.ns+"/"+s.name)
			f.setFact("controller", s.controller)
			f.setFact("missing_key", key)
			if key == "" && !slices.Contains(keys, "*") {
				f.setFact("keys", strings.Join(keys, ", "))
			}
			if !s.since.IsZero() {
				f.setFact("since", ts(s.since))
			}
			f.setFact("reason", s.reason)
			f.setFact("store", s.store)
			f.setFact("victim", victim.Summary)
			f.setFact("victim_line", victim.fact("line"))
			for _, x := range found {
				if x.Kind == KindAuth && (x.fact("caller") == w || strings.EqualFold(x.Subject, w)) && x.fact("line") != "" {
					f.Facts["victim_line"] = x.fact("line")
				}
			}
			// What changed at the provider since the sync failed: a change
			// naming the Secret.
			for _, c := range append(slices.Clone(ev.Earlier), ev.Changes...) {
				if !s.since.IsZero() && c.Timestamp.Before(s.since) {
					continue
				}
				if strings.EqualFold(c.Service, s.name) || strings.Contains(strings.ToLower(c.Description), strings.ToLower(s.name)) {
					f.setFact("provider_change", fmt.Sprintf("%s (%s)", c.Description, ts(c.Timestamp)))
				}
			}
			for _, x := range found {
				if x.Kind == KindAuth && x.fact("caller") == w {
					f.Related = appendNew(f.Related, x.Subject)
				}
			}
			f.Summary = fmt.Sprintf("%s reads Secret %s/%s, which its %s controller cannot sync", w, s.ns, s.name, s.controller)
			f.Evidence = []string{fmt.Sprintf("%s %s/%s is not synced: %s", s.controller, s.ns, s.name, quote(ReadableLine(s.line), 220))}
			if s.reason != "" && !strings.Contains(s.line, s.reason) {
				f.Evidence = append(f.Evidence, fmt.Sprintf("the provider's reason: %s", quote(s.reason, 240)))
			}
			ref := "the whole Secret"
			if len(keys) > 0 && keys[0] != "*" {
				ref = "key " + strings.Join(keys, ", ")
			}
			f.Evidence = append(f.Evidence, fmt.Sprintf("pod %s/%s of %s reads %s of Secret %s", p.Namespace, p.Name, w, ref, s.name))
			out = append(out, f)
		}
	}
	return out
}

func describeSecretSyncFailed(h *Hypothesis, sc Scope) string {
	ctrl := h.fact("controller")
	who := "External Secrets"
	if ctrl == "SealedSecret" {
		who = "the sealed-secrets controller"
	}
	d := fmt.Sprintf("%s fails (%s) because the Secret %s it reads is stale: it is written by the %s of the same name, which %s cannot sync%s",
		h.Subject, orWord(h.fact("victim"), "its pods fail"), h.fact("secret"), ctrl, who, h.clause(" since ", "since"))
	if r := h.fact("reason"); r != "" {
		d += ": " + quote(r, 240)
	}
	if st := h.fact("store"); st != "" {
		d += fmt.Sprintf(" (its store %s is refused by the provider: the store's own credential no longer works)", st)
	} else if ctrl == "SealedSecret" {
		d += " (the value was sealed with a certificate whose private key this controller does not hold: another cluster's, or a key since lost)"
	}
	d += ". The Secret keeps what the last sync wrote"
	if k := h.fact("missing_key"); k != "" {
		d += fmt.Sprintf(", without the key %s added since, so the kubelet cannot start the new pods (couldn't find key %s)", k, k)
	} else if pc := h.fact("provider_change"); pc != "" {
		d += fmt.Sprintf(", while the value at the provider changed since (%s): the pods read the old value%s and are refused", pc, h.quoteClause(" ", "victim_line", 180))
	} else {
		d += fmt.Sprintf(", so %s runs with an outdated value%s", h.Subject, h.quoteClause(": ", "victim_line", 180))
	}
	return d
}

func recommendSecretSyncFailed(h *Hypothesis, sc Scope, r *recommender) {
	if h.fact("controller") == "SealedSecret" {
		r.add(finding.PriorityHigh, fmt.Sprintf("Re-seal the Secret %s with this cluster's certificate (kubeseal --fetch-cert against its controller, then kubeseal --merge-into) and let the controller unseal it; the pods of %s start once the key is there", h.fact("secret"), h.Subject))
		r.add(finding.PriorityMedium, "Fetch the sealing certificate from the target cluster in the pipeline, never from a file kept for another cluster")
	} else {
		r.add(finding.PriorityHigh, fmt.Sprintf("Restore the credential of the secret store%s (a new client secret or certificate for its service principal, a refreshed role), check that the ExternalSecret %s syncs (force-sync annotation), then restart %s so that it reads the current value", orWord(" "+h.fact("store"), ""), h.fact("secret"), h.Subject))
		r.add(finding.PriorityMedium, "Do not roll back the unrelated change that restarted the pods: they would read the same stale Secret")
	}
	r.add(finding.PriorityLow, "Alert on ExternalSecrets and SealedSecrets whose Ready condition is False and on the expiry of secret-store credentials")
}
