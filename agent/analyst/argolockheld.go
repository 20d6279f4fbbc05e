package analyst

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// Argo Workflows held Pending by a synchronization lock another workflow
// holds. A workflow (or template) that declares a semaphore (a ConfigMap
// key giving its limit) or a mutex waits in phase Pending, its message
// "Waiting for NS/ConfigMap/NAME/KEY lock. Lock status: 0/1", until a
// holder releases it; no pod is created, so nothing fails and the cluster
// is not short of room. A holder that never finishes (suspended at a
// manual approval step, a long backfill, a workflow stuck Running) keeps
// every later run Pending. The answer names the lock, its limit, how many
// runs wait and the holder with its state (suspended at which step).

// KindArgoLockHeld is Argo workflows Pending on a lock another holds.
const KindArgoLockHeld Kind = "argo_lock_held"

var argoLockHeld = &mechanism{
	kind:   KindArgoLockHeld,
	class:  classCause,
	label:  "Argo workflows Pending on a semaphore or mutex another workflow holds",
	detect: detectArgoLockHeld,
	related: exceptOwnAndChanges(KindArgoLockHeld, func(h *Hypothesis, f *Finding) bool {
		holder := h.fact("holder")
		return holder != "" && (f.Subject == holder || strings.Contains(f.Summary, holder))
	}),
	// The change that made the holder stay (an approval step added to its
	// template) or that changed the lock is the trigger.
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		t := strings.ToLower(changeText(c))
		tmpl := strings.ToLower(h.fact("holder_template"))
		return tmpl != "" && strings.Contains(t, tmpl) || strings.Contains(t, strings.ToLower(h.fact("lock_name"))) && h.fact("lock_name") != "" ||
			strings.Contains(t, "semaphore") || strings.Contains(t, "mutex")
	},
	strictTriggers: true,
	describe: func(h *Hypothesis, sc Scope) string {
		d := h.Subject + "'s workflows are Pending, not for room in the cluster: they wait for the Argo " + orWord(h.fact("lock_kind"), "semaphore") + " " + h.fact("lock")
		if l := h.fact("limit"); l != "" {
			d += " (limit " + l + ")"
		}
		if n := h.fact("waiting"); n != "" && n != "1" {
			d += ", " + n + " runs waiting"
		}
		d += h.quoteClause(" (\"", "message", 160)
		if h.fact("message") != "" {
			d = strings.Replace(d, "(\"\"", "(\"", 1) + ")"
		}
		if holder := h.fact("holder"); holder != "" {
			d += "; the lock is held by the workflow " + holder
			if st := h.fact("holder_state"); st != "" {
				d += ", " + st
			}
			if s := h.fact("suspended_step"); s != "" {
				d += ", suspended at its step " + s + " waiting for someone to resume (approve) it"
			}
			d += ", so the lock is never released and no later run starts"
			if t := h.Trigger; t != nil {
				d += fmt.Sprintf("; that came with %s's change at %s (%s)", t.Subject, t.Time.UTC().Format(time.RFC3339), quote(t.Summary, 160))
			}
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		holder := orWord(h.fact("holder"), "the workflow holding the lock")
		if h.fact("suspended_step") != "" {
			r.high("Resume or stop %s (argo resume / argo stop) so it releases %s; the waiting runs of %s then start", holder, h.fact("lock"), h.Subject)
		} else {
			r.high("Finish, stop or terminate %s so it releases %s; the waiting runs of %s then start", holder, h.fact("lock"), h.Subject)
		}
		r.med("Hold the lock only around the step that needs it (a template-level synchronization on the write step, not the whole workflow), and never across a manual approval (suspend) step")
		r.low("Alert on workflows Pending on a lock for longer than their schedule's interval, and set a deadline (activeDeadlineSeconds) on suspended workflows")
	},
}

var (
	argoWaitRE       = regexp.MustCompile(`Waiting for ([\w.-]+/(ConfigMap/[\w.-]+/[\w.-]+|Mutex/[\w.-]+)) lock\. Lock status: (\d+)/(\d+)`)
	argoWaitingRowRE = regexp.MustCompile(`^\s*([\w.-]+)\s+Pending\s+.*Waiting for [\w./-]+ lock`)
	argoHolderRE     = regexp.MustCompile(`"?holders?"?\s*:\s*\[?\s*"([\w./-]+)"`)
	argoYAMLHolderRE = regexp.MustCompile(`^\s*-?\s*holders?:\s*([\w./-]+)\s*$`)
	argoListRowRE    = regexp.MustCompile(`^\s*([\w.-]+)\s+(Running \(Suspended\)|Running|Failed|Error|Succeeded|Pending)\s{2,}`)
	argoStatusRE     = regexp.MustCompile(`^Status:\s+(.+?)\s*$`)
	argoNameRE       = regexp.MustCompile(`^Name:\s+([\w.-]+)\s*$`)
	argoSuspendRE    = regexp.MustCompile(`ǁ\s+([\w.-]+)`)
	argoTemplateRE   = regexp.MustCompile(`workflows\.argoproj\.io/(?:workflow-template|cron-workflow)"?\s*[:=]\s*"?([\w.-]+)`)
	argoCronWFRE     = regexp.MustCompile(`cronWorkflow=[\w.-]+/([\w.-]+)`)
	argoWorkflowRE   = regexp.MustCompile(`\bworkflow=([\w.-]+)`)
	argoRunSuffixRE  = regexp.MustCompile(`-(?:\d{6,}|[a-z0-9]{5})$`)
)

func detectArgoLockHeld(ev *Gathered, _ []Finding) []Finding {
	lock, msg, limit := "", "", ""
	waiting := map[string]bool{}
	holders := map[string]int{}
	crons := map[string]string{}
	var at time.Time
	airflowLines(ev, func(l string, _ *evidence.CommandOutput) {
		if m := findSubmatch(argoWaitRE, l); m != nil && (lock == "" || m[1] == lock) {
			lock, limit = m[1], m[4]
			if msg == "" {
				msg = m[0]
			}
			if t, ok := evidence.LineTime([]byte(l), ev.Window.End); ok && (at.IsZero() || t.Before(at)) {
				at = t
			}
			if m := findSubmatch(argoWaitingRowRE, l); m != nil {
				waiting[m[1]] = true
			}
			if w := findSubmatch(argoWorkflowRE, l); w != nil {
				waiting[w[1]] = true
			}
		}
		if c := findSubmatch(argoCronWFRE, l); c != nil {
			if w := findSubmatch(argoWorkflowRE, l); w != nil {
				crons[w[1]] = c[1]
			}
		}
		if m := findSubmatch(argoHolderRE, l); m != nil {
			holders[m[1][strings.LastIndex(m[1], "/")+1:]]++
		}
		if m := findSubmatch(argoYAMLHolderRE, l); m != nil {
			holders[m[1][strings.LastIndex(m[1], "/")+1:]]++
		}
	})
	if lock == "" {
		return nil
	}
	// The waiting workflows' family: their cron workflow, else the name
	// their runs share, else the one asked about.
	subject := ""
	for w := range waiting {
		s := crons[w]
		if s == "" {
			s = argoRunSuffixRE.ReplaceAllString(w, "")
		}
		if ev.Scope.Service != "" && strings.HasPrefix(w, ev.Scope.Service) {
			s = ev.Scope.Service
		}
		if subject == "" || s < subject {
			subject = s
		}
	}
	if subject == "" {
		subject = ev.Scope.Service
	}
	if subject == "" {
		return nil
	}
	holder := ""
	var names []string
	for h := range holders {
		if !waiting[h] && !strings.HasPrefix(h, subject+"-") {
			names = append(names, h)
		}
	}
	sort.Slice(names, func(i, j int) bool {
		if holders[names[i]] != holders[names[j]] {
			return holders[names[i]] > holders[names[j]]
		}
		return names[i] < names[j]
	})
	if len(names) > 0 {
		holder = names[0]
	}
	if at.IsZero() {
		at = ev.Window.Start
	}
	f := Finding{Kind: KindArgoLockHeld, Subject: subject, Object: "lock " + lock, Time: at, Severity: SevCritical, Weight: 0.85, Source: SrcLogs}
	f.setFact("lock", lock)
	kind, name := "semaphore", lock
	if strings.Contains(lock, "/Mutex/") {
		kind = "mutex"
	}
	if i := strings.LastIndex(lock, "/"); i >= 0 {
		name = lock[i+1:]
	}
	f.setFact("lock_kind", kind)
	f.setFact("lock_name", name)
	f.setFact("limit", limit)
	f.setFact("message", msg)
	if len(waiting) > 0 {
		f.setFact("waiting", fmt.Sprint(len(waiting)))
	}
	f.Evidence = append(f.Evidence, fmt.Sprintf("%s's workflows are Pending: %s", subject, quote(msg, 200)))
	if holder != "" {
		f.setFact("holder", holder)
		f.Related = append(f.Related, holder)
		readArgoHolder(ev, holder, &f)
		e := "the " + kind + " " + lock + " is held by the workflow " + holder
		if st := f.fact("holder_state"); st != "" {
			e += " (" + st + ")"
		}
		if s := f.fact("suspended_step"); s != "" {
			e += ", suspended at its step " + s
		}
		f.Evidence = append(f.Evidence, e)
	}
	f.Summary = fmt.Sprintf("%s's workflows Pending on the Argo %s %s", subject, kind, name)
	return []Finding{f}
}

// readArgoHolder reads the holder's state (argo list, argo get), the step
// it is suspended at and the template it was submitted from.
func readArgoHolder(ev *Gathered, holder string, f *Finding) {
	for _, c := range ev.Commands {
		inHolder := strings.Contains(c.Command, holder)
		cur := ""
		for _, l := range c.Lines {
			if m := findSubmatch(argoListRowRE, l); m != nil && m[1] == holder && f.fact("holder_state") == "" {
				f.setFact("holder_state", m[2])
			}
			if m := findSubmatch(argoNameRE, l); m != nil {
				cur = m[1]
			}
			if !inHolder && cur != holder {
				continue
			}
			if m := findSubmatch(argoStatusRE, l); m != nil {
				f.setFact("holder_state", m[1])
			}
			if m := findSubmatch(argoSuspendRE, l); m != nil {
				f.setFact("suspended_step", m[1])
			}
			if m := findSubmatch(argoTemplateRE, l); m != nil {
				f.setFact("holder_template", m[1])
			}
		}
	}
}
