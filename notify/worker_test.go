package notify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/rootcause/rootcause/db"
	"github.com/rootcause/rootcause/finding"
)

// receiver is a webhook endpoint on 127.0.0.1 that verifies every delivery
// with the Standard Webhooks library.
type receiver struct {
	t       *testing.T
	srv     *httptest.Server
	mu      sync.Mutex
	secrets []string
	answer  func(n int, w http.ResponseWriter, r *http.Request) int // status for the n-th request (1-based)
	got     []delivery
}

type delivery struct {
	id, sig string
	at      time.Time
	body    []byte
	status  int
}

func newReceiver(t *testing.T, answer func(n int, w http.ResponseWriter, r *http.Request) int) *receiver {
	rc := &receiver{t: t, answer: answer}
	rc.srv = httptest.NewServer(http.HandlerFunc(rc.serve)) // listens on 127.0.0.1
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) setSecrets(s ...string) {
	rc.mu.Lock()
	rc.secrets = s
	rc.mu.Unlock()
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
		rc.t.Errorf("receiver: %s with Content-Type %q", r.Method, r.Header.Get("Content-Type"))
	}
	for _, s := range rc.secrets {
		wh, err := standardwebhooks.NewWebhook(s)
		if err != nil {
			rc.t.Errorf("receiver: bad secret: %v", err)
			continue
		}
		if err := wh.Verify(body, r.Header); err != nil {
			rc.t.Errorf("receiver: delivery %s does not verify with %.12s…: %v", r.Header.Get("webhook-id"), s, err)
		}
	}
	status := 200
	if rc.answer != nil {
		status = rc.answer(len(rc.got)+1, w, r)
	}
	rc.got = append(rc.got, delivery{id: r.Header.Get("webhook-id"), sig: r.Header.Get("webhook-signature"), at: time.Now(), body: body, status: status})
	if status == http.StatusFound {
		w.Header().Set("Location", rc.srv.URL+"/elsewhere")
	}
	w.WriteHeader(status)
}

func (rc *receiver) deliveries() []delivery {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]delivery(nil), rc.got...)
}

type fixture struct {
	t     *testing.T
	path  string
	store *db.DB
	w     *Worker
	cfg   Config
}

func openStore(t *testing.T, path string) *db.DB {
	t.Helper()
	s, err := db.Open(path, db.Options{})
	if err != nil {
		t.Fatalf("opening db: %v", err)
	}
	return s
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{t: t, path: filepath.Join(t.TempDir(), db.FileName)}
	f.store = openStore(t, f.path)
	ctx := context.Background()
	if _, err := f.store.EnsureOrg(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	for _, team := range []string{"payments", "search"} {
		if _, err := f.store.CreateNode(ctx, db.Node{Name: team, Parent: "acme", Kind: db.KindTeam}); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		if f.w != nil {
			f.w.Stop(context.Background())
		}
		f.store.Close()
	})
	return f
}

// start starts a worker with a fast schedule and the loopback allowlist.
func (f *fixture) start(mod ...func(*Config)) *Worker {
	f.t.Helper()
	cfg := Config{
		Store:    f.store,
		Allow:    MustAllowlist("127.0.0.1"),
		Schedule: []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond},
		Rand:     func() float64 { return 1 }, // no jitter: the exact schedule
		Poll:     20 * time.Millisecond,
		Timeout:  2 * time.Second,
	}
	for _, m := range mod {
		m(&cfg)
	}
	f.cfg = cfg
	f.w = NewWorker(cfg)
	if err := f.w.Start(context.Background()); err != nil {
		f.t.Fatal(err)
	}
	return f.w
}

func (f *fixture) secret(team string) string {
	f.t.Helper()
	s, err := f.store.CreateWebhookSecret(context.Background(), team, 0, false)
	if err != nil {
		f.t.Fatal(err)
	}
	return s.Secret
}

// finish stores an investigation and finishes it the way the runtime does,
// with notify.Outbox writing the deliveries in the same transaction.
func (f *fixture) finish(team string, cfg map[string]any, failed bool) *db.Investigation {
	f.t.Helper()
	ctx := context.Background()
	inv := &db.Investigation{ID: NewMessageID()[4:], Team: team, Agent: "planner", Message: "checkout is slow",
		Status: db.StatusRunning, CreatedAt: time.Now().UTC()}
	inv.ID = "inv_" + inv.ID
	if err := f.store.CreateInvestigation(ctx, inv); err != nil {
		f.t.Fatal(err)
	}
	fin, err := f.store.FinishInvestigation(ctx, inv.ID, func(i *db.Investigation) error {
		now := time.Now().UTC()
		if failed {
			i.Status, i.FailedAt = db.StatusFailed, &now
			i.Error = &db.RunError{Code: db.EDATASOURCE, Message: "prometheus is unreachable"}
			return nil
		}
		i.Status, i.CompletedAt = db.StatusCompleted, &now
		i.Result = &finding.Result{
			Summary:   "checkout pods are OOM-killed after the 14:02 deploy",
			RootCause: finding.RootCause{Description: "memory limit lowered to 256Mi in v2.3.1", Confidence: 92, Evidence: []string{"OOMKilled x14"}},
			Recommendations: []finding.Recommendation{
				{Priority: "high", Action: "roll back checkout to v2.3.0"},
				{Priority: "medium", Action: "raise the memory limit to 512Mi"},
				{Priority: "low", Action: "alert on OOMKilled"},
				{Priority: "low", Action: "a fourth one that Slack does not show"},
			},
		}
		return nil
	}, func(i *db.Investigation) []db.OutboxEntry { return Outbox(i, cfg, "") })
	if err != nil {
		f.t.Fatal(err)
	}
	return fin
}

func webhookCfg(url string) map[string]any {
	return map[string]any{"webhooks": map[string]any{"investigation_complete": url}}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

func (f *fixture) entries(team string) []*db.OutboxEntry {
	f.t.Helper()
	l, err := f.store.ListDeliveries(context.Background(), team, 100)
	if err != nil {
		f.t.Fatal(err)
	}
	return l
}

func (f *fixture) waitState(team, id, state string) *db.OutboxEntry {
	f.t.Helper()
	var e *db.OutboxEntry
	waitFor(f.t, "delivery "+id+" to be "+state, func() bool {
		var err error
		e, err = f.store.GetDelivery(context.Background(), team, id)
		return err == nil && e.State == state
	})
	return e
}

func TestEveryCompletedInvestigationDeliveredOnceAndVerified(t *testing.T) {
	f := newFixture(t)
	rc := newReceiver(t, nil)
	rc.setSecrets(f.secret("payments"))
	f.start()
	var invs []*db.Investigation
	for i := 0; i < 6; i++ {
		inv := f.finish("payments", webhookCfg(rc.srv.URL+"/hook?token=abc"), i == 5)
		f.w.OnFinal(inv)
		invs = append(invs, inv)
	}
	waitFor(t, "6 deliveries recorded", func() bool {
		for _, e := range f.entries("payments") {
			if e.State != db.DeliveryDelivered {
				return false
			}
		}
		return len(f.entries("payments")) == 6
	})
	time.Sleep(100 * time.Millisecond) // room for an unwanted duplicate
	got := rc.deliveries()
	if len(got) != 6 {
		t.Fatalf("%d deliveries, want 6", len(got))
	}
	seen := map[string]bool{}
	byInv := map[string]Payload{}
	for _, d := range got {
		if seen[d.id] {
			t.Errorf("webhook-id %s delivered twice", d.id)
		}
		seen[d.id] = true
		var p Payload
		if err := json.Unmarshal(d.body, &p); err != nil {
			t.Fatal(err)
		}
		byInv[p.InvestigationID] = p
	}
	for i, inv := range invs {
		p, ok := byInv[inv.ID]
		if !ok {
			t.Fatalf("investigation %s not delivered", inv.ID)
		}
		if p.Event != EventInvestigationComplete || p.Team != "payments" || p.Agent != "planner" || p.Link != StatusPath+inv.ID {
			t.Errorf("payload: %+v", p)
		}
		if i < 5 {
			if p.Status != "completed" || p.CompletedAt == nil || p.RootCause == nil || p.RootCause.Confidence != 92 || len(p.Recommendations) != 4 || p.Summary == "" {
				t.Errorf("completed payload: %+v", p)
			}
		} else if p.Status != "failed" || p.FailedAt == nil || p.Error == nil || p.Error.Code != db.EDATASOURCE || p.RootCause != nil || p.Recommendations == nil {
			t.Errorf("failed payload: %+v", p)
		}
	}
	for _, e := range f.entries("payments") {
		if e.State != db.DeliveryDelivered || e.Attempts != 1 || e.DeliveredAt == nil || !seen[e.ID] {
			t.Errorf("entry %s: state %s, attempts %d", e.ID, e.State, e.Attempts)
		}
	}
	// The delivery log redacts the query string.
	views, err := f.w.Deliveries(context.Background(), "payments", 10)
	if err != nil || len(views) != 6 {
		t.Fatalf("Deliveries: %d, %v", len(views), err)
	}
	if strings.Contains(views[0].Target, "abc") || len(views[0].AttemptsLog) != 1 || *views[0].LastStatus != 200 {
		t.Errorf("view: %+v", views[0])
	}
}

func TestRetriesOnScheduleThenDelivers(t *testing.T) {
	f := newFixture(t)
	rc := newReceiver(t, func(n int, _ http.ResponseWriter, _ *http.Request) int {
		if n <= 3 {
			return http.StatusServiceUnavailable
		}
		return http.StatusNoContent
	})
	rc.setSecrets(f.secret("payments"))
	f.start()
	inv := f.finish("payments", webhookCfg(rc.srv.URL+"/hook"), false)
	f.w.Wake()
	id := f.entries("payments")[0].ID
	e := f.waitState("payments", id, db.DeliveryDelivered)
	got := rc.deliveries()
	if len(got) != 4 || e.Attempts != 4 {
		t.Fatalf("%d requests, %d attempts; want 4", len(got), e.Attempts)
	}
	for i, d := range got {
		if d.id != id {
			t.Errorf("attempt %d has webhook-id %s, want %s", i+1, d.id, id)
		}
		if i > 0 {
			gap := d.at.Sub(got[i-1].at)
			want := f.cfg.Schedule[i-1]
			if gap < want-5*time.Millisecond || gap > want+time.Second {
				t.Errorf("gap before attempt %d = %s, want about %s", i+1, gap, want)
			}
		}
	}
	log, err := f.store.DeliveryAttempts(context.Background(), id)
	if err != nil || len(log) != 4 {
		t.Fatalf("log %v %v", log, err)
	}
	for i, a := range log {
		want := 503
		if i == 3 {
			want = 204
		}
		if a.Attempt != i+1 || a.StatusCode != want || (i < 3) != (a.NextAttemptAt != nil) {
			t.Errorf("log[%d] = %+v", i, a)
		}
	}
	_ = inv
}

func TestGivesUpAfterRetryWindow(t *testing.T) {
	f := newFixture(t)
	rc := newReceiver(t, func(int, http.ResponseWriter, *http.Request) int { return 500 })
	rc.setSecrets(f.secret("payments"))
	f.start(func(c *Config) { c.RetryWindow = 300 * time.Millisecond })
	f.finish("payments", webhookCfg(rc.srv.URL), false)
	f.w.Wake()
	id := f.entries("payments")[0].ID
	e := f.waitState("payments", id, db.DeliveryFailed)
	// 0, +50ms, +100ms (=150), +200ms clamped to the 300ms deadline.
	if e.Attempts != 4 || !strings.Contains(e.LastError, "gave up after 4 attempts") {
		t.Fatalf("attempts %d, error %q", e.Attempts, e.LastError)
	}
}

func TestRetryAfterIsHonoured(t *testing.T) {
	f := newFixture(t)
	// The receiver asks for 1 s; the schedule would retry after 50 ms.
	rc := newReceiver(t, func(n int, w http.ResponseWriter, _ *http.Request) int {
		if n == 1 {
			w.Header().Set("Retry-After", "1")
			return http.StatusTooManyRequests
		}
		return 200
	})
	rc.setSecrets(f.secret("payments"))
	f.start()
	f.finish("payments", webhookCfg(rc.srv.URL), false)
	f.w.Wake()
	id := f.entries("payments")[0].ID
	f.waitState("payments", id, db.DeliveryDelivered)
	got := rc.deliveries()
	if gap := got[1].at.Sub(got[0].at); gap < 950*time.Millisecond {
		t.Fatalf("retried after %s despite Retry-After: 1", gap)
	}
}

func TestDeliveredAfterRestartWithSameID(t *testing.T) {
	f := newFixture(t)
	rc := newReceiver(t, nil)
	rc.setSecrets(f.secret("payments"))
	// Completion writes the outbox; the "server" dies before any worker ran.
	f.finish("payments", webhookCfg(rc.srv.URL), false)
	id := f.entries("payments")[0].ID
	// A second delivery was claimed (in flight) when the server died.
	f.finish("payments", webhookCfg(rc.srv.URL), false)
	claimed, err := f.store.ClaimDueDeliveries(context.Background(), time.Now(), time.Hour, 1)
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %v %v", claimed, err)
	}
	if err := f.store.Close(); err != nil {
		t.Fatal(err)
	}
	if len(rc.deliveries()) != 0 {
		t.Fatal("delivered before the restart")
	}
	f.store = openStore(t, f.path)
	f.start()
	waitFor(t, "2 deliveries after restart", func() bool { return len(rc.deliveries()) == 2 })
	ids := map[string]bool{}
	for _, d := range rc.deliveries() {
		ids[d.id] = true
	}
	if !ids[id] || !ids[claimed[0].ID] {
		t.Fatalf("delivered ids %v, want %s and %s", ids, id, claimed[0].ID)
	}
}

func TestGoneDisablesEndpoint(t *testing.T) {
	f := newFixture(t)
	rc := newReceiver(t, func(n int, _ http.ResponseWriter, _ *http.Request) int {
		if n == 1 {
			return http.StatusGone
		}
		return 200
	})
	rc.setSecrets(f.secret("payments"))
	f.start()
	f.finish("payments", webhookCfg(rc.srv.URL+"/a"), false)
	f.w.Wake()
	first := f.entries("payments")[0].ID
	f.waitState("payments", first, db.DeliveryDisabled)
	// A later delivery to the same URL is not attempted.
	f.finish("payments", webhookCfg(rc.srv.URL+"/a"), false)
	f.w.Wake()
	second := f.entries("payments")[0].ID
	e := f.waitState("payments", second, db.DeliveryDisabled)
	if e.Attempts != 0 || !strings.Contains(e.LastError, "410") || len(rc.deliveries()) != 1 {
		t.Fatalf("second: %+v, %d requests", e, len(rc.deliveries()))
	}
	// Another URL is unaffected.
	f.finish("payments", webhookCfg(rc.srv.URL+"/b"), false)
	f.w.Wake()
	f.waitState("payments", f.entries("payments")[0].ID, db.DeliveryDelivered)
	// Redelivery (same webhook-id) re-enables the endpoint.
	if _, err := f.w.Redeliver(context.Background(), "search", second); db.ErrorCode(err) != db.ENOTFOUND {
		t.Fatalf("another team's redeliver: %v, want not_found", err)
	}
	if _, err := f.w.Redeliver(context.Background(), "payments", second); err != nil {
		t.Fatal(err)
	}
	f.waitState("payments", second, db.DeliveryDelivered)
	got := rc.deliveries()
	if got[len(got)-1].id != second {
		t.Fatalf("redelivered with id %s, want %s", got[len(got)-1].id, second)
	}
}

func TestRedirectIsNotFollowed(t *testing.T) {
	f := newFixture(t)
	rc := newReceiver(t, func(n int, _ http.ResponseWriter, r *http.Request) int {
		if r.URL.Path == "/elsewhere" {
			t.Errorf("the redirect was followed")
			return 200
		}
		return http.StatusFound
	})
	rc.setSecrets(f.secret("payments"))
	f.start()
	f.finish("payments", webhookCfg(rc.srv.URL+"/hook"), false)
	f.w.Wake()
	id := f.entries("payments")[0].ID
	waitFor(t, "a failed attempt", func() bool {
		e, _ := f.store.GetDelivery(context.Background(), "payments", id)
		return e != nil && e.Attempts >= 1 && e.LeaseUntil == nil
	})
	e, _ := f.store.GetDelivery(context.Background(), "payments", id)
	if e.State == db.DeliveryDelivered || e.LastStatus != http.StatusFound || !strings.Contains(e.LastError, "redirects are not followed") {
		t.Fatalf("entry after 302: %+v", e)
	}
}

func TestRotationOverlapSendsBothSignatures(t *testing.T) {
	f := newFixture(t)
	rc := newReceiver(t, nil)
	old := f.secret("payments")
	rot, err := f.store.CreateWebhookSecret(context.Background(), "payments", 24*time.Hour, false)
	if err != nil {
		t.Fatal(err)
	}
	if rot.PreviousExpiresAt == nil || rot.Secret == old || !strings.HasPrefix(rot.Secret, "whsec_") {
		t.Fatalf("rotation: %+v", rot)
	}
	rc.setSecrets(old, rot.Secret) // each alone must verify the delivery
	f.start()
	f.finish("payments", webhookCfg(rc.srv.URL), false)
	f.w.Wake()
	waitFor(t, "a delivery", func() bool { return len(rc.deliveries()) == 1 })
	if sigs := strings.Split(rc.deliveries()[0].sig, " "); len(sigs) != 2 || !strings.HasPrefix(sigs[0], "v1,") || !strings.HasPrefix(sigs[1], "v1,") {
		t.Fatalf("webhook-signature %q, want two v1 signatures", rc.deliveries()[0].sig)
	}
	// A signature from an unrelated secret does not verify (the check can fail).
	wh, _ := standardwebhooks.NewWebhook(f.secretOf(t))
	d := rc.deliveries()[0]
	h := http.Header{}
	h.Set("webhook-id", d.id)
	h.Set("webhook-timestamp", fmt.Sprint(time.Now().Unix()))
	h.Set("webhook-signature", d.sig)
	if err := wh.Verify(d.body, h); !errors.Is(err, standardwebhooks.ErrNoMatchingSignature) {
		t.Fatalf("unrelated secret verified: %v", err)
	}
}

func (f *fixture) secretOf(t *testing.T) string {
	s, err := f.store.CreateWebhookSecret(context.Background(), "search", 0, false)
	if err != nil {
		t.Fatal(err)
	}
	return s.Secret
}

func TestWaitingForSecretThenDelivered(t *testing.T) {
	f := newFixture(t)
	rc := newReceiver(t, nil)
	f.start()
	f.finish("payments", webhookCfg(rc.srv.URL), false)
	f.w.Wake()
	id := f.entries("payments")[0].ID
	e := f.waitState("payments", id, db.DeliveryWaitingSecret)
	if e.Attempts != 0 || !strings.Contains(e.LastError, "no webhook signing secret") || len(rc.deliveries()) != 0 {
		t.Fatalf("held entry: %+v", e)
	}
	s, err := f.w.CreateSecret(context.Background(), "payments", DefaultOverlap, true)
	if err != nil {
		t.Fatal(err)
	}
	rc.setSecrets(s.Secret)
	f.waitState("payments", id, db.DeliveryDelivered)
	if _, err := f.w.CreateSecret(context.Background(), "payments", 0, true); db.ErrorCode(err) != db.ECONFLICT {
		t.Fatalf("create-only over an existing secret: %v", err)
	}
}

func TestRefusedURLFailsWithoutTraffic(t *testing.T) {
	f := newFixture(t)
	rc := newReceiver(t, nil)
	f.secret("payments")
	f.start(func(c *Config) { c.Allow = Allowlist{} }) // no allowlist
	f.finish("payments", webhookCfg(strings.Replace(rc.srv.URL, "http://", "https://", 1)), false)
	f.w.Wake()
	e := f.waitState("payments", f.entries("payments")[0].ID, db.DeliveryFailed)
	if !strings.Contains(e.LastError, "refused by the outbound guard") || len(rc.deliveries()) != 0 {
		t.Fatalf("entry: %+v, %d requests", e, len(rc.deliveries()))
	}
}

func TestPing(t *testing.T) {
	f := newFixture(t)
	rc := newReceiver(t, nil)
	rc.setSecrets(f.secret("payments"))
	teamCfg := map[string]map[string]any{"payments": webhookCfg(rc.srv.URL + "/x?k=v"), "search": {}}
	f.start(func(c *Config) {
		c.TeamConfig = func(_ context.Context, team string) (map[string]any, error) { return teamCfg[team], nil }
	})
	res, err := f.w.Ping(context.Background(), "payments")
	if err != nil || !res.Delivered || res.StatusCode != 200 || strings.Contains(res.URL, "k=v") {
		t.Fatalf("ping: %+v %v", res, err)
	}
	var body map[string]any
	json.Unmarshal(rc.deliveries()[0].body, &body)
	if body["event"] != "ping" || rc.deliveries()[0].id != res.WebhookID {
		t.Fatalf("ping body %v", body)
	}
	if _, err := f.w.Ping(context.Background(), "search"); db.ErrorCode(err) != db.EINVALID {
		t.Fatalf("ping without URL: %v", err)
	}
}

func TestOutboxEntries(t *testing.T) {
	now := time.Now().UTC()
	inv := &db.Investigation{ID: "inv_1", Team: "t", Agent: "planner", Status: db.StatusCompleted, CompletedAt: &now,
		Result: &finding.Result{Summary: "s"}}
	full := map[string]any{
		"webhooks":          map[string]any{"investigation_complete": "https://h.example/x"},
		"slack_channel":     "#incidents",
		"tokens_vault_path": map[string]any{"slack": "vault:secret/slack#bot_token"},
	}
	es := Outbox(inv, full, "https://rootcause.example")
	if len(es) != 2 || es[0].Kind != db.OutboxWebhook || es[1].Kind != db.OutboxSlack || es[0].ID == es[1].ID || !strings.HasPrefix(es[0].ID, "msg_") {
		t.Fatalf("entries: %+v", es)
	}
	var p Payload
	json.Unmarshal(es[0].Payload, &p)
	if p.Link != "https://rootcause.example/api/v1/agents/status/inv_1" {
		t.Errorf("link %q", p.Link)
	}
	if strings.Contains(string(es[1].Payload), "xoxb") {
		t.Error("token value in the outbox")
	}
	noRef := map[string]any{"slack_channel": "#c", "tokens_vault_path": map[string]any{"slack": "xoxb-plain-value"}}
	if len(Outbox(inv, noRef, "")) != 0 {
		t.Error("a plain (non-reference) slack token made an entry")
	}
	cancelled := *inv
	cancelled.Status = db.StatusCancelled
	if len(Outbox(&cancelled, full, "")) != 0 {
		t.Error("cancelled investigation delivered")
	}
}
