package analyst

import (
	"fmt"
	"regexp"
)

// A message or request bigger than a size limit on its way: the client or
// the server refuses it whole, so every operation that sends one fails
// while smaller ones pass. A release that enlarged a payload (an event
// that now embeds a snapshot, a batch grown) meets a limit set long ago:
// Kafka's producer max.request.size and the broker's message.max.bytes
// (RecordTooLargeException, MESSAGE_TOO_LARGE), gRPC's maximum message
// size ("received message larger than max (N vs. M)"), an HTTP body limit
// (413 Request Entity Too Large, nginx's client_max_body_size), SQS's
// 256 KiB, RabbitMQ's max_message_size, NATS' max_payload, MySQL's
// max_allowed_packet. The error class explains the others it causes (the
// requests that sent the payload fail with 500, work queued behind it
// backs up).

// KindPayloadTooLarge is messages or requests refused for their size.
const KindPayloadTooLarge Kind = "payload_too_large"

var (
	payloadTooLargeRE = regexp.MustCompile(`(?i)RecordTooLargeException|RecordBatchTooLargeException|\bMESSAGE_TOO_LARGE\b|when serialized which is larger than|larger than the maximum request size|message (?:is )?larger than max|received message larger than max|trying to send message larger than max|grpc: message too large|Request Entity Too Large|\b413 Payload Too Large|client intended to send too large body|request body too large|Message must be shorter than \d+ bytes|MessageTooLong|message size \d+ (?:is )?larger than configured max size|maximum payload exceeded|Packet for query is too large|bigger than 'max_allowed_packet'|RequestEntityTooLargeException|Item size has exceeded the maximum allowed size|string exceeds maximum allowed size`)
	// The size and the limit a refusal states, in the orders they come
	// in: "is 1880291 bytes ... larger than 1048576", "larger than max
	// (5242880 vs. 4194304)".
	payloadSizesRE = []*regexp.Regexp{
		regexp.MustCompile(`(?i)(?:message|record|request|packet|body|payload)\D{0,20}?(\d{3,}) bytes\b.*?(?:larger|bigger|greater) than (?:the )?(?:maximum |max |configured max(?:imum)? )?(?:size )?(?:of )?(\d{3,})`),
		regexp.MustCompile(`(?i)larger than max \((\d+) vs\. (\d+)\)`),
		regexp.MustCompile(`(?i)message size (\d+) (?:is )?larger than configured max size (\d+)`),
	}
	// The setting that holds the limit.
	payloadSettingRE = regexp.MustCompile(`(?i)max\.request\.size|message\.max\.bytes|max\.message\.bytes|max_allowed_packet|client_max_body_size|max_message_size|max_payload|MaxRecvMsgSize|MaxCallRecvMsgSize|max_receive_message_length|proto-max-bulk-len|http\.max_content_length`)
)

var payloadTooLarge = &mechanism{
	kind:       KindPayloadTooLarge,
	class:      classCause,
	label:      "messages too large for a size limit (payload refused)",
	lines:      payloadTooLargeRE,
	lineWeight: 0.92,
	// A release that changed what is sent, or a change of the limit.
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return c.Kind == KindDeploy || matchLine(payloadSettingRE, changeText(c))
	},
	describe: func(h *Hypothesis, sc Scope) string {
		l := h.fact("line")
		for _, f := range h.Primary {
			if matchLine(payloadTooLargeRE, f.fact("line")) {
				l = f.fact("line")
				break
			}
		}
		d := fmt.Sprintf("%s sends messages larger than a size limit on their way, so each one is refused whole and the operation that sends it fails", h.Subject)
		if size, limit := payloadSizes(l); size != "" {
			d += fmt.Sprintf(": a message of %s bytes against a limit of %s bytes", size, limit)
		}
		if s := findString(payloadSettingRE, l); s != "" {
			d += " (" + s + ")"
		}
		if l != "" {
			d += " — " + quote(ReadableLine(l), 220)
		}
		d += ". This error class explains the others it causes: the requests that publish or send such a payload fail, and the work queued behind them backs up"
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.rollback()
		l := h.fact("line")
		setting := orWord(findString(payloadSettingRE, l), "the size limit")
		r.high("Shrink what %s sends back under the limit (send a reference instead of the embedded data, compress, split), or raise %s on every hop together (the producer, the broker or topic, the consumers' fetch size)", h.Subject, setting)
		r.med("Replay the messages or requests refused since the onset once they fit (outbox, dead-letter queue)")
		r.low("Alert on the size of the largest message sent against the limit, and test payload sizes in CI")
	},
}

// payloadSizes is the size and the limit a refusal states ("" when it
// states none).
func payloadSizes(line string) (size, limit string) {
	for _, re := range payloadSizesRE {
		if m := findSubmatch(re, line); m != nil {
			return m[1], m[2]
		}
	}
	return "", ""
}
