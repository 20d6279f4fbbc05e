package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/rootcause/rootcause/finding"
)

// Confidence adjustments of the skeptic pass.
const (
	correlationFactor = 0.6 // root cause resting on correlation alone
	unsupportedCap    = 40  // root cause the evidence does not support
)

// Verdicts of the skeptic.
const (
	verdictSupported   = "supported"
	verdictCorrelation = "correlation_only"
	verdictUnsupported = "unsupported"
)

type review struct {
	Verdicts []struct {
		Claim   int    `json:"claim"`
		Verdict string `json:"verdict"`
		Reason  string `json:"reason"`
	} `json:"verdicts"`
}

// skeptic asks the model, without tools to gather more, whether each claim
// of res rests on the evidence collected, and lowers confidence, drops
// unsupported evidence and adds notes accordingly. A failed review leaves
// res as it is, with a note.
func (l *loop) skeptic(ctx context.Context, res *finding.Result) {
	claims := []string{"root cause: " + res.RootCause.Description}
	for _, ev := range res.RootCause.Evidence {
		claims = append(claims, "evidence: "+ev)
	}
	var b strings.Builder
	sub := *res
	sub.Notes = nil
	js, _ := json.MarshalIndent(&sub, "", "  ")
	b.WriteString("Findings under review:\n")
	b.Write(js)
	b.WriteString("\n\nClaims to judge:\n")
	for i, c := range claims {
		fmt.Fprintf(&b, "[%d] %s\n", i, c)
	}
	b.WriteString("\nEvidence the tools returned during the investigation:\n")
	b.WriteString(l.digest())
	b.WriteString("\nCall review_findings with one verdict per claim.")

	ts := &toolset{}
	o := ts.add(&offered{name: toolReview, def: ToolDef{
		Description: "Give your verdict on each numbered claim.",
		Parameters:  json.RawMessage(reviewSchema),
	}, schema: compileSchema(json.RawMessage(reviewSchema))})
	l.progress("skeptic review")
	resp, err := l.chat(ctx, skepticPrompt, []Message{{Role: RoleUser, Content: l.red.redact(b.String())}}, ts.defs(""), o.alias)
	if err != nil {
		if ctx.Err() == nil {
			res.Notes = append(res.Notes, fmt.Sprintf("the skeptic review failed (%v); confidence was not reviewed", err))
		}
		return
	}
	l.acct.add(resp.Usage, 0, 0)
	calls := resp.ToolCalls
	if len(calls) == 0 {
		calls = salvageToolCalls(resp.Content, ts)
	}
	var args json.RawMessage
	for _, c := range calls {
		if c.Name == o.alias {
			args = bytes.TrimSpace(c.Arguments)
			break
		}
	}
	if args == nil {
		res.Notes = append(res.Notes, "the skeptic review gave no verdicts; confidence was not reviewed")
		return
	}
	if err := o.schema.validate(args); err != nil {
		res.Notes = append(res.Notes, fmt.Sprintf("the skeptic review was malformed (%v); confidence was not reviewed", cut(err.Error(), 300)))
		return
	}
	var rv review
	if err := json.Unmarshal(args, &rv); err != nil {
		res.Notes = append(res.Notes, fmt.Sprintf("the skeptic review was malformed (%v); confidence was not reviewed", err))
		return
	}
	applyReview(res, rv, len(claims))
}

// applyReview changes res by the skeptic's verdicts.
func applyReview(res *finding.Result, rv review, nclaims int) {
	drop := map[int]bool{}
	done := map[int]bool{}
	for _, v := range rv.Verdicts {
		if v.Claim < 0 || v.Claim >= nclaims || done[v.Claim] {
			continue
		}
		done[v.Claim] = true
		reason := strings.TrimSpace(v.Reason)
		if reason == "" {
			reason = "no reason given"
		}
		if v.Claim == 0 {
			before := res.RootCause.Confidence
			switch v.Verdict {
			case verdictCorrelation:
				res.RootCause.Confidence = math.Round(before*correlationFactor*10) / 10
				res.Notes = append(res.Notes, fmt.Sprintf("skeptic review: the root cause rests on correlation only (%s); confidence lowered from %g to %g",
					cut(reason, 300), before, res.RootCause.Confidence))
			case verdictUnsupported:
				if before > unsupportedCap {
					res.RootCause.Confidence = unsupportedCap
				}
				if res.Verdict == finding.VerdictIdentified {
					res.Verdict = finding.VerdictInconclusive
				}
				res.Notes = append(res.Notes, fmt.Sprintf("skeptic review: the evidence collected does not support the root cause (%s); confidence capped at %d",
					cut(reason, 300), unsupportedCap))
			}
			continue
		}
		ev := res.RootCause.Evidence[v.Claim-1]
		switch v.Verdict {
		case verdictUnsupported:
			drop[v.Claim-1] = true
			res.Notes = append(res.Notes, fmt.Sprintf("skeptic review: removed evidence not found in the tool results: %q (%s)", cut(ev, 200), cut(reason, 200)))
		case verdictCorrelation:
			res.Notes = append(res.Notes, fmt.Sprintf("skeptic review: evidence shows correlation only: %q (%s)", cut(ev, 200), cut(reason, 200)))
		}
	}
	if len(drop) > 0 {
		kept := make([]string, 0, len(res.RootCause.Evidence))
		for i, ev := range res.RootCause.Evidence {
			if !drop[i] {
				kept = append(kept, ev)
			}
		}
		res.RootCause.Evidence = kept
	}
}

// digest summarises the evidence collected for the skeptic, within
// digestBytes.
func (l *loop) digest() string {
	l.mu.Lock()
	items := append([]evidenceItem(nil), l.evidence...)
	l.mu.Unlock()
	var b strings.Builder
	if l.base != nil {
		base := *l.base
		base.Notes = nil
		if js, err := json.Marshal(&base); err == nil {
			fmt.Fprintf(&b, "### offline analyst findings\n%s\n", cut(string(js), 4<<10))
		}
	}
	if len(items) == 0 {
		b.WriteString("(the model called no tools)\n")
	}
	for i, it := range items {
		entry := fmt.Sprintf("### %s\n%s\n", it.call, it.result)
		if b.Len()+len(entry) > digestBytes {
			fmt.Fprintf(&b, "(%d more tool results omitted)\n", len(items)-i)
			break
		}
		b.WriteString(entry)
	}
	return b.String()
}
