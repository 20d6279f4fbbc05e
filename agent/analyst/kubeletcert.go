package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// A kubelet authenticates to the API server with a client certificate
// (/var/lib/kubelet/pki/kubelet-client-current.pem, or the one embedded
// in /etc/kubernetes/kubelet.conf), valid for a year from kubeadm. With
// rotation on, the kubelet renews it before it expires; with rotation off
// (rotateCertificates: false, a node joined by hand, a CSR approver
// missing) it expires: the API server answers the kubelet "Unauthorized"
// (x509: certificate has expired), the kubelet stops posting node status
// and renewing its lease, the node goes NotReady (Unknown, "Kubelet
// stopped posting node status"), the node controller taints it and evicts
// its pods, which stay Terminating while replacements may find no room
// elsewhere. Restarting the kubelet does not help: it has no valid
// credentials to start with. The node NotReady and the pods lost are the
// consequence; the certificate is the root.

// KindKubeletCert is a kubelet whose client certificate expired.
const KindKubeletCert Kind = "kubelet_cert"

var kubeletCert = &mechanism{
	kind:   KindKubeletCert,
	class:  classCause,
	label:  "kubelet client certificate expired (node cannot authenticate)",
	detect: detectKubeletCert,
	related: func(h *Hypothesis, f *Finding) bool {
		return nodeCauseRelated(h, f)
	},
	// An expired certificate is triggered by time, not by a change; a
	// change to the node's certificates or kubelet configuration may be.
	fitsChange:     changeSays(kubeletCertChangeRE),
	strictTriggers: true,
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("the kubelet client certificate of node %s expired", h.Subject)
		d += h.wrapped(" (notAfter ", "not_after", ")")
		if h.fact("rotation_off") != "" {
			d += " with certificate rotation disabled (rotateCertificates: false)"
		}
		d += ": the API server rejects the kubelet as Unauthorized (x509: certificate has expired), so it stops posting node status and the node went NotReady"
		d += h.quoteClause("; the kubelet: ", "line", 160)
		d += h.clause(". Its pods are lost to the node: ", "victims")
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Renew the kubelet client certificate of %s: on the node, kubeadm kubeconfig user --client-name system:node:%s --org system:nodes (or kubeadm certs renew / re-join with a bootstrap token) into /etc/kubernetes/kubelet.conf, then systemctl restart kubelet", h.Subject, h.Subject)
		r.med("Turn certificate rotation on (rotateCertificates: true in /var/lib/kubelet/config.yaml) and make sure kubelet CSRs are approved, so the certificate renews before it expires")
		r.low("Check the expiry of every node's kubelet certificate (openssl x509 -enddate -noout -in /var/lib/kubelet/pki/kubelet-client-current.pem) and alert 30 days ahead (kubelet_certificate_manager_client_ttl_seconds)")
	},
}

var (
	// kubeletCertLineRE is the kubelet stating its client certificate is
	// gone or expired.
	kubeletCertLineRE = regexp.MustCompile(`(?i)No valid client certificate is found|(?:bootstrap )?client certificate[^\n]{0,120}?(?:is|has) expired|kubelet-client[^\n]{0,80}expired|certificate_manager\.go[^\n]{0,200}(?:has expired|expired|no valid certificate)|current client certificate[^\n]{0,40}expired`)
	// kubeletUnauthorizedRE is the kubelet refused by the API server.
	kubeletUnauthorizedRE = regexp.MustCompile(`(?i)(?:node status|node lease|ensure lease|\*v1\.Node|update node|register node|get node)[^\n]{0,160}Unauthorized|Unauthorized[^\n]{0,80}(?:node status|lease)`)
	// apiAuthExpiredRE is the API server refusing an expired client
	// certificate.
	apiAuthExpiredRE = regexp.MustCompile(`(?i)Unable to authenticate the request[^\n]{0,200}x509: certificate has expired`)
	// opensslNotAfterRE is openssl's end date ("notAfter=Nov 26 08:03:12
	// 2026 GMT").
	opensslNotAfterRE = regexp.MustCompile(`notAfter=([A-Z][a-z]{2}\s+\d+\s+[\d:]+\s+\d{4})\s*(?:GMT|UTC)?`)
	// kubeletCertSubjectRE is the subject of a kubelet's client
	// certificate ("CN = system:node:k8s-wk-07").
	kubeletCertSubjectRE = regexp.MustCompile(`system:node:([A-Za-z0-9][\w.-]*)`)
	// rotationOffRE is the kubelet's configuration without rotation.
	rotationOffRE = regexp.MustCompile(`(?i)rotateCertificates:\s*false|--rotate-certificates=false|RotateKubeletClientCertificate=false`)
	// kubeletCertChangeRE is a change to node certificates or the
	// kubelet's configuration.
	kubeletCertChangeRE = regexp.MustCompile(`(?i)kubelet|certificat|\bpki\b|\bcsr\b|rotat|\bca\b`)
)

// nodeCauseRelated relates findings to a cause on a node: the workloads
// whose pods run there and the logs it was read from (their own findings,
// certificate or authentication lines of the kubelet and API server).
func nodeCauseRelated(h *Hypothesis, f *Finding) bool {
	if ofListed(f, h.fact("workloads"), ",") {
		return true
	}
	for _, s := range strings.Split(h.fact("sources"), ",") {
		if s != "" && (f.Subject == s || strings.HasSuffix(f.Object, " "+s)) {
			return true
		}
	}
	return false
}

// nodeCause is one node's finding being built.
type nodeCause struct {
	f        Finding
	strong   bool
	sources  []string
	evidence []string
}

// detectKubeletCert finds nodes whose kubelet states its client
// certificate expired (or is refused as Unauthorized while openssl shows
// the certificate past its end date), with what the API server logged.
func detectKubeletCert(ev *Gathered, _ []Finding) []Finding {
	nodes := map[string]*nodeCause{}
	var order []string
	get := func(name string) *nodeCause {
		if n := nodes[name]; n != nil {
			return n
		}
		n := &nodeCause{f: Finding{Kind: KindKubeletCert, Subject: name, Object: "node " + name, Source: SrcLogs, Severity: SevCritical, Weight: 0.9}}
		nodes[name] = n
		order = append(order, name)
		return n
	}
	for _, h := range nodeLines(ev, kubeletCertLineRE, false) {
		n := get(h.node)
		n.strong = true
		n.f.Time = earliest(n.f.Time, orTime(h.t.FirstIncident, h.t.FirstSeen))
		n.f.setFact("line", h.line)
		n.sources = appendNew(n.sources, h.set.Subject)
		n.evidence = appendNew(n.evidence, templateEvidence(*h.set, h.t, h.line))
	}
	unauthorized := nodeLines(ev, kubeletUnauthorizedRE, false)
	for _, h := range unauthorized {
		if n := nodes[h.node]; n != nil {
			n.evidence = appendNew(n.evidence, templateEvidence(*h.set, h.t, h.line))
			n.f.Time = earliest(n.f.Time, orTime(h.t.FirstIncident, h.t.FirstSeen))
		}
	}
	// openssl on the node's client certificate, and its configuration.
	for _, c := range ev.Commands {
		out := strings.Join(c.Lines, "\n")
		m := findSubmatch(opensslNotAfterRE, out)
		if m == nil {
			continue
		}
		cmd := strings.ToLower(c.Command + " " + c.Run)
		node := ""
		if s := findSubmatch(kubeletCertSubjectRE, out); s != nil {
			node = s[1]
		} else if strings.Contains(cmd, "kubelet") {
			node = orWord(c.Host, sshHost(c.Command))
		}
		node = canonicalNode(ev, node)
		if node == "" {
			continue
		}
		notAfter, err := time.Parse("Jan _2 15:04:05 2006", strings.Join(strings.Fields(m[1]), " "))
		if err != nil {
			notAfter, err = time.Parse("Jan 2 15:04:05 2006", strings.Join(strings.Fields(m[1]), " "))
		}
		if err != nil || notAfter.After(ev.Window.End) {
			continue
		}
		notReady := nodeNotReadyNow(ev, node)
		if nodes[node] == nil && !notReady && !slices.ContainsFunc(unauthorized, func(h nodeHit) bool { return h.node == node }) {
			continue
		}
		n := get(node)
		n.strong = true
		n.f.setFact("not_after", ts(notAfter))
		n.f.Time = earliest(n.f.Time, notAfter)
		if matchLine(rotationOffRE, out) {
			n.f.setFact("rotation_off", "true")
		}
		n.evidence = append(n.evidence, fmt.Sprintf("%s: notAfter=%s (expired)%s", truncate(strings.TrimSpace(c.Command), 100), m[1], map[bool]string{true: ", rotateCertificates: false"}[matchLine(rotationOffRE, out)]))
	}
	var out []Finding
	for _, name := range order {
		n := nodes[name]
		if !n.strong {
			continue
		}
		// The API server's side: an expired client certificate refused.
		for i := range ev.Logs {
			set := &ev.Logs[i]
			for _, t := range set.Templates {
				if t.Incident > 0 && matchLine(apiAuthExpiredRE, t.Example) {
					n.sources = appendNew(n.sources, set.Subject)
					n.sources = appendNew(n.sources, set.Source)
					n.evidence = appendNew(n.evidence, templateEvidence(*set, t, t.Example))
					break
				}
			}
		}
		for _, h := range nodeLines(ev, kubeletUnauthorizedRE, false) {
			if h.node == name {
				n.sources = appendNew(n.sources, h.set.Subject)
			}
		}
		out = append(out, finishNodeCause(ev, n, fmt.Sprintf("node %s: kubelet client certificate expired", name)))
	}
	return out
}

// finishNodeCause names the workloads whose pods run on the node, its
// victims, and completes the finding.
func finishNodeCause(ev *Gathered, n *nodeCause, summary string) Finding {
	f := &n.f
	node := f.Subject
	if f.Time.IsZero() {
		f.Time = ev.Window.Start
	}
	pods := podsOnNode(ev, node)
	workloads := workloadsOf(pods)
	victims := podsByWorkload(pods, workloads)
	f.setFact("workloads", strings.Join(workloads, ","))
	f.setFact("sources", strings.Join(n.sources, ","))
	f.Related = append(f.Related, workloads...)
	f.Related = append(f.Related, n.sources...)
	if len(victims) > 0 {
		f.setFact("victims", strings.Join(victims, "; "))
	}
	f.Evidence = n.evidence
	if len(f.Evidence) > 6 {
		f.Evidence = f.Evidence[:6]
	}
	if len(victims) > 0 {
		f.Evidence = append(f.Evidence, "pods on "+node+": "+strings.Join(victims, "; "))
	}
	if n.strong {
		f.Weight = 0.95
	}
	f.Summary = summary
	return *f
}

// nodeNotReadyNow reports whether a listed node is not Ready.
func nodeNotReadyNow(ev *Gathered, node string) bool {
	for _, n := range ev.K8s.Nodes {
		if !sameNode(n.Name, node) {
			continue
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue {
				return true
			}
		}
	}
	return false
}

// sshHostRE is the host of "ssh [-opts] [user@]host 'command'".
var sshHostRE = regexp.MustCompile(`\bssh\s+(?:-\S+\s+)*(?:[\w.-]+@)?([A-Za-z0-9][\w.-]*)`)

// sshHost is the host an ssh command runs on ("" otherwise).
func sshHost(cmd string) string {
	if m := findSubmatch(sshHostRE, cmd); m != nil {
		return m[1]
	}
	return ""
}
