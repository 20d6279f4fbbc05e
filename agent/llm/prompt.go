package llm

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/rootcause/rootcause/agent"
	"github.com/rootcause/rootcause/finding"
)

// systemPrompt is ours; the agent's own prompt (team config) follows it.
const systemPrompt = `You are rootcause, an incident investigator for production systems. You find the root cause of the incident described by the user by calling tools that read live or captured evidence (Kubernetes objects, logs, metrics, changes, code, runbooks).

Method:
1. Start from the analyst's findings in the first message: they come from rule-based detectors and may be incomplete or wrong. Verify them.
2. Form hypotheses; for each, call the tools that would confirm or refute it. Look at what changed just before the symptoms began (deploys, config, feature flags, infrastructure).
3. Prefer narrow queries (a namespace, a label selector, a log pattern, a short time window). If a result says it was truncated, narrow the query.
4. When you know enough, or the evidence runs out, call submit_findings.

Rules:
- Act only through tool calls. Never describe a command or a tool call in prose: call the tool. Never invent tools, parameters or values: use only the tools offered and the parameters their schemas define.
- Every claim must rest on concrete evidence you saw in a tool result: object names, log lines, metric values, timestamps. Quote them in root_cause.evidence.
- Correlation in time is not causation: say so, and keep confidence below 50 when the evidence is indirect.
- List hypotheses you rejected in ruled_out with the evidence that rejects them, and evidence you could not consult (a tool failed, an integration is not configured) in data_gaps.
- If the system looks healthy, say so (verdict "healthy") with low confidence in any cause; if you cannot tell, use verdict "inconclusive".
- Do not repeat a tool call with the same arguments: you already have its result.
- Timestamps are RFC 3339 in UTC.`

const skepticPrompt = `You are a skeptical reviewer of incident findings. You receive the findings another investigator submitted, a numbered list of its claims, and a digest of the evidence the tools actually returned. For each claim decide:
- "supported": the evidence shows the mechanism directly (an error, an event, a value that causes the symptom).
- "correlation_only": the evidence shows only that things happened at about the same time, or a plausible link without proof of the mechanism.
- "unsupported": the evidence does not show it, or contradicts it, or the claim cites values that are not in the evidence.
Judge only from the evidence given; do not assume facts outside it. Answer by calling review_findings with one verdict per claim.`

const nudgeProse = "You replied in prose without calling a tool. Do not describe commands or tool calls in text. " +
	"Call one of the offered tools with JSON arguments to gather evidence, or call submit_findings with your result."

const nudgeTruncated = "Your reply was cut at the max_tokens limit before it finished. Keep replies short: " +
	"call a tool, or call submit_findings with concise fields."

const nudgeSubmit = "Stop investigating now and call submit_findings with your result, based on the evidence you have. " +
	"Put what you could not check in data_gaps and keep confidence low where evidence is indirect."

// analystBytes bounds the analyst's findings in the first message.
const analystBytes = 16 << 10

// userMessage states the incident, its context, the clock and the analyst's
// starting findings.
func userMessage(req *agent.Request, now string, base *finding.Result) string {
	var b strings.Builder
	b.WriteString("Incident to investigate:\n")
	b.WriteString(strings.TrimSpace(req.Message))
	b.WriteString("\n")
	if len(req.Context) > 0 {
		keys := make([]string, 0, len(req.Context))
		for k := range req.Context {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteString("\nContext:\n")
		for _, k := range keys {
			fmt.Fprintf(&b, "- %s: %s\n", k, req.Context[k])
		}
	}
	if now != "" {
		fmt.Fprintf(&b, "\nThe investigation's clock is %s: relative time windows such as \"1h\" count back from it.\n", now)
	}
	if base != nil {
		start := *base
		start.Notes = nil
		if js, err := json.MarshalIndent(&start, "", "  "); err == nil {
			b.WriteString("\nStarting evidence: the findings of the offline rule-based analyst (verify before relying on them):\n")
			b.WriteString(cut(string(js), analystBytes))
			b.WriteString("\n")
		}
	} else {
		b.WriteString("\nNo starting findings are available: gather the evidence with the tools.\n")
	}
	b.WriteString("\nInvestigate with the tools, then call submit_findings.")
	return b.String()
}

// agentSystem combines our prompt with the agent's own.
func agentSystem(a agent.Agent, delegates bool) string {
	s := systemPrompt
	if delegates {
		s += "\n- You are the planner: delegate focused sub-investigations to the specialist agents with the delegate_* tools, then combine their findings into one result."
	}
	if p := strings.TrimSpace(a.Prompt); p != "" {
		s += "\n\nInstructions for this agent (" + a.Name + "):\n" + p
	}
	return s
}
