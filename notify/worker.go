package notify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/rootcause/rootcause/db"
	"github.com/rootcause/rootcause/secretref"
)

// DefaultSchedule is the retry schedule: the delay before the retry after
// the n-th failed attempt (the last step repeats). Each delay is drawn
// uniformly ("full jitter") between min(step, 1s) and the step, and a
// larger Retry-After from the receiver wins. Retries stop when the retry
// window (DefaultRetryWindow, 26 h) ends, with one last attempt at its end,
// so a delivery is retried for at least 24 hours.
var DefaultSchedule = []time.Duration{
	5 * time.Second, 30 * time.Second, 2 * time.Minute, 5 * time.Minute, 15 * time.Minute,
	30 * time.Minute, time.Hour, 2 * time.Hour, 4 * time.Hour, 8 * time.Hour,
}

// Defaults of Config.
const (
	DefaultRetryWindow = 26 * time.Hour
	DefaultTimeout     = 10 * time.Second
	MaxTimeout         = 15 * time.Second
	DefaultWorkers     = 4
	DefaultPoll        = time.Second
	DefaultRetention   = 30 * 24 * time.Hour
	DefaultOverlap     = 24 * time.Hour
	MaxOverlap         = 30 * 24 * time.Hour
)

// Config configures a Worker.
type Config struct {
	Store db.OutboxService // required
	// Allow is the SSRF allowlist (server setting webhook.allow).
	Allow Allowlist
	// SlackAPIURL is the Slack Web API base (server setting slack.api_url);
	// empty means DefaultSlackAPIURL.
	SlackAPIURL string
	// Resolver resolves Slack bot token references at send time, within
	// the team's Scope.
	Resolver secretref.Resolver
	// Scope returns a team's secret scope (secretref.ScopeFor over its
	// config lineage). A Slack bot token reference is checked against it
	// again at send time, as it was when saved: the scope may have shrunk
	// since. Without Scope, or when it cannot be read, no Slack message is
	// sent.
	Scope func(ctx context.Context, team string) (*secretref.Scope, error)
	// TeamConfig returns a team's effective config, for the test ping.
	TeamConfig func(ctx context.Context, team string) (map[string]any, error)
	Workers    int           // concurrent deliveries, default 4
	Timeout    time.Duration // per request, default 10s, at most 15s
	// Schedule and RetryWindow define retries (DefaultSchedule, 26h).
	Schedule    []time.Duration
	RetryWindow time.Duration
	// Poll is the longest the worker sleeps between looks at the outbox
	// (it is also woken by Wake); default 1s.
	Poll time.Duration
	// Retention deletes finished deliveries (and their logs) older than
	// this, checked hourly; default 30 days, negative keeps everything.
	Retention time.Duration
	// Rand returns a number in [0, 1) for jitter; nil is math/rand.
	Rand      func() float64
	Now       func() time.Time
	Logger    *slog.Logger
	UserAgent string // default "rootcause-webhooks"
	// OnDelivery, when set, is told of every handled entry (for metrics):
	// its kind, its new state and the HTTP status (0 without an answer).
	OnDelivery func(kind, state string, status int)
}

// Worker delivers outbox entries. Start it once; Wake it when an
// investigation finishes (agent.RuntimeConfig.OnFinal).
type Worker struct {
	cfg   Config
	hooks *http.Client // guarded, for webhook URLs chosen by teams
	slack *http.Client // for the Slack API URL chosen by the server admin
	log   *slog.Logger

	wake     chan struct{}
	stop     chan struct{}
	done     chan struct{}
	inflight sync.WaitGroup
	sem      chan struct{}
	baseCtx  context.Context
	cancel   context.CancelFunc
	started  bool
	stopOnce sync.Once
}

// NewWorker returns a worker; it panics without a Store (a wiring bug).
func NewWorker(cfg Config) *Worker {
	if cfg.Store == nil {
		panic("notify: Config.Store is required")
	}
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultWorkers
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Timeout > MaxTimeout {
		cfg.Timeout = MaxTimeout
	}
	if len(cfg.Schedule) == 0 {
		cfg.Schedule = DefaultSchedule
	}
	if cfg.RetryWindow <= 0 {
		cfg.RetryWindow = DefaultRetryWindow
	}
	if cfg.Poll <= 0 {
		cfg.Poll = DefaultPoll
	}
	if cfg.Retention == 0 {
		cfg.Retention = DefaultRetention
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Float64
	}
	if cfg.Now == nil {
		cfg.Now = func() time.Time { return time.Now().UTC() }
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.SlackAPIURL == "" {
		cfg.SlackAPIURL = DefaultSlackAPIURL
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "rootcause-webhooks"
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Worker{
		cfg:   cfg,
		hooks: NewClient(cfg.Allow, cfg.Timeout),
		slack: &http.Client{
			Timeout: cfg.Timeout,
			Transport: &http.Transport{
				Proxy: http.ProxyFromEnvironment, MaxIdleConns: 8, IdleConnTimeout: 90 * time.Second,
				TLSHandshakeTimeout: 10 * time.Second, ForceAttemptHTTP2: true,
			},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		log:     cfg.Logger,
		wake:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
		sem:     make(chan struct{}, cfg.Workers),
		baseCtx: ctx,
		cancel:  cancel,
	}
}

func (w *Worker) now() time.Time { return w.cfg.Now() }

// Start releases leases left by a previous process (its deliveries are
// retried with the same webhook-id) and starts delivering.
func (w *Worker) Start(ctx context.Context) error {
	if w.started {
		return errors.New("notify: worker already started")
	}
	n, err := w.cfg.Store.ReleaseLeases(ctx)
	if err != nil {
		return fmt.Errorf("recovering deliveries: %w", err)
	}
	w.started = true
	if n > 0 {
		w.log.Info("deliveries interrupted by a restart are due again", "count", n)
	}
	go w.loop()
	return nil
}

// Wake makes the worker look at the outbox now.
func (w *Worker) Wake() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// OnFinal is agent.RuntimeConfig.OnFinal: it wakes the worker.
func (w *Worker) OnFinal(*db.Investigation) { w.Wake() }

// Stop stops claiming and waits for deliveries in flight until ctx ends;
// then they are cancelled (and retried after the next start).
func (w *Worker) Stop(ctx context.Context) {
	w.stopOnce.Do(func() {
		close(w.stop)
		if w.started {
			<-w.done
		}
		finished := make(chan struct{})
		go func() { w.inflight.Wait(); close(finished) }()
		select {
		case <-finished:
		case <-ctx.Done():
			w.cancel()
			<-finished
		}
		w.cancel()
	})
}

func (w *Worker) loop() {
	defer close(w.done)
	lastPrune := time.Time{}
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-w.stop:
			return
		default:
		}
		if w.cfg.Retention > 0 && time.Since(lastPrune) > time.Hour {
			lastPrune = time.Now()
			if n, err := w.cfg.Store.DeleteDeliveriesBefore(w.baseCtx, w.now().Add(-w.cfg.Retention)); err != nil {
				w.log.Warn("deleting old deliveries", "err", err)
			} else if n > 0 {
				w.log.Info("deleted old deliveries", "count", n)
			}
		}
		w.dispatch()
		sleep := w.cfg.Poll
		if due, ok, err := w.cfg.Store.NextDeliveryDue(w.baseCtx); err == nil && ok {
			if d := due.Sub(w.now()); d < sleep {
				sleep = max(d, 5*time.Millisecond)
			}
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(sleep)
		select {
		case <-w.stop:
			return
		case <-w.wake:
		case <-timer.C:
		}
	}
}

// dispatch claims as many due entries as there are free delivery slots and
// starts them.
func (w *Worker) dispatch() {
	free := cap(w.sem) - len(w.sem)
	if free <= 0 {
		return
	}
	lease := w.cfg.Timeout + time.Minute
	entries, err := w.cfg.Store.ClaimDueDeliveries(w.baseCtx, w.now(), lease, free)
	if err != nil {
		if !errors.Is(err, context.Canceled) {
			w.log.Error("claiming deliveries", "err", err)
		}
		return
	}
	for _, e := range entries {
		w.sem <- struct{}{}
		w.inflight.Add(1)
		go func() {
			defer func() {
				<-w.sem
				w.inflight.Done()
				w.Wake() // a slot is free
			}()
			w.handle(e)
		}()
	}
}

// result is the outcome of one send.
type result struct {
	ok         bool
	hold       bool // no signing secret: wait for one
	disable    bool // 410 Gone
	permanent  bool // do not retry
	status     int
	latency    time.Duration
	retryAfter time.Duration
	err        error
}

// handle delivers one claimed entry and records the outcome.
func (w *Worker) handle(e *db.OutboxEntry) {
	ctx, cancel := context.WithTimeout(w.baseCtx, w.cfg.Timeout+5*time.Second)
	defer cancel()
	start := w.now()
	var r result
	switch e.Kind {
	case db.OutboxWebhook:
		r = w.sendWebhook(ctx, e)
	case db.OutboxSlack:
		r = w.sendSlack(ctx, e)
	default:
		r = result{permanent: true, err: fmt.Errorf("unknown delivery kind %q", e.Kind)}
	}
	if w.baseCtx.Err() != nil {
		return // shutting down: the lease is released at the next start
	}
	out := w.outcome(e, start, r)
	if _, err := w.cfg.Store.RecordDelivery(context.WithoutCancel(ctx), e.ID, out); err != nil {
		w.log.Error("recording a delivery", "delivery_id", e.ID, "err", err)
		return
	}
	log := w.log.With("delivery_id", e.ID, "kind", e.Kind, "team", e.Team, "investigation_id", e.InvestigationID, "state", out.State, "status", r.status)
	switch out.State {
	case db.DeliveryDelivered:
		log.Info("delivered")
	case db.DeliveryPending:
		log.Warn("delivery failed; will retry", "err", out.LastError, "next_attempt_at", out.NextAttemptAt)
	default:
		log.Warn("delivery stopped", "err", out.LastError)
	}
	if w.cfg.OnDelivery != nil {
		w.cfg.OnDelivery(e.Kind, out.State, r.status)
	}
}

// outcome turns a send result into the entry's next state.
func (w *Worker) outcome(e *db.OutboxEntry, start time.Time, r result) db.DeliveryOutcome {
	now := w.now()
	var out db.DeliveryOutcome
	if r.err != nil {
		out.LastError = r.err.Error()
	}
	out.LastStatus = r.status
	if r.hold {
		out.State = db.DeliveryWaitingSecret
		return out
	}
	att := &db.DeliveryAttempt{Time: start, StatusCode: r.status, LatencyMS: r.latency.Milliseconds(), Error: out.LastError}
	out.Attempt = att
	switch {
	case r.ok:
		out.State = db.DeliveryDelivered
		out.LastError = ""
	case r.disable:
		out.State = db.DeliveryDisabled
		out.DisableTarget = true
	case r.permanent:
		out.State = db.DeliveryFailed
	default:
		next, ok := w.nextAttempt(e, now, r.retryAfter)
		if !ok {
			out.State = db.DeliveryFailed
			out.LastError = fmt.Sprintf("gave up after %d attempts over %s: %s", e.WindowAttempts+1, w.cfg.RetryWindow, out.LastError)
			att.Error = out.LastError
		} else {
			out.State = db.DeliveryPending
			out.NextAttemptAt = next
		}
	}
	return out
}

// nextAttempt returns when to retry after a failed attempt of e at now, or
// false when its retry window is over.
func (w *Worker) nextAttempt(e *db.OutboxEntry, now time.Time, retryAfter time.Duration) (time.Time, bool) {
	i := e.WindowAttempts // attempts in the window before this one
	step := w.cfg.Schedule[min(i, len(w.cfg.Schedule)-1)]
	floor := min(step, time.Second)
	delay := floor + time.Duration(w.cfg.Rand()*float64(step-floor))
	if retryAfter > delay {
		delay = retryAfter
	}
	next := now.Add(delay)
	windowStart := e.WindowStart
	if windowStart.IsZero() {
		windowStart = e.CreatedAt
	}
	deadline := windowStart.Add(w.cfg.RetryWindow)
	if next.After(deadline) {
		if !now.Before(deadline) {
			return time.Time{}, false
		}
		next = deadline // one last attempt at the end of the window
	}
	return next, true
}

// sendWebhook signs and posts a webhook entry.
func (w *Worker) sendWebhook(ctx context.Context, e *db.OutboxEntry) result {
	secrets, err := w.cfg.Store.WebhookSigningSecrets(ctx, e.Team)
	if db.ErrorCode(err) == db.ENOTFOUND {
		return result{hold: true, err: fmt.Errorf("team %s has no webhook signing secret; an admin creates one with `rootcause webhook secret create --team %s` (or POST /api/v1/admin/teams/%s/webhook-secret) and held deliveries are sent then", e.Team, e.Team, e.Team)}
	}
	if err != nil {
		return result{err: fmt.Errorf("reading the signing secret: %v", err)}
	}
	return w.post(ctx, e.Target, e.ID, e.Payload, secrets)
}

// post sends one signed webhook request and classifies the answer.
func (w *Worker) post(ctx context.Context, target, id string, body []byte, secrets []string) result {
	if err := ValidateURL(target, w.cfg.Allow); err != nil {
		return result{permanent: true, err: fmt.Errorf("webhook URL refused: %v", err)}
	}
	ts := w.now()
	sig, err := Sign(id, ts, body, secrets)
	if err != nil {
		return result{err: err}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return result{permanent: true, err: fmt.Errorf("building the request: %v", err)}
	}
	SetHeaders(req.Header, id, ts, sig)
	req.Header.Set("User-Agent", w.cfg.UserAgent)
	start := time.Now()
	resp, err := w.hooks.Do(req)
	lat := time.Since(start)
	if err != nil {
		return result{latency: lat, permanent: IsRefused(err), err: scrubErr(err)}
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	r := result{status: resp.StatusCode, latency: lat}
	switch {
	case resp.StatusCode/100 == 2:
		r.ok = true
	case resp.StatusCode == http.StatusGone:
		r.disable = true
		r.err = errors.New("the receiver answered 410 Gone: the endpoint is disabled for this team until the URL changes or a delivery to it is redelivered")
	case resp.StatusCode/100 == 3:
		r.err = fmt.Errorf("the receiver answered %s; redirects are not followed (Location %s)", resp.Status, RedactURL(resp.Header.Get("Location")))
	default:
		r.retryAfter = retryAfter(resp.Header.Get("Retry-After"), w.now())
		r.err = fmt.Errorf("the receiver answered %s", resp.Status)
	}
	return r
}

// scrubErr drops the URL (which may carry a token in its query) from a
// client error.
func scrubErr(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		if errors.Is(ue.Err, context.DeadlineExceeded) || ue.Timeout() {
			return fmt.Errorf("%s: timed out", ue.Op)
		}
		return fmt.Errorf("%s: %w", ue.Op, ue.Err)
	}
	return err
}

// retryAfter parses a Retry-After header (seconds or an HTTP date); 0 when
// absent or invalid. It is capped at 24 hours.
func retryAfter(h string, now time.Time) time.Duration {
	if h == "" {
		return 0
	}
	var d time.Duration
	if n, err := strconv.Atoi(h); err == nil {
		d = time.Duration(n) * time.Second
	} else if t, err := http.ParseTime(h); err == nil {
		d = t.Sub(now)
	}
	if d < 0 {
		return 0
	}
	return min(d, 24*time.Hour)
}
