package analyst

import (
	"regexp"
	"strings"
	"time"
)

// A change is a cause's trigger only when what it changed relates to what
// the chain of the cause reached: the object, key, label, image, setting,
// port or component its findings name. Landing shortly before the onset
// is not enough: a feature flag flipped ten minutes before a pod became
// unschedulable did not make the scheduler refuse it, a deploy's new
// hostPort did. nearestChange is the one place that chooses a trigger:
//
//   - a change the mechanism says is of its kind (fitsChange: a config
//     change for a config error, a new memory request for "Insufficient
//     memory") relates to it when it touches the subject, and comes
//     first;
//   - a change whose text names what the cause's findings reached (its
//     content terms, below) relates to it, whatever service it was
//     filed under (the DaemonSet that took the port, the ConfigMap that
//     set the value), and stays the trigger even when it is older than
//     the window of a merely recent change;
//   - any other change to the subject relates to it only when the
//     mechanism lets changes to its subject trigger it: never for a
//     mechanism with strict or content-only triggers (a client's surge,
//     a pod the scheduler cannot place), where such a change is a
//     coincidence.

// triggerRelation ranks how a change relates to a hypothesis.
type triggerRelation int

const (
	unrelatedChange      triggerRelation = iota
	restartOfSubject                     // a rollout restart of the subject (it ships nothing new)
	changeToSubject                      // a change to the subject, its content silent on the cause
	changeNamesCause                     // the change's text names what the chain reached
	changeOfItsKind                      // a change of the kind that produces the mechanism
	changeOfItsKindNamed                 // both: of its kind, and naming what it reached
)

// contentFacts are the facts of a finding that name what the chain of its
// cause reached: the object, key, label, image, setting or port a change
// would have to alter to cause it.
var contentFacts = []string{"host_ports", "port_holder", "image", "missing", "secret", "volume_key", "key",
	"setting", "variable", "storage_class", "claim", "selector_unmatched", "taint", "config_map", "config_path", "probe_path", "policy_name", "quota", "failed_server", "row_values"}

// numericContent are the content facts whose values are ports: a number
// names them only next to the word port.
var numericContent = map[string]bool{"host_ports": true}

// wordedContent are the content facts whose values are common words (a
// ResourceQuota named "compute"): a change names them only when it also
// says what they are.
var wordedContent = map[string]string{"quota": "quota"}

var (
	termSplitRE = regexp.MustCompile(`[,;]\s*|\s+and\s+`)
	labelPartRE = regexp.MustCompile(`[-_./]`)
)

// contentTerms are the names a change must carry to relate by its content
// to h: each of at least four characters (a port of at least three
// digits), lower-cased.
func contentTerms(h *Hypothesis) (words, ports []string) {
	words, ports, _ = contentTermsOf(h)
	return words, ports
}

// contentTermsOf is contentTerms with the terms that name their object
// only beside a word of its kind (worded: term -> word).
func contentTermsOf(h *Hypothesis) (words, ports []string, worded map[string]string) {
	seen := map[string]bool{}
	for _, f := range h.Primary {
		for _, k := range contentFacts {
			v := f.fact(k)
			if v == "" {
				continue
			}
			for _, t := range termSplitRE.Split(v, -1) {
				t = strings.ToLower(strings.TrimSpace(t))
				if w := wordedContent[k]; w != "" {
					if len(t) >= 4 && !seen["="+t] {
						seen["="+t] = true
						if worded == nil {
							worded = map[string]string{}
						}
						worded[t] = w
					}
					continue
				}
				// An image is named by its reference, and by its registry
				// and its repository with the tag (a registry moved, a tag
				// pushed or deleted).
				if k == "image" {
					for _, part := range imageTerms(t) {
						if !seen[part] {
							seen[part] = true
							words = append(words, part)
						}
					}
				}
				if numericContent[k] {
					t, _, _ = strings.Cut(t, "/")
					if len(t) >= 3 && !seen["#"+t] {
						seen["#"+t] = true
						ports = append(ports, t)
					}
					continue
				}
				// A holder "DaemonSet monitoring/node-exporter (container
				// x)" is named by its workload's name.
				if k == "port_holder" {
					if _, rest, ok := strings.Cut(t, "/"); ok {
						t, _, _ = strings.Cut(rest, " ")
					}
				}
				t = strings.Trim(t, `"'`)
				// A label a selector requires is named by its value's
				// distinctive parts too ("a100" of nvidia-tesla-a100).
				if k == "selector_unmatched" {
					_, val, _ := strings.Cut(t, "=")
					for _, part := range labelPartRE.Split(val, -1) {
						if len(part) >= 4 && strings.ContainsAny(part, "0123456789") && !seen[part] {
							seen[part] = true
							words = append(words, part)
						}
					}
				}
				if len(t) >= 4 && !seen[t] {
					seen[t] = true
					words = append(words, t)
				}
			}
		}
	}
	return words, ports, worded
}

// imageTerms are the parts of an image reference a change may name: its
// registry host (with a dot or a port: docker.io's library names are no
// host), its last path element with the tag ("orders-api:2.3.1"), and a
// tag that is a version (digits, at least four characters).
func imageTerms(ref string) []string {
	ref, _, _ = strings.Cut(ref, "@")
	var out []string
	if host, rest, ok := strings.Cut(ref, "/"); ok && strings.ContainsAny(host, ".:") && rest != "" {
		out = append(out, host)
	}
	last := ref[strings.LastIndexByte(ref, '/')+1:]
	if _, tag, ok := strings.Cut(last, ":"); ok {
		out = append(out, last)
		if len(tag) >= 4 && strings.ContainsAny(tag, "0123456789") && tag != "latest" {
			out = append(out, tag)
		}
	}
	return out
}

// namesCause reports whether a change's text names what h's chain
// reached.
func namesCause(h *Hypothesis, c *Finding) bool {
	text := changeText(c)
	if text == "" {
		return false
	}
	words, ports, worded := contentTermsOf(h)
	for _, w := range words {
		if containsToken(text, w) {
			return true
		}
	}
	for t, w := range worded {
		if containsToken(text, t) && strings.Contains(text, w) {
			return true
		}
	}
	if len(ports) > 0 && strings.Contains(text, "port") {
		for _, p := range ports {
			if containsToken(text, p) {
				return true
			}
		}
	}
	return false
}

// containsToken reports whether s holds t not glued to other letters or
// digits (t "9100" in "hostPort 9100", not in "19100").
func containsToken(s, t string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], t)
		if j < 0 {
			return false
		}
		a, b := i+j, i+j+len(t)
		if (a == 0 || !isWordByte(s[a-1])) && (b == len(s) || !isWordByte(s[b])) {
			return true
		}
		i = a + 1
	}
}

func isWordByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '_'
}

// contentTriggered reports whether only a change naming what h's chain
// reached triggers it (the mechanism's contentTriggers).
func contentTriggered(h *Hypothesis) bool {
	m := mechanismOf(h.Kind)
	return m != nil && m.contentTriggers
}

// relationOf is how a change relates to h, and how long before the onset
// it may lie and still trigger it.
func relationOf(h *Hypothesis, c *Finding) (triggerRelation, time.Duration) {
	names := namesCause(h, c)
	touches := changeTouches(c, h)
	switch fits := touches && fitsMechanism(h, c); {
	case fits && names:
		return changeOfItsKindNamed, 0 // no limit: what was gathered
	case names:
		return changeNamesCause, 0
	case fits:
		return changeOfItsKind, triggerFar
	case !touches:
		return unrelatedChange, 0
	}
	if strictTrigger(h) || contentTriggered(h) {
		return unrelatedChange, 0
	}
	if c.fact("restart") != "" {
		return restartOfSubject, triggerFar
	}
	return changeToSubject, triggerFar
}

// nearestChange chooses h's trigger among the changes: the one that
// relates most closely to it (relationOf), the latest of those that relate
// as closely, never one after the onset.
func nearestChange(h *Hypothesis, changes []*Finding) *Finding {
	var best *Finding
	bestRank := unrelatedChange
	if h.Onset.IsZero() {
		return nil
	}
	ref := h.Onset
	// A cache that filled for hours before it evicted: the change that
	// filled it lies before the climb, not before the evictions.
	if t, err := time.Parse(time.RFC3339, h.fact("filling_since")); err == nil && h.Kind == KindCacheFull && t.Before(ref) {
		ref = t
	}
	for _, c := range changes {
		d := ref.Sub(c.Time)
		if d < -2*time.Minute {
			continue
		}
		rank, far := relationOf(h, c)
		if rank == unrelatedChange || far > 0 && d > far {
			continue
		}
		if best == nil || rank > bestRank || rank == bestRank && c.Time.After(best.Time) {
			best, bestRank = c, rank
		}
	}
	return best
}

// coincidentChange reports whether a change near h's onset is a
// coincidence for h: h's mechanism is triggered only by changes that fit
// it or name what its chain reached (strict or content-only triggers),
// and c does neither. Such a change is not a rival explanation of the
// symptoms h explains.
func coincidentChange(h *Hypothesis, c *Finding) bool {
	return (strictTrigger(h) || contentTriggered(h)) && !fitsMechanism(h, c) && !namesCause(h, c)
}
