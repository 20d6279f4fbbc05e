package agent

import (
	"context"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/knowledge"
	"github.com/rootcause/rootcause/agent/tools"
	"github.com/rootcause/rootcause/db"
)

// HistoryDepth is how many of a team's most recent completed
// investigations similar_incidents ranks.
const HistoryDepth = 500

// historyPage is the page size used to read them.
const historyPage = 100

// NewHistory returns the tools.History of a team: similar_incidents ranks
// the team's most recent completed investigations (at most HistoryDepth)
// by BM25 (the tokenizer and parameters of agent/knowledge) over each one's
// message, summary and root cause. It reads the store on every call, so it
// always sees the latest investigations; the running investigation is not
// completed and so never ranks against itself.
func NewHistory(store db.InvestigationService, team string) tools.History {
	return &history{store: store, team: team, depth: HistoryDepth}
}

type history struct {
	store db.InvestigationService
	team  string
	depth int
}

type historyDoc struct {
	inv    *db.Investigation
	terms  map[string]int
	length int
}

func (h *history) Similar(ctx context.Context, text string, limit int) ([]tools.PastIncident, error) {
	if limit <= 0 {
		limit = 5
	}
	q := knowledge.Tokenize(text)
	out := []tools.PastIncident{}
	if len(q) == 0 || h.store == nil || h.team == "" {
		return out, nil
	}
	var docs []historyDoc
	df := map[string]int{}
	totalLen := 0
	for offset := 0; offset < h.depth; offset += historyPage {
		page, total, err := h.store.ListInvestigations(ctx, db.InvestigationFilter{
			Team: h.team, Status: db.StatusCompleted, Limit: min(historyPage, h.depth-offset), Offset: offset,
		})
		if err != nil {
			return nil, err
		}
		for _, inv := range page {
			toks := knowledge.Tokenize(historyText(inv))
			if len(toks) == 0 {
				continue
			}
			d := historyDoc{inv: inv, terms: map[string]int{}, length: len(toks)}
			for _, t := range toks {
				d.terms[t]++
			}
			for t := range d.terms {
				df[t]++
			}
			totalLen += d.length
			docs = append(docs, d)
		}
		if len(page) == 0 || offset+len(page) >= total {
			break
		}
	}
	if len(docs) == 0 {
		return out, nil
	}
	n := float64(len(docs))
	avg := float64(totalLen) / n
	type hit struct {
		d     *historyDoc
		score float64
	}
	var hits []hit
	for i := range docs {
		d := &docs[i]
		score := 0.0
		for _, t := range q {
			tf := float64(d.terms[t])
			if tf == 0 {
				continue
			}
			dft := float64(df[t])
			idf := math.Log(1 + (n-dft+0.5)/(dft+0.5))
			score += idf * tf * (knowledge.K1 + 1) / (tf + knowledge.K1*(1-knowledge.B+knowledge.B*float64(d.length)/avg))
		}
		if score > 0 {
			hits = append(hits, hit{d, score})
		}
	}
	// Best first; ties go to the more recent investigation (docs are newest
	// first, and the sort is stable).
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].score > hits[j].score })
	for _, hi := range hits[:min(limit, len(hits))] {
		inv := hi.d.inv
		p := tools.PastIncident{
			InvestigationID: inv.ID,
			CreatedAt:       inv.CreatedAt.UTC().Format(time.RFC3339),
			Message:         clip(inv.Message, 500),
			Score:           math.Round(hi.score*1000) / 1000,
		}
		if inv.Result != nil {
			p.Summary = clip(inv.Result.Summary, 1000)
			p.RootCause = clip(inv.Result.RootCause.Description, 1000)
		}
		out = append(out, p)
	}
	return out, nil
}

// historyText is what an investigation is ranked on.
func historyText(inv *db.Investigation) string {
	var b strings.Builder
	b.WriteString(inv.Message)
	if inv.Result != nil {
		b.WriteString("\n")
		b.WriteString(inv.Result.Summary)
		b.WriteString("\n")
		b.WriteString(inv.Result.RootCause.Description)
	}
	return b.String()
}

// clip shortens s to at most n bytes on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + " …"
}
