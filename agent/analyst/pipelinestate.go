package analyst

import (
	"fmt"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// Logs, traces or metrics missing while the application runs normally:
// the data stops somewhere in the pipeline, and the pipeline's own agents
// say where in their own words. A log shipper or collector (Fluent Bit,
// Fluentd, Vector, Promtail, Alloy, Filebeat, the OpenTelemetry Collector)
// logs what it cannot do with what it read:
//
//   - the store refuses the documents: Elasticsearch and OpenSearch answer
//     a bulk item 400 mapper_parsing_exception (a field the index maps as
//     an object arrives as a plain value, or the other way round) or
//     illegal_argument_exception on a field's type; the source's own
//     change of its log format is the trigger;
//   - the store blocks writes: cluster_block_exception, an index made
//     read-only at the flood-stage disk watermark;
//   - the shipper cannot parse what it reads: Fluentd's "pattern not
//     matched", Fluent Bit's "cannot parse", Vector's "Failed to parse";
//     a container runtime's CRI log lines ("<time> stdout F <msg>") under
//     a Docker JSON parser after nodes moved to containerd;
//   - the exporter speaks another protocol than the port it points at
//     (OTLP/HTTP sent to the gRPC port 4317 reads back a "malformed HTTP
//     response");
//   - the destination answers 503: a provider's endpoint in an incident
//     of its own, which every shipper sees alike whatever its version;
//   - the shipper's input pauses at its memory buffer limit (Fluent Bit's
//     "paused (mem buf overlimit)", Fluentd's BufferOverflowError, a
//     collector's "sending queue is full"): what is written meanwhile is
//     rotated away unread.
//
// The answer is where the data stops: the shipper's state, the store's
// refusal, and the source that is healthy behind it.

// KindPipelineState is a telemetry pipeline's agent saying where the data
// stops.
const KindPipelineState Kind = "pipeline_state"

// pipelineRule is one state of a pipeline, by the agent's wording.
type pipelineRule struct {
	state string
	re    *regexp.Regexp
}

// pipelineRules in precedence order: the store's refusal and a protocol
// mismatch are roots; a full buffer or queue is what they, or a slow
// destination, leave behind.
var pipelineRules = []pipelineRule{
	{"mapping", regexp.MustCompile(`(?i)mapper_parsing_exception|document_parsing_exception|strict_dynamic_mapping_exception|illegal_argument_exception[^"]{0,120}(?:field|mapper|type)`)},
	{"blocked", regexp.MustCompile(`(?i)cluster_block_exception|index read-only|read_only_allow_delete|flood[- ]stage disk watermark`)},
	{"protocol", regexp.MustCompile(`(?i)malformed HTTP response|server gave HTTP response to HTTPS client|http2: frame too large|error reading server preface|first record does not look like a TLS handshake|unexpected HTTP status code received from server: 4(?:00|04|15)`)},
	{"parse", regexp.MustCompile(`(?i)pattern not matched|\[parser[^\]]*\].{0,40}cannot parse|failed to parse (?:the )?(?:log|line|record|message|json|cri)|could not parse (?:log|line)|invalid (?:log|time) format|parser_error`)},
	{"unavailable", regexp.MustCompile(`(?i)(?:status[=:]\s*"?|HTTP status |\(|code = )(?:503|502|504)\b|503 Service Unavailable|502 Bad Gateway`)},
	{"buffer", regexp.MustCompile(`(?i)paused \((?:mem|storage) buf overlimit\)|BufferOverflowError|buffer space has too many data|sending queue is full|buffer (?:is )?full|dropping (?:events|logs)? ?because (?:the )?buffer`)},
}

var (
	// pipelineAnyRE preselects lines for the rules.
	pipelineAnyRE = regexp.MustCompile(`(?i)exception|read-only|flood|malformed|HTTP response|frame too large|preface|TLS handshake|unexpected HTTP status|not matched|parse|50[234]|Unavailable|Bad Gateway|overlimit|buffer|queue is full`)
	// telemetryQuestionRE is a question about telemetry gone missing or
	// wrong rather than the application's own failure.
	telemetryQuestionRE = regexp.MustCompile(`(?i)\b(?:logs?|traces?|spans?|metrics?|dashboards?|panels?|kibana|opensearch|elasticsearch|loki|grafana|jaeger|tempo|datadog|splunk|fluent ?bit|fluentd|vector|promtail|alloy|otel|collector|telemetry|shipp\w*)\b`)
	// mappingFieldRE is the field a mapping refusal names.
	mappingFieldRE = regexp.MustCompile(`(?:object mapping for|failed to parse field|mapper for|field) \[([^\]]+)\]`)
	// k8sLogTagRE is a container log file's name in a shipper's tag or
	// path: <pod>_<namespace>_<container>-<id>.log.
	k8sLogTagRE = regexp.MustCompile(`containers[./]([a-z0-9][a-z0-9.-]*)_([a-z0-9-]+)_([a-z0-9-]+)-[0-9a-f]{8,64}\.log`)
	// recordServiceRE is the service a dumped record names.
	recordServiceRE = regexp.MustCompile(`"(?:service\.name|service_name|app|kubernetes\.container_name|container_name)"\s*(?:=>|:)\s*"([a-z0-9][a-z0-9-]*)"`)
	// criLineRE is a CRI runtime's log line (containerd, CRI-O).
	criLineRE = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d) (?:stdout|stderr) [FP] `)
	// exportURLRE is the endpoint an exporter or shipper sends to.
	exportURLRE = regexp.MustCompile(`(?i)(?:https?|grpcs?)://([a-z0-9.-]+)(?::(\d+))?`)
	// exporterNameRE names the exporter or sink a line is about.
	exporterNameRE = regexp.MustCompile(`"name":\s*"([a-z0-9_]+/?[a-z0-9_.-]*)"|component_id=([a-z0-9_.]+)|component_id="?([a-z0-9_.]+)`)
	// sendHostRE is the host a shipper's failed send names.
	sendHostRE = regexp.MustCompile(`\bhost[=:]"?([a-z0-9][a-z0-9.-]+)`)
	// memBufLimitRE is Fluent Bit's input buffer limit; a diff's new
	// side ("> ", "+") first.
	memBufLimitRE = regexp.MustCompile(`(?i)^\s*([<>+-])?\s*(?:mem_buf_limit|chunk_limit_size|total_limit_size|max_size)\s*[:= ]\s*"?([0-9]+\s*[KMG]i?B?)`)
	// shipperRotationRE is a tailed file rotated or deleted under the shipper.
	shipperRotationRE = regexp.MustCompile(`(?i)handle rotation|file has been deleted|file rotated|rotation detected|deleted file`)
	// containerLogMaxSizeRE is the kubelet's container log size limit.
	containerLogMaxSizeRE = regexp.MustCompile(`(?i)"?containerLogMaxSize"?\s*[:=]\s*"?([0-9]+\s*[KMG]i?)`)
	// statusIncidentRE is a provider's status page naming an incident.
	statusIncidentRE = regexp.MustCompile(`(?i)\b(?:identified|investigating|monitoring|degraded|partial outage|major outage|elevated (?:error|5xx))\b`)
	// kubeContextRE is the cluster a command ran against.
	kubeContextRE = regexp.MustCompile(`--(?:kube-)?context[= ]([a-z0-9._-]+)`)
)

var pipelineState = &mechanism{
	kind:   KindPipelineState,
	class:  classCause,
	label:  "the telemetry pipeline's agent says where the data stops",
	detect: detectPipelineState,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		switch h.fact("state") {
		case "mapping":
			// The source's own change of what it writes.
			return c.Subject == h.fact("source")
		case "parse":
			return matchLine(regexp.MustCompile(`(?i)containerd|runtime|dockershim|\bami\b|node ?(?:group|pool|image)|parser|format`), changeText(c))
		case "unavailable":
			return false // the provider's incident, no change of ours
		}
		return c.Subject == h.fact("shipper")
	},
	strictTriggers: true,
	refines:        []Kind{KindErrorRate, KindLogErrors, KindThrottling},
	related: func(h *Hypothesis, f *Finding) bool {
		s := h.fact("shipper")
		return s != "" && (strings.HasPrefix(f.Subject, s) || slices.ContainsFunc(f.Related, func(r string) bool { return strings.HasPrefix(r, s) }))
	},
	describe:  describePipelineState,
	recommend: recommendPipelineState,
}

// pipelineSeen is one state line read from an agent.
type pipelineSeen struct {
	state, line, from, shipper string
	at                         time.Time
}

// detectPipelineState reads the pipeline agents' lines from logs and
// transcripts and reports the state that stops the data, with its
// source, store and the shipper.
func detectPipelineState(ev *Gathered, _ []Finding) []Finding {
	var seen []pipelineSeen
	for _, l := range eventLines(ev, pipelineAnyRE) {
		shipper := pipelineAgent(l.From)
		if shipper == "" {
			continue
		}
		for _, r := range pipelineRules {
			if !matchLine(r.re, l.Text) {
				continue
			}
			s := pipelineSeen{state: r.state, line: l.Text, from: l.From, shipper: shipper, at: l.Time}
			if t := evidence.ParseLogTime(l.Text, ev.Window.End); !t.IsZero() {
				s.at = t
			}
			seen = append(seen, s)
			break
		}
	}
	if len(seen) == 0 {
		return nil
	}
	var mine []pipelineSeen
	for _, r := range pipelineRules {
		for _, s := range seen {
			if s.state == r.state {
				mine = append(mine, s)
			}
		}
		if len(mine) > 0 {
			break
		}
	}
	state := mine[0].state
	first := mine[0]
	for _, s := range mine {
		if !s.at.IsZero() && (first.at.IsZero() || s.at.Before(first.at)) {
			first = s
		}
	}
	shipper := first.shipper
	f := Finding{Kind: KindPipelineState, Subject: shipper, Time: first.at, Severity: SevCritical, Weight: 0.85, Source: SrcLogs}
	f.setFact("state", state)
	f.setFact("shipper", shipper)
	f.setFact("line", first.line)
	f.setFact("count", strconv.Itoa(len(mine)))
	f.Evidence = append(f.Evidence, fmt.Sprintf("%s logs %s: %s", shipper, plural(len(mine), "such line", "such lines"), quote(truncate(ReadableLine(first.line), 300), 310)))
	if n := pipelineCount(ev, state); n != "" {
		f.setFact("total", n)
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s counts %s of them", shipper, n))
	}
	source, store := "", ""
	switch state {
	case "mapping":
		source = pipelineSource(mine)
		store = searchStore(ev, mine)
		if m := findSubmatch(mappingFieldRE, first.line); m != nil {
			f.setFact("field", m[1])
		}
		if strings.Contains(strings.ToLower(first.line), "concrete value") {
			f.setFact("shape", "a plain (concrete) value, a string, where the index maps an object")
		} else if m := findSubmatch(regexp.MustCompile(`of type \[([a-z_]+)\]`), first.line); m != nil {
			f.setFact("shape", "a value that does not fit the field's mapped type ["+m[1]+"]")
		}
		if c := pipelineChangeOf(ev, source, first.at); c != "" {
			f.setFact("source_change", c)
			f.Evidence = append(f.Evidence, "the source changed just before: "+c)
		}
	case "blocked":
		store = searchStore(ev, mine)
	case "protocol":
		if m := findSubmatch(exportURLRE, first.line); m != nil {
			f.setFact("endpoint", strings.TrimSuffix(m[0], "/"))
			f.setFact("host", m[1])
			f.setFact("port", m[2])
		}
		if m := findSubmatch(exporterNameRE, first.line); m != nil {
			f.setFact("exporter", orWord(m[1], orWord(m[2], m[3])))
		}
		if m := findSubmatch(regexp.MustCompile(`"dropped_items":\s*(\d+)`), strings.Join(lineTexts(mine), "\n")); m != nil {
			f.setFact("dropped", m[1])
		}
	case "parse":
		for _, s := range mine {
			if matchLine(criLineRE, s.line) {
				f.setFact("cri", "yes")
				break
			}
		}
		if f.fact("cri") != "" {
			if n := runtimeNodes(ev, "containerd"); n != "" {
				f.setFact("containerd_nodes", n)
				f.Evidence = append(f.Evidence, "nodes on containerd: "+n)
			}
		}
		if p := pipelineParser(ev); p != "" {
			f.setFact("parser", p)
		}
	case "unavailable":
		if m := findSubmatch(sendHostRE, first.line); m != nil {
			f.setFact("host", m[1])
		} else if m := findSubmatch(exportURLRE, first.line); m != nil {
			f.setFact("host", m[1])
		}
		if h := f.fact("host"); publicHost(h) {
			f.setFact("external", "yes")
		}
		if m := findSubmatch(regexp.MustCompile(`\b(50[234])\b`), first.line); m != nil {
			f.setFact("status", m[1])
		}
		// Other clusters or environments seeing the same answers.
		ctx0 := kubeContext(first.from)
		for _, s := range mine {
			if c := kubeContext(s.from); c != "" && c != ctx0 {
				f.setFact("elsewhere", c)
				break
			}
		}
		if inc := providerIncident(ev); inc != "" {
			f.setFact("incident", inc)
			f.Evidence = append(f.Evidence, "the provider's status page: "+quote(truncate(inc, 240), 250))
		}
	case "buffer":
		source = pipelineSource(mine)
		for _, l := range eventLines(ev, shipperRotationRE) {
			if pipelineAgent(l.From) == "" {
				continue
			}
			f.setFact("rotation", l.Text)
			if source == "" {
				if m := findSubmatch(k8sLogTagRE, l.Text); m != nil {
					source = workloadOfPodName(m[1])
				}
			}
			break
		}
		for _, c := range ev.Commands {
			for _, l := range c.Lines {
				if m := findSubmatch(memBufLimitRE, l); m != nil {
					v := strings.ReplaceAll(m[2], " ", "")
					switch m[1] {
					case "<", "-":
						f.setFact("old_limit", v)
					case ">", "+":
						f.Facts["limit"] = v
					default:
						f.setFact("limit", v)
					}
				}
				if m := findSubmatch(containerLogMaxSizeRE, l); m != nil {
					f.setFact("log_max_size", m[1])
				}
			}
		}
		if l := f.fact("rotation"); l != "" {
			f.Evidence = append(f.Evidence, "meanwhile the tailed files rotate away: "+quote(truncate(ReadableLine(l), 240), 250))
		}
	}
	if c := pipelineChangeOf(ev, shipper, first.at); c != "" && state != "mapping" && state != "unavailable" {
		f.setFact("shipper_change", c)
	}
	f.setFact("source", source)
	f.setFact("store", store)
	// What it bears on: asked about telemetry gone missing, the pipeline
	// is where the subject's data stops; otherwise it is a lead nearby.
	telemetryAsked := matchLine(telemetryQuestionRE, ev.Scope.Message)
	var affected []string
	add := func(n string) {
		if n != "" && !slices.Contains(affected, n) {
			affected = append(affected, n)
		}
	}
	add(source)
	add(shipper)
	add(store)
	if telemetryAsked {
		for _, s := range ev.Scope.Subjects() {
			f.Related = append(f.Related, s)
		}
	} else {
		f.Weight = 0.4
	}
	for _, n := range affected {
		if n != f.Subject && !slices.Contains(f.Related, n) {
			f.Related = append(f.Related, n)
		}
	}
	// A source's documents refused name the source first.
	if state == "mapping" && source != "" {
		f.Subject = source
	}
	f.setFact("affected", strings.Join(affected, ","))
	f.Summary = fmt.Sprintf("%s: %s", shipper, pipelineStateWords[state])
	return []Finding{f}
}

var pipelineStateWords = map[string]string{
	"mapping":     "the store refuses the documents on a field's mapping",
	"blocked":     "the store blocks writes to the index",
	"protocol":    "the exporter speaks another protocol than its endpoint",
	"parse":       "the shipper's parser does not match the lines it reads",
	"unavailable": "the destination answers 503",
	"buffer":      "the shipper's buffer is at its limit",
}

// pipelineAgent names the pipeline agent a line or its command is
// about, "" when none.
func pipelineAgent(s string) string {
	l := strings.ToLower(s)
	for _, n := range []string{"fluent-bit", "fluentbit", "fluentd", "vector", "promtail", "alloy", "grafana-agent", "otel-collector", "otel-agent", "opentelemetry-collector", "filebeat", "logstash", "datadog-agent"} {
		if strings.Contains(l, n) {
			if n == "fluentbit" {
				n = "fluent-bit"
			}
			return n
		}
	}
	return ""
}

// pipelineSource is the application whose lines a state names most:
// the container log file in the shipper's tag, or the record's service.
func pipelineSource(ss []pipelineSeen) string {
	count := map[string]int{}
	for _, s := range ss {
		if m := findSubmatch(k8sLogTagRE, s.line); m != nil {
			count[workloadOfPodName(m[1])]++
		} else if m := findSubmatch(recordServiceRE, s.line); m != nil {
			count[m[1]]++
		}
	}
	best, n := "", 0
	for a, c := range count {
		if c > n || c == n && a < best {
			best, n = a, c
		}
	}
	return best
}

// searchStore names the search store that refused: OpenSearch when its
// words are in the lines or the commands, else Elasticsearch.
func searchStore(ev *Gathered, ss []pipelineSeen) string {
	for _, s := range ss {
		if strings.Contains(strings.ToLower(s.line+s.from), "opensearch") {
			return "opensearch"
		}
	}
	for _, c := range ev.Commands {
		if strings.Contains(strings.ToLower(c.Command), "opensearch") {
			return "opensearch"
		}
	}
	return "elasticsearch"
}

// pipelineCount is the count of a state's lines an operator's grep -c
// printed.
func pipelineCount(ev *Gathered, state string) string {
	for _, r := range pipelineRules {
		if r.state != state {
			continue
		}
		for _, c := range ev.Commands {
			if !strings.Contains(c.Command, "grep -c") || !matchLine(r.re, c.Command) || len(c.Lines) != 1 {
				continue
			}
			if n, err := strconv.Atoi(strings.TrimSpace(c.Lines[0])); err == nil && n > 0 {
				return strconv.Itoa(n)
			}
		}
	}
	return ""
}

// pipelineChangeOf is the latest change of subject at or before t.
func pipelineChangeOf(ev *Gathered, subject string, t time.Time) string {
	if subject == "" {
		return ""
	}
	var best string
	var at time.Time
	for _, c := range append(slices.Clone(ev.Earlier), ev.Changes...) {
		if !strings.EqualFold(c.Service, subject) || (!t.IsZero() && c.Timestamp.After(t)) || c.Timestamp.Before(at) {
			continue
		}
		best, at = fmt.Sprintf("%s of %s at %s: %q", changeKindWords(c.Kind), c.Service, ts(c.Timestamp), c.Description), c.Timestamp
	}
	return best
}

// runtimeNodes lists the nodes whose container runtime is rt, from the
// nodes read or a node listing's CONTAINER-RUNTIME column.
func runtimeNodes(ev *Gathered, rt string) string {
	var out []string
	for _, n := range ev.K8s.Nodes {
		if strings.HasPrefix(n.Status.NodeInfo.ContainerRuntimeVersion, rt) {
			out = append(out, n.Name)
		}
	}
	if len(out) == 0 {
		for _, c := range ev.Commands {
			for _, l := range c.Lines {
				if f := strings.Fields(l); len(f) > 2 && strings.Contains(l, " "+rt+"://") && strings.Contains(f[0], ".") {
					out = append(out, f[0])
				}
			}
		}
	}
	if len(out) == 0 {
		return ""
	}
	return plural(len(out), "node", "nodes") + " (" + strings.Join(firstN(out, 3), ", ") + ")"
}

// pipelineParser is the parser the shipper's input is configured with.
func pipelineParser(ev *Gathered) string {
	re := regexp.MustCompile(`(?i)^\s*(?:@type\s+(json|regexp|multi_format|cri|none)|parser\s+(docker|cri|json)|multiline\.parser\s+(\S+))\s*$`)
	for _, c := range ev.Commands {
		if !strings.Contains(c.Command, "get cm") && !strings.Contains(c.Command, "configmap") && !strings.Contains(c.Command, "config") {
			continue
		}
		for _, l := range c.Lines {
			if m := findSubmatch(re, l); m != nil {
				return orWord(m[1], orWord(m[2], m[3]))
			}
		}
	}
	return ""
}

// publicHost reports whether host is outside the cluster and the
// private network: a public DNS name.
func publicHost(host string) bool {
	if host == "" || net.ParseIP(host) != nil || !strings.Contains(host, ".") {
		return false
	}
	for _, s := range []string{".svc", ".cluster.local", ".internal", ".local", ".lan", ".corp", ".intra"} {
		if strings.HasSuffix(host, s) || strings.Contains(host, s+".") {
			return false
		}
	}
	return true
}

// providerIncident is an incident a status page shows, from an operator's
// look at it.
func providerIncident(ev *Gathered) string {
	for _, c := range ev.Commands {
		if !strings.Contains(strings.ToLower(c.Command), "status") || !strings.Contains(strings.ToLower(c.Command), "incident") {
			continue
		}
		text := strings.Join(c.Lines, " ")
		if matchLine(statusIncidentRE, text) {
			return strings.Join(strings.Fields(text), " ")
		}
	}
	return ""
}

func kubeContext(cmd string) string {
	if m := findSubmatch(kubeContextRE, cmd); m != nil {
		return m[1]
	}
	return ""
}

// possessive is "name's", "" for no name.
func possessive(name string) string {
	if name == "" {
		return ""
	}
	return name + "'s"
}

func lineTexts(ss []pipelineSeen) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.line
	}
	return out
}

func describePipelineState(h *Hypothesis, sc Scope) string {
	shipper := orWord(h.fact("shipper"), h.Subject)
	line := h.fact("line")
	if line == "" {
		return fmt.Sprintf("the telemetry pipeline's agent says where the data stops: %s", h.Subject)
	}
	q := quote(truncate(ReadableLine(line), 240), 250)
	source := h.fact("source")
	store := orWord(h.fact("store"), "the store")
	var d string
	switch h.fact("state") {
	case "mapping":
		d = fmt.Sprintf("%s refuses %s's documents with a mapping conflict (mapper_parsing_exception)", store, orWord(source, "one source"))
		if fl := h.fact("field"); fl != "" {
			d += fmt.Sprintf(" on the field [%s]", fl)
		}
		if s := h.fact("shape"); s != "" {
			d += fmt.Sprintf(": %s writes %s", orWord(source, "the source"), s)
		}
		d += fmt.Sprintf(", so %s drops every such document (%s)", shipper, q)
		if c := h.fact("source_change"); c != "" {
			d += fmt.Sprintf("; it began with the %s", c)
		}
		d += fmt.Sprintf(". %s is not stuck and the other sources arrive; restarting it changes nothing", shipper)
	case "blocked":
		d = fmt.Sprintf("%s blocks writes to the index (cluster_block_exception, read-only at the flood-stage disk watermark), so %s cannot deliver: %s", store, shipper, q)
	case "protocol":
		d = fmt.Sprintf("%s's exporter", shipper)
		if e := h.fact("exporter"); e != "" {
			d += " " + e
		}
		d += " speaks another protocol than the endpoint it points at"
		if p := h.fact("port"); p != "" {
			d += fmt.Sprintf(" (%s)", h.fact("endpoint"))
			if p == "4317" && strings.Contains(strings.ToLower(h.fact("exporter")+line), "http") {
				d += ": an OTLP/HTTP (otlphttp) exporter sends HTTP/1.1 to the OTLP gRPC port 4317, the wrong port for its protocol, and reads the gRPC server's HTTP/2 frames back as a malformed HTTP response"
			} else if p == "4318" {
				d += ": a gRPC exporter sends to the OTLP/HTTP port 4318, the wrong port for its protocol"
			}
		}
		d += fmt.Sprintf(", so every export fails and the data of every service sent through it is dropped (%s)", q)
		if n := h.fact("dropped"); n != "" {
			d += fmt.Sprintf("; %s items dropped at once after the retries", n)
		}
		if c := h.fact("shipper_change"); c != "" {
			d += fmt.Sprintf("; it began with the %s", c)
		}
		d += ". The applications' own instrumentation still sends normally"
	case "parse":
		d = fmt.Sprintf("%s's parser does not match the log lines it reads, so they are dropped before they reach %s (%s)", shipper, store, q)
		if h.fact("cri") != "" {
			d += fmt.Sprintf(": the lines are in the CRI log format containerd writes (\"<time> stdout F <message>\"), while %s's input still parses them", shipper)
			if p := h.fact("parser"); p != "" {
				d += fmt.Sprintf(" with the %s parser", p)
			}
			d += " for Docker's JSON log format"
			if n := h.fact("containerd_nodes"); n != "" {
				d += fmt.Sprintf("; only the pods on the %s running containerd lose their logs", n)
			}
		}
		if c := h.fact("shipper_change"); c != "" {
			d += fmt.Sprintf("; %s", c)
		}
	case "unavailable":
		host := orWord(h.fact("host"), "the destination")
		status := orWord(h.fact("status"), "503")
		if h.fact("external") != "" {
			d = fmt.Sprintf("%s, the provider's endpoint outside our cluster, answers %s (service unavailable) to %s's writes: an incident on the provider's (upstream) side, not ours (%s)", host, status, shipper, q)
		} else {
			d = fmt.Sprintf("%s answers %s (service unavailable) to %s's writes (%s)", host, status, shipper, q)
		}
		if inc := h.fact("incident"); inc != "" {
			d += fmt.Sprintf("; the provider's status page shows the incident: %s", quote(truncate(inc, 200), 210))
		}
		if e := h.fact("elsewhere"); e != "" {
			d += fmt.Sprintf("; %s's %s sees the same %s, whatever its version", e, shipper, status)
		}
		d += fmt.Sprintf(". %s retries and backs off; nothing on our side, %s's own version included, is at fault", shipper, shipper)
	case "buffer":
		d = fmt.Sprintf("%s's input is at its memory buffer limit and stops taking lines (%s)", shipper, q)
		if l := h.fact("limit"); l != "" {
			d += fmt.Sprintf("; its buffer limit (Mem_Buf_Limit) is %s", l)
			if o := h.fact("old_limit"); o != "" {
				d += fmt.Sprintf(", down from %s", o)
			}
		}
		if c := h.fact("shipper_change"); c != "" {
			d += fmt.Sprintf(" since the %s", c)
		}
		if h.fact("rotation") != "" {
			d += fmt.Sprintf(". While it is paused at a traffic peak, the kubelet rotates %s's log files", orWord(source, "the source"))
			if m := h.fact("log_max_size"); m != "" {
				d += fmt.Sprintf(" at %s (containerLogMaxSize)", m)
			}
			d += " and deletes them before they are read, so the lines written during the pause are never shipped"
		} else {
			lines := "the lines"
			if source != "" {
				lines = possessive(source) + " lines"
			}
			d += fmt.Sprintf(", and %s arriving meanwhile are dropped", lines)
		}
		d += fmt.Sprintf("; %s is not refusing anything", store)
	}
	return d
}

func recommendPipelineState(h *Hypothesis, sc Scope, r *recommender) {
	shipper := orWord(h.fact("shipper"), h.Subject)
	source := orWord(h.fact("source"), "the source")
	store := orWord(h.fact("store"), "the store")
	switch h.fact("state") {
	case "mapping":
		r.high("Make %s write the field %s in the shape the index maps (an object), or rename it; or change the index template's mapping for the next index", source, orWord(h.fact("field"), "it refuses"))
		r.med("Route %s's refused documents to a dead-letter index (Fluentd's @ERROR label, Fluent Bit's or Logstash's DLQ) and replay them after the fix; do not restart %s, it is not stuck", source, shipper)
		r.low("Alert on the shipper's dropped or error events and on mapping exceptions in bulk responses")
	case "blocked":
		r.high("Free disk on %s and clear the read-only block (index.blocks.read_only_allow_delete) once below the watermark", store)
		r.low("Alert on the disk watermarks before the flood stage")
	case "protocol":
		r.high("Point %s's exporter at the port of its protocol (OTLP/HTTP 4318, gRPC 4317) or switch the exporter back to its protocol", shipper)
		r.med("Check the exporter's failures after every pipeline change (otelcol_exporter_send_failed_spans, the collector's own log)")
		r.low("Alert on the collector's export failures and dropped items")
	case "parse":
		r.high("Parse the container logs in the format the nodes' runtime writes (the CRI parser for containerd, a multi-format parser while both runtimes run) in %s", shipper)
		r.med("Check the log pipeline on one node of a new node group before rolling the others")
		r.low("Alert on the shipper's parse failures")
	case "unavailable":
		r.high("Wait out the provider's incident and follow its status page; do not roll back %s, the failure is not on our side", shipper)
		r.med("Make sure %s's retry and buffer (WAL, disk buffer) hold the data until the endpoint recovers", shipper)
		r.low("Alert on the shipper's failed sends by status and host")
	default:
		r.high("Restore %s's input buffer limit (Mem_Buf_Limit) or move it to a filesystem buffer so the input does not pause at peaks", shipper)
		r.med("Keep the kubelet's containerLogMaxSize large enough for %s's peak rate, or read faster than it rotates", source)
		r.low("Alert on the shipper's paused inputs and dropped records")
	}
}
