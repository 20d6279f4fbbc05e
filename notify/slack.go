package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/rootcause/rootcause/db"
	"github.com/rootcause/rootcause/secretref"
)

// DefaultSlackAPIURL is the Slack Web API base; the server setting
// slack.api_url replaces it (a Slack-compatible server in an air-gapped
// site).
const DefaultSlackAPIURL = "https://slack.com/api"

// slackEnvelope is a Slack entry's frozen payload: the message and the
// reference (never the value) of the bot token, resolved at send time.
type slackEnvelope struct {
	TokenRef string       `json:"token_ref"`
	Message  SlackMessage `json:"message"`
}

// SlackMessage is the chat.postMessage body.
type SlackMessage struct {
	Channel     string           `json:"channel"`
	Text        string           `json:"text"`
	Blocks      []map[string]any `json:"blocks,omitempty"`
	UnfurlLinks bool             `json:"unfurl_links"`
	UnfurlMedia bool             `json:"unfurl_media"`
}

var subteamID = regexp.MustCompile(`^S[A-Z0-9]{6,}$`)

// Mention renders slack_group_to_ping: a user-group id (S0123ABCD) as
// <!subteam^ID>, here/channel/everyone as <!here> etc., anything else as
// @name (which Slack-compatible servers such as Mattermost resolve).
func Mention(group string) string {
	g := strings.TrimSpace(group)
	switch {
	case g == "":
		return ""
	case strings.HasPrefix(g, "<!") && strings.HasSuffix(g, ">"):
		return g
	case subteamID.MatchString(g):
		return "<!subteam^" + g + ">"
	}
	g = strings.TrimPrefix(g, "@")
	switch g {
	case "here", "channel", "everyone":
		return "<!" + g + ">"
	}
	return "@" + g
}

// Slack's section text limit is 3000 characters; we stay well below it.
const slackSectionMax = 2800

// SlackMessageFor renders the concise notification of a payload: status,
// summary, root cause with confidence, the top three recommendations and
// the link path.
func SlackMessageFor(p Payload, channel, group string) SlackMessage {
	mention := Mention(group)
	head := fmt.Sprintf("Investigation %s %s (team %s, agent %s)", p.InvestigationID, p.Status, p.Team, p.Agent)
	text := head + ": " + truncate(p.Summary, 500)
	if mention != "" {
		text = mention + " " + text
	}
	var b strings.Builder
	if mention != "" {
		b.WriteString(mention + " ")
	}
	status := "completed"
	if p.Status == db.StatusFailed {
		status = "failed"
	}
	fmt.Fprintf(&b, "*Investigation %s* — team `%s`, agent `%s`\n%s", status, p.Team, p.Agent, truncate(p.Summary, 800))
	blocks := []map[string]any{section(b.String())}
	if p.RootCause != nil && p.RootCause.Description != "" {
		blocks = append(blocks, section(fmt.Sprintf("*Root cause* (%s confidence)\n%s", percent(p.RootCause.Confidence), truncate(p.RootCause.Description, 1200))))
	}
	if p.Error != nil {
		blocks = append(blocks, section(fmt.Sprintf("*Error* `%s`\n%s", p.Error.Code, truncate(p.Error.Message, 800))))
	}
	if len(p.Recommendations) > 0 {
		var r strings.Builder
		r.WriteString("*Top recommendations*")
		for i, rec := range p.Recommendations {
			if i == 3 {
				break
			}
			fmt.Fprintf(&r, "\n%d. [%s] %s", i+1, rec.Priority, truncate(rec.Action, 400))
		}
		blocks = append(blocks, section(r.String()))
	}
	blocks = append(blocks, map[string]any{
		"type":     "context",
		"elements": []map[string]any{{"type": "mrkdwn", "text": "Details: `" + p.Link + "`"}},
	})
	return SlackMessage{Channel: channel, Text: truncate(text, 3000), Blocks: blocks}
}

func section(text string) map[string]any {
	return map[string]any{"type": "section", "text": map[string]any{"type": "mrkdwn", "text": truncate(text, slackSectionMax)}}
}

// Slack errors (the "error" of an ok:false answer) worth retrying; every
// other one (invalid_auth, channel_not_found, not_in_channel, ...) is
// final.
var slackRetryable = map[string]bool{
	"ratelimited":         true,
	"rate_limited":        true,
	"internal_error":      true,
	"fatal_error":         true,
	"service_unavailable": true,
	"request_timeout":     true,
}

// slackToken resolves a team's Slack bot token reference within the
// team's secret scope, failing closed: no scope, an unreadable one or a
// reference outside it sends nothing. The Slack API's address is the
// server admin's, so references inherited from admin levels resolve as
// they are (secretref.Scope.Resolver).
func (w *Worker) slackToken(ctx context.Context, team, ref string) (string, result) {
	if w.cfg.Scope == nil {
		return "", result{permanent: true, err: fmt.Errorf("no secret scope is configured to check the Slack bot token against: not sent")}
	}
	sc, err := w.cfg.Scope(ctx, team)
	if err == nil && sc == nil {
		return "", result{permanent: true, err: fmt.Errorf("reading the secret scope of team %s: none returned; the Slack message is not sent", team)}
	}
	if err != nil {
		// A team that no longer exists or a grant that cannot be read
		// (not_found, invalid) will not mend by retrying; a store error may.
		permanent := db.ErrorCode(err) == db.ENOTFOUND || db.ErrorCode(err) == db.EINVALID
		return "", result{permanent: permanent, err: fmt.Errorf("reading the secret scope of team %s: %v; the Slack message is not sent", team, err)}
	}
	token, err := sc.Resolver(w.cfg.Resolver, false).Resolve(ctx, ref)
	if errors.Is(err, secretref.ErrOutOfScope) {
		return "", result{permanent: true, err: fmt.Errorf("the Slack bot token (tokens_vault_path.slack) is outside the secret scopes granted to team %s: not sent", team)}
	}
	if err != nil {
		return "", result{err: fmt.Errorf("reading the Slack bot token (tokens_vault_path.slack): %v", err)}
	}
	return token, result{}
}

// sendSlack posts a Slack entry through chat.postMessage.
func (w *Worker) sendSlack(ctx context.Context, e *db.OutboxEntry) result {
	var env slackEnvelope
	if err := json.Unmarshal(e.Payload, &env); err != nil {
		return result{permanent: true, err: fmt.Errorf("the stored Slack message is unreadable: %v", err)}
	}
	if w.cfg.Resolver == nil {
		return result{err: fmt.Errorf("no secret resolver is configured to read the Slack bot token")}
	}
	token, refused := w.slackToken(ctx, e.Team, env.TokenRef)
	if refused.err != nil {
		return refused
	}
	body, err := json.Marshal(env.Message)
	if err != nil {
		return result{permanent: true, err: err}
	}
	endpoint := strings.TrimRight(w.cfg.SlackAPIURL, "/") + "/chat.postMessage"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return result{permanent: true, err: fmt.Errorf("building the Slack request: %v", err)}
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("User-Agent", w.cfg.UserAgent)
	start := time.Now()
	resp, err := w.slack.Do(req)
	lat := time.Since(start)
	if err != nil {
		return result{latency: lat, err: fmt.Errorf("calling %s: %v", endpoint, scrubErr(err))}
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	r := result{status: resp.StatusCode, latency: lat}
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500 {
		r.retryAfter = retryAfter(resp.Header.Get("Retry-After"), w.now())
		r.err = fmt.Errorf("the Slack API answered %s", resp.Status)
		return r
	}
	if resp.StatusCode/100 != 2 {
		r.err = fmt.Errorf("the Slack API answered %s", resp.Status)
		r.permanent = resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusNotFound
		return r
	}
	var ans struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal(raw, &ans); err != nil {
		r.err = fmt.Errorf("the Slack API answered %s with a body that is not JSON", resp.Status)
		return r
	}
	if ans.OK {
		r.ok = true
		return r
	}
	r.err = fmt.Errorf("the Slack API answered ok:false, error %q", truncate(ans.Error, 100))
	if slackRetryable[ans.Error] {
		r.retryAfter = retryAfter(resp.Header.Get("Retry-After"), w.now())
		return r
	}
	r.permanent = true
	return r
}
