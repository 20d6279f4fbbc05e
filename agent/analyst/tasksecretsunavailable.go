package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// KindTaskSecretsUnavailable is a container task that cannot start
// because the platform cannot fetch the secrets its definition injects.
const KindTaskSecretsUnavailable Kind = "task_secrets_unavailable"

// An ECS task (Fargate or EC2) whose definition injects secrets from
// Secrets Manager or SSM Parameter Store is started only once the agent
// fetched them with the task execution role: when it cannot, the task
// stops before any container runs, with stopCode TaskFailedToStart and
// the stoppedReason "ResourceInitializationError: unable to pull secrets
// or registry auth: … unable to retrieve secret from asm … AccessDeniedException
// …". The containers never log; a deployment circuit breaker rolls back
// whatever image was being deployed, so the image is blamed. The inner
// error names the cause: access to the secret denied to the execution
// role, the secret missing, or "Access to KMS is not allowed" when the
// secret is encrypted with a customer-managed key whose policy (or the
// role's) does not grant kms:Decrypt, typically after the secrets were
// re-encrypted with a new key.
var taskSecretsUnavailable = &mechanism{
	kind:           KindTaskSecretsUnavailable,
	class:          classCause,
	label:          "tasks cannot start: their secrets cannot be fetched",
	detect:         detectTaskSecretsUnavailable,
	strictTriggers: true,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return matchLine(secretAccessChangeRE, changeText(c))
	},
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("the tasks of %s cannot start (ResourceInitializationError): ECS cannot fetch the secret %s with the task execution role — %s — so every task stops before its containers run (%s tasks), whatever image it runs",
			h.Subject, orWord(h.fact("secret"), "its definition injects"), quote(h.fact("reason"), 160), orWord(h.fact("count"), "its"))
		if h.fact("kms") != "" {
			d += "; the secret is encrypted with a KMS key the execution role may not use for decrypt (no kms:Decrypt)"
		}
		if dn := h.fact("denied"); dn != "" {
			d += "; CloudTrail: " + quote(dn, 200)
		}
		if c := h.fact("change"); c != "" {
			d += "; it follows " + c
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		if h.fact("kms") != "" {
			r.high("Grant the task execution role of %s kms:Decrypt on the key that now encrypts %s (in the key policy or the role's policy, with kms:ViaService secretsmanager), then force a new deployment", h.Subject, orWord(h.fact("secret"), "its secrets"))
		} else {
			r.high("Give the task execution role of %s access to %s (secretsmanager:GetSecretValue or ssm:GetParameters on its ARN) or fix the ARN in the task definition, then force a new deployment", h.Subject, orWord(h.fact("secret"), "its secrets"))
		}
		r.med("Do not roll back or rebuild the image: the tasks stop before it runs")
		r.low("Alert on ECS tasks stopped with TaskFailedToStart / ResourceInitializationError, and check every consumer's role when a secret's key or policy changes")
	},
}

var (
	// secretsPullRE is ECS's stoppedReason for secrets it could not
	// fetch, with what follows.
	secretsPullRE = regexp.MustCompile(`ResourceInitializationError: unable to pull secrets(?: or registry auth)?:?\s*([^"]*)`)
	// secretARNRE is a Secrets Manager secret (its 6-character suffix
	// dropped) or an SSM parameter.
	secretARNRE = regexp.MustCompile(`arn:aws:secretsmanager:[\w-]+:\d+:secret:([\w/+=.@-]+?)(?:-\w{6})?(?:[:\s"]|$)|arn:aws:ssm:[\w-]+:\d+:parameter(/[\w/.-]+)`)
	// ecsServiceGroupRE and taskFamilyRE name the task's service.
	ecsServiceGroupRE = regexp.MustCompile(`"group"\s*:\s*"service:([\w-]+)"`)
	taskFamilyRE      = regexp.MustCompile(`task-definition/([\w-]+):\d+`)
	stoppedAtRE       = regexp.MustCompile(`"stoppedAt"\s*:\s*"([^"]+)"`)
	// kmsDecryptDeniedRE is CloudTrail's (or an SDK's) refusal of a
	// decrypt.
	kmsDecryptDeniedRE = regexp.MustCompile(`is not authorized to perform: kms:Decrypt on resource: [^"]*`)
	// secretAccessChangeRE is a change to what may read a secret.
	secretAccessChangeRE = regexp.MustCompile(`(?i)\bkms\b|customer[ -]managed key|re-?encrypt|\bsecret|\biam\b|execution role|role polic|key polic|permission`)
)

// detectTaskSecretsUnavailable reads the stopped tasks handed over (aws
// ecs describe-tasks, the service's events).
func detectTaskSecretsUnavailable(ev *Gathered, _ []Finding) []Finding {
	var (
		reason, secret, subject, denied string
		count                           int
		at                              time.Time
	)
	for _, c := range ev.Commands {
		hit := false
		for _, l := range c.Lines {
			m := findSubmatch(secretsPullRE, l)
			if m == nil {
				continue
			}
			hit = true
			count++
			if reason == "" {
				r := strings.TrimSpace(m[1])
				// The innermost error: after the last "from secrets
				// manager:"/"from ssm:" or the service call's retries.
				for _, sep := range []string{"from secrets manager: ", "from ssm: ", "time(s): "} {
					if i := strings.LastIndex(r, sep); i >= 0 {
						r = r[i+len(sep):]
					}
				}
				reason = strings.TrimRight(r, `",`)
				if s := findSubmatch(secretARNRE, m[1]); s != nil {
					secret = orWord(s[1], s[2])
				}
			}
		}
		if !hit {
			continue
		}
		for _, l := range c.Lines {
			if subject == "" {
				if m := findSubmatch(ecsServiceGroupRE, l); m != nil {
					subject = m[1]
				}
			}
			if m := findSubmatch(stoppedAtRE, l); m != nil {
				if t, err := time.Parse(time.RFC3339Nano, m[1]); err == nil && (at.IsZero() || t.Before(at)) {
					at = t
				}
			}
		}
		if subject == "" {
			if m := findSubmatch(taskFamilyRE, strings.Join(c.Lines, "\n")); m != nil {
				subject = m[1]
			}
		}
	}
	if reason == "" {
		return nil
	}
	subject = orWord(subject, ev.Scope.Service)
	if subject == "" {
		return nil
	}
	for _, c := range ev.Commands {
		for _, l := range c.Lines {
			if m := findString(kmsDecryptDeniedRE, l); m != "" && denied == "" {
				denied = strings.TrimSpace(m)
			}
		}
	}
	if at.IsZero() {
		at = ev.Window.Start
	}
	f := Finding{Kind: KindTaskSecretsUnavailable, Subject: subject, Object: "service " + subject, Severity: SevCritical, Weight: 0.9,
		Source: SrcCloudWatch, Time: at}
	f.setFact("reason", reason)
	f.setFact("secret", secret)
	f.setFact("count", fmt.Sprint(count))
	if strings.Contains(strings.ToLower(reason), "kms") || denied != "" {
		f.setFact("kms", "true")
	}
	f.setFact("denied", denied)
	f.Evidence = append(f.Evidence, fmt.Sprintf("stopped tasks of %s (%d): ResourceInitializationError: unable to pull secrets … %s", subject, count, quote(reason, 200)))
	if denied != "" {
		f.Evidence = append(f.Evidence, "CloudTrail: "+quote(denied, 200))
	}
	// The change that moved the secret to another key or changed who may
	// read it.
	var best string
	var bestAt time.Time
	for _, c := range slices.Concat(ev.Earlier, ev.Changes) {
		d := strings.ToLower(c.Description)
		if c.Timestamp.After(at) || !matchLine(secretAccessChangeRE, c.Description) {
			continue
		}
		if !strings.Contains(d, "kms") && !strings.Contains(d, "encrypt") && !strings.Contains(d, "secret") {
			continue
		}
		// It must name the secret's path (prod/orders/ of
		// prod/orders/db) or the service.
		if i := strings.LastIndex(strings.Trim(secret, "/"), "/"); i > 0 && !strings.Contains(d, strings.ToLower(strings.Trim(secret, "/")[:i+1])) && !strings.Contains(d, strings.ToLower(subject)) {
			continue
		}
		if c.Timestamp.After(bestAt) {
			best, bestAt = fmt.Sprintf("the %s change %q at %s", orWord(c.Kind, "recorded"), c.Description, ts(c.Timestamp)), c.Timestamp
		}
	}
	if best != "" {
		f.setFact("change", best)
		f.Evidence = append(f.Evidence, best)
	}
	f.Summary = fmt.Sprintf("tasks of %s cannot start: secret %s cannot be fetched (%s)", subject, orWord(secret, "?"), truncate(reason, 80))
	return []Finding{f}
}
