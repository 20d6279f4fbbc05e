package agent_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent"
	"github.com/rootcause/rootcause/db"
	"github.com/rootcause/rootcause/finding"
)

// stepsEngine reports a few steps and tool calls quickly, so runs end while
// streams are between reads.
type stepsEngine struct{}

func (stepsEngine) Investigate(ctx context.Context, req *agent.Request, run agent.Run) (*finding.Result, error) {
	for i := range 3 {
		run.Step("step", i, 3)
	}
	if _, err := run.Call(ctx, "probe", map[string]any{}); err != nil {
		return nil, err
	}
	return noopEngine{}.Investigate(ctx, req, run)
}

// staleEvents returns each read of the event log a little late, as a
// loaded server does: a run can reach its final state between a stream's
// read of the events and its read of the record, the window of the race.
type staleEvents struct{ db.InvestigationService }

func (s staleEvents) InvestigationEvents(ctx context.Context, id string, after uint64) ([]db.InvestigationEvent, error) {
	evs, err := s.InvestigationService.InvestigationEvents(ctx, id, after)
	time.Sleep(3 * time.Millisecond)
	return evs, err
}

// TestEventStreamEndsWithFinalStatus hammers the race between a run
// finishing and its event stream deciding to end: many asynchronous runs,
// each streamed from the moment it is accepted, with event reads made
// stale, and every stream must end with the final status event.
func TestEventStreamEndsWithFinalStatus(t *testing.T) {
	runs := 150
	if testing.Short() {
		runs = 30
	}
	s := newRunServerWith(t, stepsEngine{}, func(st db.InvestigationService) db.InvestigationService { return staleEvents{st} })
	body := []byte(`{"agent_name":"k8s_agent","message":"checkout is slow","async":true}`)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for range runs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			code, out := s.do(t, http.MethodPost, "/api/v1/agents/run", body)
			if code != http.StatusAccepted {
				t.Errorf("submit: %d %s", code, out)
				return
			}
			var acc struct {
				ID string `json:"investigation_id"`
			}
			if err := json.Unmarshal(out, &acc); err != nil || acc.ID == "" {
				t.Errorf("submit answer %s", out)
				return
			}
			req, _ := http.NewRequest(http.MethodGet, s.url+"/api/v1/agents/status/"+acc.ID+"/events", nil)
			req.Header.Set("Authorization", "Bearer "+s.token)
			res, err := s.http.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			defer res.Body.Close()
			var events []string // "type data"
			var typ string
			sc := bufio.NewScanner(res.Body)
			for sc.Scan() {
				line := sc.Text()
				switch {
				case strings.HasPrefix(line, "event: "):
					typ = strings.TrimPrefix(line, "event: ")
				case strings.HasPrefix(line, "data: "):
					events = append(events, typ+" "+strings.TrimPrefix(line, "data: "))
				}
			}
			if len(events) == 0 {
				t.Errorf("%s: stream ended with no event", acc.ID)
				return
			}
			last := events[len(events)-1]
			if last != `status {"status":"completed"}` {
				t.Errorf("%s: stream ended without the final status; events: %q", acc.ID, events)
			}
			if events[0] != `status {"status":"pending"}` || !bytes.Contains([]byte(strings.Join(events, "\n")), []byte(`status {"status":"running"}`)) {
				t.Errorf("%s: events %q", acc.ID, events)
			}
		}()
	}
	wg.Wait()
}
