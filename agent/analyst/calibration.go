package analyst

import (
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Calibration: the score ranks hypotheses; the confidence says how sure
// the answer is. An answer whose evidence could as well fit a root one hop
// further (a piece of evidence that was not handed over, or not read) must
// not look certain. The rules below were found by ablation (agent/eval's
// TestAblationCalibration: every scenario run again with one file, or one
// command of a transcript, taken away; the wrong answers that stayed above
// 70 had these traits in common) and each holds an answer at
// calibrationCap at most. They are general: none names a scenario, a
// service or a message.

// calibrationCap is the highest confidence of an answer a rule holds back:
// the bar an unsure answer must not cross.
const calibrationCap = 70

// answerShape is what calibration reads of an answer besides its analysis.
type answerShape struct {
	timeline int    // entries of the answer's timeline
	evidence int    // evidence lines of the root cause
	question string // the question and the alert it comes from
	// subjects are what the question is about (Scope.Subjects): the
	// context's service and the known objects the question names.
	subjects []string
	// asides are the subjects only an aside clause of the question names
	// ("also X is failing, related?").
	asides []string
}

// calibrationRule is one trait of answers that are sure without grounds.
type calibrationRule struct {
	name    string
	applies func(a *Analysis, w *Hypothesis, s answerShape) bool
}

var calibrationRules = []calibrationRule{
	// A fault localized to a service from its own signals moving first
	// says where the fault shows, not by what mechanism: what broke there
	// is one hop further.
	{"localized only", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Kind == KindLocalized
	}},
	// One moment on the timeline or one line of evidence: nothing before
	// or beside the root bears it out.
	{"thin", func(_ *Analysis, _ *Hypothesis, s answerShape) bool {
		return s.timeline <= 1 || s.evidence <= 1
	}},
	// Read only from events, with nothing from another source: events are
	// the history of objects, and without the objects' current state (or
	// logs, metrics) what they tell may be a state that has passed, or a
	// pointer to another object whose own reason was not read. An event
	// whose mechanism read the why in it (the object it names as missing,
	// the provisioner's classified refusal, the cloud's code, the holder
	// of a volume) is the root's own line, and so is a scheduler's
	// predicate with the change that asked for it (eventsSayWhy).
	{"events only", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return onlySource(w, SrcEvents) && !eventsSayWhy(w)
	}},
	// A limit reached (a container killed at its memory limit, a broker's
	// resource alarm, every worker of a server busy) is a state: the root
	// is what drove use to the limit (a change, growth or a leak, a surge
	// of load, slow work holding the workers). With none of them found,
	// only the consequences of the limit, the answer stops one hop short.
	{"limit without what drove it", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return limitStates[w.Kind] && !drivenBy(w)
	}},
	// A database refusing connections for lack of slots is a limit too:
	// the root is who took the slots (a client's pool, a leak, a surge;
	// databaseslotstaken.go names it) or the change that lowered the
	// limit. Refused clients alone stop one hop short.
	// A change of a client blamed for it must say how it took them (more
	// replicas, a bigger pool); a deploy alone does not.
	{"connection slots without who took them", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Kind == KindDatabase && matchLine(slotsRefusedRE, w.fact("line")) && !takesSlots(w)
	}},
	// A queue backing up (consumer lag, a queue's depth) says the
	// consumers fall behind, not why: the root is what slowed them (a
	// change, a slow call per record, a surge of records, one record they
	// fail on). Their own errors and rebalances alone are one hop short.
	{"backlog without what slowed its consumers", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Kind == KindBacklog && w.Trigger == nil && w.fact("partition") == "" && !slowedBy(w)
	}},
	// A shared resource held (a row lock waited on, a single-threaded
	// server stalled by one command): the root is who holds it. Without
	// the holder named, or a change on either side, only the waiters are
	// known.
	{"held without its holder", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return (w.Kind == KindDBBlocked || w.Kind == KindBlockingCommand) && w.Trigger == nil &&
			w.fact("blocker") == "" && w.fact("db_change") == "" && w.fact("blocker_change") == ""
	}},
	// An image that cannot be pulled, with no registry answer read (the
	// tag not found, credentials refused, the registry unreachable) and no
	// pull secret missing: the back-off says that the pull fails, not why.
	{"image pull without the registry's answer", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Kind == KindImagePull && pullProblem(pullMessage(w)) == "" && w.fact("pull_secret") == ""
	}},
	// Credentials refused by the registry, with neither the pull secrets
	// the pods use nor their ServiceAccount read: the refusal says the
	// pull is not authorized, not which credential is missing or wrong
	// (a change of the registry, the image or the pull secrets would say
	// it; a change of anything else does not).
	{"pull refused without the credentials read", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Kind == KindImagePull && !credentialChange(w.Trigger) && pullProblem(pullMessage(w)) == pullNoCredentials &&
			w.fact("pull_secret") == "" && w.fact("pull_sa") == ""
	}},
	// A disk found filling with nothing read of what fills it (no path and
	// workload from du or ls, no writer, no change): the alert is borne
	// out, its root is one hop further.
	{"disk filling without what fills it", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Kind == KindDiskClaim && w.fact("real") != "" && w.Trigger == nil &&
			w.fact("filler_workload") == "" && w.fact("writer") == ""
	}},
	// A manual change that a GitOps controller reverted, with nothing read
	// of what the change meant to fix (no failure of the workload beside
	// it, or only a restart loop with no exit code or reason): the revert
	// is borne out, but whether it matters, and what still fails, is not.
	{"self-heal revert without what the change meant to fix", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		if w.Kind != KindSelfHealReverted {
			return false
		}
		f := selfHealSymptomFinding(w)
		return f == nil || f.Summary == "" || f.Kind == KindCrashLoop && f.fact("exit_code") == "" && f.fact("reason") == ""
	}},
	// Lookups timing out at a resolver, with nothing read of the resolver
	// itself beyond the same timeouts (its throttling, its limits, its
	// node) and no change: the callers show the resolver slow, not why.
	{"resolver timeouts without the resolver's own why", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Kind == KindResolverTimeout && noTrigger(w) && !resolverWhy(w)
	}},
	// A dependency blamed on its callers' reports and its own metrics only
	// (its latency, its CPU): they show it slow or failing, not why; its
	// own log or state, which would say, was not read.
	{"dependency seen only in its metrics", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.class() == classDependency && !ownStateOrLog(w)
	}},
	// A cause that is over (its errors stopped and stayed stopped: the
	// clients recovered after a failover) explains what failed then, not
	// what still fails: if the symptoms go on, their root is elsewhere.
	{"cause already over", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.fact("recovered") != ""
	}},
	// Containers killed by their liveness (or startup) probe, explained as
	// a probe failing before a slow start is over, while the probe got an
	// HTTP answer (a 404, a 500): the application was up and answering,
	// so the why is what its answer means (a health path that moved, a
	// check failing on a dependency), which was not read.
	{"probe kills though the probe got an answer", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Kind == KindLivenessKill && w.fact("why") == "" && probeAnswered(w)
	}},
	// Containers killed by their liveness probe before a start is over
	// (nothing answers the probe yet), with nothing that says why now:
	// no change before the kills and no why of the slow start read. The
	// probe's timing is what kills, but a start that fit until today
	// became slow for a reason (less CPU, a longer warm-up, a dependency
	// waited on) one hop further, or the probe itself changed.
	{"probe kills of a slow start, why now not read", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Kind == KindLivenessKill && w.Trigger == nil && w.fact("why") == "" && !probeAnswered(w)
	}},
	// Pods preempted by pods of a higher priority whose workload was not
	// read (the preemptor is known by UID only): the victims' state is
	// certain, but the fix lies with the workload that took the room, and
	// the answer cannot name it.
	{"preempted, by whom not read", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Kind == KindPreempted && w.fact("affected") == ""
	}},
	// A node NotReady because its kubelet stopped reporting, with nothing
	// of the node's own (its kubelet or system log, a condition the
	// kubelet set with a message, a change of the node): NotReady is a
	// state; why the kubelet went silent (a certificate, the runtime, the
	// disk, the network) is one hop further.
	{"node NotReady without the node's own reason", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Kind == KindNodeNotReady && w.Trigger == nil && w.fact("why") == "" && !nodeWhy(w)
	}},
	// A node NotReady whose trigger is the release of a workload, not a
	// change of the node (its image, its kubelet, its host): a
	// Deployment's new revision does not stop a node's kubelet from
	// reporting unless what it runs on that node is shown to, so the
	// release is a coincidence of timing until the node's own reason is
	// read.
	{"a node's failure triggered by a workload's release", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Kind == KindNodeNotReady && w.fact("why") == "" && w.Trigger != nil && w.Trigger.Kind == KindDeploy &&
			!strings.EqualFold(w.Trigger.Subject, orWord(w.fact("node"), w.Subject))
	}},
	// A certificate that has not expired yet, answered for failures the
	// question says are happening now: by its own account nothing is down
	// yet, so it cannot be why requests fail today.
	{"a certificate still valid answered for failures happening now", func(_ *Analysis, w *Hypothesis, s answerShape) bool {
		return w.Kind == KindCertExpiring && matchLine(failingNowQuestionRE, s.question)
	}},
	// Pods stuck on a volume another node still holds (Multi-Attach) while
	// a node is NotReady: a node that stopped holds its volumes until they
	// are detached, so the mount failure follows from the node, and what
	// is asked about (data, requests) may follow from either.
	{"a volume held by a node that failed", func(a *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Kind == KindMountFailure && w.fact("multi_attach_rolling") == "" && multiAttach(w) && nodeDown(a)
	}},
	// The question's alert checked and borne out (a volume or disk that is
	// really filling) while the answer names something that does not fill
	// a disk and does not account for it: the answer is about another
	// symptom, not the one asked about.
	// The same when the claim could not be checked: a question about a
	// disk or volume filling answered with something that fills none.
	{"the alert's claim left unexplained", func(a *Analysis, w *Hypothesis, s answerShape) bool {
		return unexplainedClaim(a, w) || matchLine(storageQuestionRE, s.question) && !fillsStorage[w.Kind] && w.fact("why") == "" && !usesClaim(w)
	}},
	// A limit (an autoscaler at its maximum, a memory limit) driven only by
	// a surge of load whose origin is not named (no client, no caller, no
	// change): the surge is a state too; who sends the load is the root.
	{"limit driven by a surge of unknown origin", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return limitStates[w.Kind] && drivenBy(w) && !drivenByKnown(w)
	}},
	// A node named NotReady while nothing read shows that subject as a
	// node (no node object, no node event names it): the name is another
	// object's (a pod's workload on the node), and which node failed, and
	// why, was not read.
	{"a node that is not a node", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Kind == KindNodeNotReady && !shownAsNode(w)
	}},
	// A memory growth named while the kills at the limit are another
	// hypothesis it does not take in: the kills are the observed fact, and
	// the growth is not tied to them.
	{"growth apart from the kills it would explain", func(a *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Kind == KindSaturation && (w.fact("leak_rate") != "" || w.fact("growing") != "") && killsApart(a, w)
	}},
	// A process refused access to a file or directory (EACCES, Errno 13),
	// with nothing read of who owns it or which user the process runs as
	// and no change: the refusal says that it fails, not why.
	{"permission refusal without owner or user", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Trigger == nil && w.fact("why") == "" && fileRefused(w) && !ownerOrUser(w)
	}},
	// Pods restarting in a container other than the service's own (an
	// init container, a sidecar), known only from back-off events: the
	// pods' state, which says which container that is and how it ends, was
	// not read, so the answer cannot say what fails in it.
	{"another container's crashes known only from events", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Kind != KindCrashLoop && otherContainerBackOff(w)
	}},
	// A container's CFS throttling, with neither its CPU limit read nor a
	// change that cut it nor a surge of load that fills it: throttling is
	// a limit reached, and what spends the CPU (a runtime collecting a
	// full heap, a busy loop) may be the root one hop further.
	{"CPU throttling without its limit or what spends the CPU", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return throttledUnexplained(w)
	}},
	// The question asks about one subject (a pod stuck Pending, a service
	// slow) and the answer names another, louder failure that nothing read
	// ties to it: no finding of the answer is the asked subject's, none
	// has it as caller, node or owner. A neighbour's failure is not the
	// cause of what was asked until a call, a node or an owner joins
	// them.
	// The question asks about one complaint and names another failure in
	// an aside ("also X is failing, related?"), and the answer is the
	// aside's own cause, with nothing of it bearing on the complaint: the
	// aside may be the cause when nothing else explains the complaint, but
	// what joins them was not read.
	{"an aside answered for the complaint", func(_ *Analysis, w *Hypothesis, s answerShape) bool {
		if len(s.asides) == 0 || !bearsOn(w, s.asides) {
			return false
		}
		var complaint []string
		for _, n := range s.subjects {
			if !slices.Contains(s.asides, n) {
				complaint = append(complaint, n)
			}
		}
		return !bearsOn(w, complaint)
	}},
	// A container that cannot start, read only from the runtime's own
	// line as its output ("exec /app/entrypoint.sh: no such file or
	// directory"): for a script that exists this is its interpreter (the
	// shebang's program, or one with a carriage return) that is missing;
	// which of the two, nothing read of the image says.
	{"exec failure with nothing read of the image", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		if w.Kind != KindStartFailure {
			return false
		}
		for _, f := range w.Primary {
			if strings.Contains(strings.ToLower(f.fact("exec_line")), "no such file or directory") {
				return true
			}
		}
		return false
	}},
	{"another subject than the one asked", func(a *Analysis, w *Hypothesis, s answerShape) bool {
		return len(s.subjects) > 0 && !bearsOn(w, s.subjects) && !tiedToAsked(a, w, s.subjects)
	}},
	// The question says only part of a workload fails (some of its pods,
	// half the replicas, one of its instances while the others are fine),
	// and the answer names nothing that places the failure among them (a
	// node, a zone, a host, a subnet): what it names (an image, a release,
	// a query) is what the healthy part shares too, so the healthy part
	// contradicts it, and the root is what differs between them.
	{"part of a workload failing, answered with what all of it shares", func(_ *Analysis, w *Hypothesis, s answerShape) bool {
		return matchLine(partialQuestionRE, s.question) && !placesFailure(w)
	}},
	// An image with no variant for the node's platform ("no match for
	// platform in manifest"), with neither the nodes' operating system or
	// architecture read nor which nodes the failing pods are on: the
	// mismatch has two sides and only the image's is known.
	{"platform mismatch without the nodes' platform", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Kind == KindImagePull && pullProblem(pullMessage(w)) == pullNoPlatform && w.fact("pull_platform") == ""
	}},
	// A credential refused as expired (ExpiredToken, "the provided token
	// has expired") with nothing read of its lifetime (the session's
	// duration, the run's length, a rotation) and no change: an expired
	// token is a state; what made it outlive its lifetime is the root.
	{"credential expired without its lifetime", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Trigger == nil && w.fact("why") == "" && w.fact("session_lifetime") == "" && expiredLine(w)
	}},
	// A connection refused because the client does not trust the server's
	// certificate ("certificate verify failed", "unknown authority", PKIX
	// path building failed), answered as a failure state (a Job failed,
	// a handshake refused) with nothing read of either side (which CA
	// signs the server's certificate, which the client trusts) and no
	// change: the refusal says the chain does not verify, not why (a CA
	// rotated on the server, a trust store baked into an image, a proxy
	// re-signing).
	{"certificate not trusted, its two sides not read", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return genericFailure[w.Kind] && w.Trigger == nil && w.fact("why") == "" && untrustedLine(w)
	}},
	// A configuration the application cannot parse, with no change read
	// that made it so and nothing saying why it is invalid: the exit says
	// that the configuration is wrong, not which value nor since when.
	{"invalid configuration without the change that made it so", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Kind == KindConfigInvalid && w.Trigger == nil && w.fact("why") == ""
	}},
	// One availability zone singled out by its pods' latency alone (the
	// pods there slowed, the others did not), with nothing of the zone's
	// own (the provider's health event for it): the split says where the
	// fault is, not what it is (the zone's network, a node pool there, a
	// replica of a dependency in that zone).
	{"a zone singled out without the provider's word on it", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Kind == KindZoneImpaired && w.fact("health") == "" && w.fact("why") == ""
	}},
	// A caller's deadline shorter than its callee's calls, with no change
	// read that set it (the callee's latency did not grow, so a setting
	// did): where the timeout is set and when it was cut is the root.
	{"a deadline cut without the change that set it", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Kind == KindDeadlineCut && w.Trigger == nil && w.fact("timeout_change") == ""
	}},
	// A NAT gateway out of source ports, with no change and no caller but
	// the one that suffers: the exhaustion is a limit reached, and what
	// churns connections through it (a new client, a batch job, keep-alive
	// turned off) is not named.
	{"NAT ports taken, by whom not read", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Kind == KindNATPorts && w.Trigger == nil && !strings.Contains(w.fact("callers"), ",")
	}},
	// A Secret its controller cannot sync, with nothing read of why the
	// provider refuses it beyond "authentication failed" (no provider code
	// such as an AADSTS error, no change of the store): which credential
	// fails and why (expired, revoked, removed) is the controller's log.
	{"secret sync refused without the provider's why", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		r := w.fact("reason")
		return w.Kind == KindSecretSyncFailed && noTrigger(w) && w.fact("why") == "" && (r == "" || secretReasonRank(r) < 2)
	}},
	// Pods refused by a rule of their own spec (their pod anti-affinity),
	// known from the scheduler's message only: the message names the
	// predicate that failed, not the rule (its topology key, whether it
	// is required), which the workload's spec says.
	{"pods refused by their own affinity, the rule not read", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Kind == KindUnschedulable && noTrigger(w) && w.fact("why") == "" && matchLine(antiAffinityRE, w.fact("message")) && w.fact("anti_key") == ""
	}},
	// A database disk filled by WAL an inactive replication slot retains,
	// with the slot's consumer not named (no client, no change that
	// removed it): the slot says what holds the WAL, not who stopped
	// reading it.
	{"WAL retained, the slot's consumer not named", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Kind == KindWALRetained && noTrigger(w) && w.fact("consumer") == "" && w.fact("consumer_gone") == ""
	}},
	// A memory limit reached with a change as its trigger that says
	// nothing of memory (a certificate renewed, a label edited): a change
	// near the kills does not drive memory unless it is a release of the
	// code, a setting of memory, cache, batch or load, or the limit's.
	{"memory limit with a change that does not drive memory", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Kind == KindOOMKilled && w.Trigger != nil && !memoryTrigger(w.Trigger) && !drivenWithoutTrigger(w)
	}},
	// Containers killed at their memory limit, explained by a runtime's
	// heap cap set above that limit, while the heap itself grows steadily:
	// the cap says where the process dies, the growth what drives it
	// there, and what grows is not named.
	{"heap cap above the limit while the heap grows", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Kind == KindOOMKilled && w.fact("heap_over_limit") != "" && noTrigger(w) && heapGrows(w)
	}},
	// A queue growing inside the process (a thread pool's queue of work
	// items): its consumers are the process's own threads, and what holds
	// them (blocking calls, starvation) is the root, not a consumer
	// falling behind a producer.
	{"a thread pool's queue read as a consumer backlog", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Kind == KindBacklog && matchLine(threadPoolQueueRE, w.fact("metric"))
	}},
	// A node that was NotReady and recovered, its why only the kubelet's
	// own report (it stopped, the runtime did not answer, PLEG unhealthy)
	// with no package upgrade and no change: the report says what
	// stopped, not what stopped it (the kernel, a disk, the runtime).
	{"node episode explained by the kubelet's report only", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Kind == KindNodeRecovered && noTrigger(w) && w.fact("upgrade") == ""
	}},
	// Pods whose network the CNI plugin cannot set up, with the plugin's
	// error as the only why and no change: the error says the node's
	// network agent is not ready, not why (its configuration, its
	// address detection, its datastore).
	{"pod network failing, the node agent's why not read", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Kind == KindPodNetwork && noTrigger(w) && w.fact("why") == ""
	}},
	// A firewall blocking requests with no change of its rules, or of its
	// caller's address, read: what made the rules stop them now (a rule
	// set switched to block, a caller's new egress address outside an
	// allow list, a new client) was not read.
	{"firewall blocks, what changed not read", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Kind == KindWAFBlocked && noTrigger(w)
	}},
	// The question comes from an alert about one subject and names
	// another beside it; the answer is about the other, and nothing read
	// ties it to the alert's subject: the alert is left unexplained.
	{"the alert's own subject left unexplained", func(a *Analysis, w *Hypothesis, s answerShape) bool {
		return matchLine(alertQuestionRE, s.question) && len(s.subjects) > 1 && !bearsOn(w, s.subjects[:1]) && !tiedToAsked(a, w, s.subjects[:1])
	}},
	// A release its API server rejects as invalid, with neither who set
	// the offending field (the object's managers) nor a change read other
	// than the release itself (which is what is rejected): the rejection
	// names the field, not whether the chart or a hand edit on the live
	// object put it there.
	{"release rejected, the field's owner not read", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Kind == KindApplyRejected && (noTrigger(w) || ownRelease(w)) && w.fact("how") != "admission" && w.fact("manual_manager") == ""
	}},
	// Long garbage-collection pauses with no change read and no growth of
	// what the heap holds: a heap at its limit is a state, and what fills
	// it (a cache setting, a release, a load) is one hop further.
	{"GC pauses without what fills the heap", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Kind == KindGCPressure && noTrigger(w) && !heapGrows(w) && !heapRises(w)
	}},
	// A memory leak named from the container's memory alone (its working
	// set or RSS growing to the kills), with no release read and nothing
	// of the runtime's own heap: the container's memory grows for other
	// reasons too (an allocator's fragmentation, buffers, caches), and
	// what grows is not known.
	{"a leak read from the container's memory alone", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Kind == KindOOMKilled && noTrigger(w) && w.fact("why") == "" && containerGrowthOnly(w)
	}},
	// Containers killed for memory on some nodes while replicas of the
	// same ReplicaSet, as old, ran without a restart on other nodes: the
	// same image and configuration under the same load, so what makes
	// the kills is something of the nodes, and an answer that does not
	// take the nodes in stops short (sparedreplicas.go).
	{"kills on some nodes, the same release spared on others", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return (w.Kind == KindOOMKilled || w.Kind == KindSaturation) && w.fact("spared_replicas") != ""
	}},
	// A Deployment paused that the asker says they paused: the pause is
	// their own mitigation, made after what they ask about began; it
	// stops a rollout where it stands and makes no request fail, so what
	// they complain of is the version the pause left running.
	{"the asker's own pause named as the root", func(_ *Analysis, w *Hypothesis, s answerShape) bool {
		return w.Kind == KindDeploymentPaused && matchLine(askerPausedRE, s.question)
	}},
	// A server's alarm known only from a client quoting its refusal
	// ("OOM command not allowed", MISCONF): the server's own statement
	// and its host were not read, so which server refuses, and whose
	// writes filled it, is one hop further than the answer reaches.
	{"a server's alarm read from its clients only", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Kind == KindResourceAlarm && w.fact("caller") != "" && w.fact("host") == ""
	}},
	// A thread spinning in a loop of the application's own, with no
	// release read: the profile says where the CPU goes, not since when
	// nor which release wrote the loop.
	{"busy loop without the release that wrote it", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Kind == KindBusyLoop && noTrigger(w)
	}},
	// Pods refused by a namespace's quota, with neither how far below its
	// replicas the workload stands nor a change that asked for more read:
	// the refusal says the quota is full, not what it keeps from running.
	{"quota refusing pods, what it keeps from running not read", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		want, _ := quotaCapped(w)
		return w.Kind == KindQuota && noTrigger(w) && want == ""
	}},
	// A pool's free capacity falling to zero (a bulkhead's available
	// calls, free slots), with no change read that sets its size: the
	// pool is full, and whether its size was cut or its calls slowed is
	// not known.
	{"a pool's free capacity at zero, its size not read", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Kind == KindSaturation && matchLine(freeCapacityRE, w.fact("metric")) && (noTrigger(w) || !matchLine(poolSizeChangeRE, changeText(w.Trigger)))
	}},
	// A caller's calls per request to a service multiplied, with no change
	// read that widened them: the traces count the calls, not why there
	// are more (a release calling in a loop, or the same call retried at
	// one or more layers, which look alike as calls per trace).
	{"fan-out widened without what widened it", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Kind == KindFanOut && noTrigger(w)
	}},
	// A certificate whose renewal fails, with nothing read of when the
	// certificate in use expires (cert-manager's expiry, a probe's): the
	// renewal failing is harmless until then, so whether anything breaks,
	// and when, is not known.
	{"certificate not renewing, its expiry not read", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Kind == KindACMEChallenge && w.fact("not_after") == "" && !hasKind(w.Support, KindCertExpiring) && !hasKind(w.Support, KindCertificate)
	}},
	// A container runtime down on a node, known from the kubelet's own
	// report only (PLEG not healthy, the runtime down), with neither the
	// runtime's reason (its journal) nor an upgrade or change of it: the
	// kubelet says what it could not reach, not what stopped it (the
	// runtime, or the kernel and disk under it).
	{"runtime down, known from the kubelet's report only", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Kind == KindRuntimeDown && noTrigger(w) && w.fact("upgrade") == "" && w.fact("reason") == ""
	}},
	// Containers killed at their memory limit after hours of running,
	// explained by a runtime's heap cap set above that limit, with no
	// change read: the cap says where the process dies, but a process that
	// takes hours to reach the limit has something growing, and what
	// grows is not named.
	{"heap cap above the limit, the kills hours apart", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Kind == KindOOMKilled && w.fact("heap_over_limit") != "" && noTrigger(w) && ranForHours(w)
	}},
	// A TLS handshake refused in its negotiation (the server's alert
	// protocol_version or handshake_failure, no cipher or protocol in
	// common), answered as a failure state (a Job failed, errors in a
	// log) with no change read: the refusal says the two sides share no
	// protocol version or cipher, not which side moved (a server hardened
	// to TLS 1.3 only, a client runtime too old for it).
	{"TLS negotiation refused, the two sides not read", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return genericFailure[w.Kind] && noTrigger(w) && w.fact("why") == "" && primaryLineMatches(w, tlsNegotiationRE)
	}},
	// A queue backing up after a change of its consumers that says
	// nothing of how fast they consume (an account name, a label, a
	// feature's text): the change is near, not a driver, and what stopped
	// or slowed the consumers (a dependency refusing their calls) is not
	// read.
	{"backlog after a change that does not slow its consumers", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Kind == KindBacklog && !noTrigger(w) && !consumerTrigger(w.Trigger) && w.fact("partition") == "" && !slowedBy(w)
	}},
	// A queue backing up after a change, known only from the queue's
	// metrics: nothing of the consumers' own logs or state says whether
	// they slowed, stopped, or moved on (a consumer that now reads under
	// another group or queue leaves the old one's lag growing at the
	// produce rate, which reads the same as consumers falling behind).
	{"backlog after a change, known from its metrics only", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Kind == KindBacklog && !noTrigger(w) && w.fact("partition") == "" && !slowedBy(w) && !ownStateOrLog(w)
	}},
	// A reader that cannot decode what it reads, "because its producer
	// changed the format", while no producer is named and no change
	// read: who writes the data and what they changed in it (a release
	// that compresses, renames, retypes) is the root, one hop further.
	{"decode failure, its producer not named", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Kind == KindDecodeFailure && noTrigger(w) && w.fact("decode_source") == "" && w.fact("decode_notice") == ""
	}},
	// A consumer's offsets reset, explained as records deleted under its
	// committed offsets, with nothing showing that it had committed
	// offsets out of range (an out-of-range line, the offsets skipped, a
	// pause longer than the retention, the broker deleting segments): the
	// same reset line is logged by a group that has no committed offsets
	// at all (a new group id), which re-reads instead of skipping.
	{"offsets reset, out of range not shown", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Kind == KindOffsetReset && !outOfRangeShown(w)
	}},
	// A node autoscaler at its limit (a node group at its maximum size, a
	// NodePool's limits used up), with the scheduler's reason why no
	// running node takes the pods not read, or naming no resource they
	// lack (a per-node limit of volumes, an affinity, a taint): the limit
	// says why no node is added, not why the nodes already running refuse
	// the pods, which a new node of the same kind may refuse too.
	{"node limit, why no running node fits not read", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Kind == KindNodeLimit && !schedulerLacks(w)
	}},
	// A node pool at its limit with nothing read of what uses it up (no
	// replicas added, no node group or pool changed, no other workload
	// named): the limit is a state, and who holds the capacity under it
	// (another namespace's workload left running, a fleet grown elsewhere)
	// is the root one hop further.
	{"node pool at its limit, what uses it up not read", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Kind == KindNodeLimit && w.fact("demand") == "" && !capacityDemandChange(w.Trigger)
	}},
	// A node scale-up that failed (the autoscaler backing a group off)
	// with no refusal of the cloud read (no quota, no capacity code): the
	// backoff says the scale-up failed, not why (no capacity of the type
	// in the zone, a quota, a launch template).
	{"scale-up failed, the cloud's refusal not read", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Kind == KindScaleUpRefused && w.fact("code") == "" && w.fact("quota") == ""
	}},
	// An autoscaler that cannot fetch its metric (the metrics API finds no
	// series for it), with no change read (of the workload, or of how it
	// exports its metrics): the metric is gone for a reason
	// (a release that renamed it, the adapter's rule, the adapter down)
	// that is not known. A container without a request says why itself.
	{"autoscaler blind, what took its metric away not read", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Kind == KindHPABlind && noTrigger(w) && w.fact("why") == "" && w.fact("metrics_change") == "" && !matchLine(hpaMissingRE, w.fact("message"))
	}},
	// A Job failed, and all the answer has of it is its state and the last
	// line its pod logged (a compiler's "error line 9 at position 8", an
	// exception's last frame, "migration failed"): no mechanism read the
	// line (it is neither a connection, a credential, a lookup nor a
	// limit), the line names no object it failed on (a quoted column,
	// key or file), and no change, no call, no dependency is tied to it.
	// The failure is certain; why it failed is in the lines before, or in
	// what the run reads.
	{"a Job failed, read no further than its last line", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Kind == KindJobFailed && noTrigger(w) && w.fact("why") == "" && w.fact("line_kind") == "" && !jobReadFurther(w) &&
			!matchLine(quotedNameRE, w.fact("line"))
	}},
	// Pods unschedulable because the nodes lack a resource they request
	// (Insufficient cpu), with no change read and nothing of why more was
	// asked or the room was taken: a scheduler's wait is a state, and
	// what should have made room (a scale-up, a pre-scaling, a pool) or
	// what took it is one hop further.
	{"pods short of room, what asks for it not read", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Kind == KindUnschedulable && noTrigger(w) && w.fact("why") == "" && matchLine(insufficientRE, w.fact("message"))
	}},
	// The question is about repeated deliveries (the same message sent
	// twice, duplicate orders, customers charged more than once) and the
	// answer names what only delays work (a backlog, a slow call, a
	// saturated consumer): a delay does not deliver anything twice, so the
	// symptom asked about is left unexplained (a re-read from an offset
	// reset, a redelivery after a visibility timeout, a retry of a call
	// that was not idempotent).
	{"repeats asked, answered with a delay", func(_ *Analysis, w *Hypothesis, s answerShape) bool {
		return matchLine(repeatQuestionRE, s.question) && onlyDelays[w.Kind]
	}},
	// The question names no object of the answer (neither its subject nor
	// anything the question names is in it) and asks about a symptom the
	// answer's state cannot show: pods "restarting" answered with pods that
	// never started (an image not pulled, a pod not scheduled, a container
	// never created), a Deployment "0/3 ready" answered with a Job's
	// failure (a Job's pods are never ready, and a Job is not the
	// Deployment), a Job "not finishing" answered with a Job that gave up
	// after its retries (it did finish, failing), values "wrong" (prices
	// 100x too high) answered with a workload that does not run at all (a
	// refusal, a crash, a pull: what stops work leaves values missing or
	// stale, not wrong), pods or claims "pending" answered with containers
	// that ran and stopped, a service's 503s or latency answered with a
	// Job's failure (a Job serves no requests). The answer is then the
	// loudest failure in reach, and nothing read ties it to what was
	// asked.
	{"a symptom the answer cannot show, nothing named ties them", func(_ *Analysis, w *Hypothesis, s answerShape) bool {
		return !namedInQuestion(w, s) && symptomNotShown(w, s.question)
	}},
	// "No space left on device" from a shared memory segment (POSIX shared
	// memory in /dev/shm, a tmpfs sized apart from any disk or volume,
	// 64 MiB by default in a container) read as a disk full, with no change
	// read: no disk is full, and what asks for the segments (their number
	// and size, parallel workers, a setting) is not known.
	{"shared memory out of space read as a disk", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Kind == KindDiskFull && noTrigger(w) && primaryLineMatches(w, sharedMemoryRE)
	}},
	// A VerticalPodAutoscaler evicting a workload's pods again and again,
	// with nothing read of why its recommendation is never applied (the
	// admission controller's state, its error, its webhook's failure
	// policy): evictions repeat for other reasons too (a container killed
	// at its limit raises the recommendation after every kill), and the
	// loop is then a consequence, not the root.
	{"VPA evictions repeat, why the recommendation is not applied not read", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Kind == KindVPAEvictLoop && w.fact("admission") == "" && w.fact("admission_error") == "" && w.fact("failure_policy") == ""
	}},
	// Containers killed at their memory limit, "triggered" by a change
	// that set that limit to another value than the one the pods run
	// with: the change is not in effect (never applied, reverted by a
	// controller that syncs the spec from elsewhere, applied to another
	// object), so it neither drove the kills nor ended them, and what
	// holds the old value is not read.
	{"memory limit changed, the pods still at another", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Kind == KindOOMKilled && w.Trigger != nil && limitChangeNotShown(changeText(w.Trigger), w.fact("memory_limit"))
	}},
	// A process out of file descriptors at an ordinary limit (no change
	// lowered it), with nothing read of what holds them (no release, no
	// growth of its open files or connections, no change that bears on
	// them): the limit is a state, and the leak or the load that fills it
	// (a release that stopped closing connections, inotify instances a
	// node's setting caps) is one hop further.
	{"descriptors exhausted, what holds them not read", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Kind == KindFDExhaustion && w.fact("previous") == "" && w.fact("why") == "" && !heapGrows(w) &&
			(noTrigger(w) || !descriptorTrigger(w.Trigger))
	}},
	// A node under disk pressure, with nothing read of what fills its
	// disk or how it filled (the largest consumer the kubelet names holds
	// almost nothing, no writer, no series of its free space falling, no
	// change of the node or its workloads): the pressure is a state, and
	// what fills the disk or made it smaller (images, logs, a volume size
	// cut in the node's template) is one hop further.
	{"node disk pressure, what fills the disk not read", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Kind == KindNodePressure && w.fact("resource") == "disk" && noTrigger(w) && w.fact("why") == "" &&
			!diskFillerNamed(w)
	}},
	// Pods waiting in an init container for a Service that does not exist,
	// with no change read: the name points nowhere, and whether the
	// Service was renamed, removed or never created (a chart's name
	// override dropped, a release of the database) is not known.
	{"a Service waited for is missing, what removed it not read", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Kind == KindInitWait && w.fact("state") == "missing" && noTrigger(w) && w.fact("why") == ""
	}},
	// Pods that cannot start because an object they reference (a Secret, a
	// ConfigMap) is missing in their namespace while another object they
	// need is missing there too (their ServiceAccount, another Secret),
	// with no change read that names the object: several objects missing
	// at once say the namespace lacks what others have, and what should
	// have put them there (a copy or sync from another namespace, a
	// chart, the namespace's provisioning) is not read; a release of the
	// workload is not it.
	{"objects missing in the namespace, what should provide them not read", func(a *Analysis, w *Hypothesis, _ answerShape) bool {
		m := w.fact("missing")
		return w.Kind == KindConfigError && m != "" && w.fact("why") == "" && !changeNamesMissing(w.Trigger, m) && anotherMissing(a, m)
	}},
	// A canary left paused at a partial weight, with nothing read of the
	// new version doing worse than the stable one (no latency or error
	// finding of the service): a paused canary is also a rollout waiting
	// as designed.
	{"canary left paused, nothing read of the new version being worse", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Kind == KindCanaryPaused && w.fact("symptom") == ""
	}},
	// An operation "slow" because it ran to its own timeout (a function's
	// REPORT with Status: timeout, "Task timed out after 30.03 seconds"):
	// the duration is the deadline, not a measure of the work, and what
	// the operation waited on until then (a lock, a dependency, a
	// connection) is not read; a release near it does not say either.
	{"an operation cut at its timeout, what it waited on not read", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Kind == KindSlowOperation && w.fact("why") == "" && primaryLineMatches(w, ranToTimeoutRE)
	}},
	// A part of each request (its name lookups, one call it makes) read as
	// taking far longer than the requests themselves take (an hour or
	// more, or a thousand times the latency measured for the service): no
	// request waits longer than it lasts, so the reading took another
	// number of the line (a count, a window) for a duration, and what
	// slows the requests is not known.
	{"a part of each request longer than the requests", func(a *Analysis, w *Hypothesis, _ answerShape) bool {
		return phaseBeyondRequests(a, w)
	}},
	// A schema migration that cannot run because an earlier run died
	// half-way (a dirty version) or left its lock behind, with neither that
	// run named (the lock's holder) nor anything read of how it ended (its
	// pod evicted, OOM-killed, deleted, its node gone): the dirty version
	// or the stale lock says that a run died, not what killed it, and what
	// killed it will kill the next run too.
	{"a migration left dirty or locked, how its run ended not read", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Kind == KindMigrationLock && w.fact("holder") == "" && !runEndRead(w)
	}},
	// The resolvers a DNS server forwards a zone to do not answer, with no
	// change read and nothing of why the path to them fails (a route no
	// longer covering them, a configuration the server did not load, the
	// resolvers retired): the timeouts say where the lookups stop, not why.
	{"upstream resolvers unreachable, why not read", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Kind == KindDNSUpstream && noTrigger(w) && w.fact("why") == ""
	}},
	// A runtime out of its own heap, with neither the heap's real size read
	// (the runtime's flags, its default from the memory limit) nor what fills
	// it (a growth, a load, a change): the configured cap is not shown in
	// effect, and the error says the heap is full, not why.
	{"heap exhausted, its real size and what fills it not read", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Kind == KindHeapExhausted && noTrigger(w) && w.fact("why") == "" && w.fact("heap_effective") == "" &&
			w.fact("heap_size") == "" && !heapGrows(w) && !heapRises(w) && !hasKind(w.Support, KindLoadSurge)
	}},
	// Pods that cannot start for an object missing in their namespace (a
	// Secret, a ConfigMap), "triggered" by a change of another workload
	// that names neither the object nor the pods: a change elsewhere does
	// not remove an object it does not name, so the trigger is a
	// coincidence of timing, and what should create the object (a chart,
	// a controller issuing it) is not read.
	{"a missing object triggered by another workload's change", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		m := w.fact("missing")
		return w.Kind == KindConfigError && m != "" && w.fact("why") == "" && changeElsewhere(w) && !changeNamesMissing(w.Trigger, m)
	}},
	// A bulk write holding the row locks other writers wait for, known as a
	// database session only (its id, at most its user and address): which
	// workload runs it, and so what must be stopped and what else is part
	// of the incident, is not read.
	{"a bulk write's session known, not who runs it", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Kind == KindBulkWriteLocks && w.fact("client") == ""
	}},
	// An occupancy gauge rising (a pool's active connections, busy
	// threads or workers) with nothing read of what holds the occupants
	// (a slow query or dependency, a lock, a leak) and no change that says
	// how it takes more: the gauge says the pool fills, not why; a
	// release near it does not say either.
	{"occupancy rising without what holds it", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Kind == KindSaturation && matchLine(occupancyRE, w.fact("metric")) && w.fact("why") == "" && !occupancyHeld(w)
	}},
	// The question reports a failure it already knows of and asks whether
	// that is what breaks its complaint ("X is crashlooping, is that what's
	// breaking checkout?"), and the answer is that failure, read from its
	// own subject alone: nothing of a caller, a shared dependency or the
	// complaint's service ties it to the complaint, so the answer repeats
	// the asker's guess rather than checking it.
	{"the asker's suspect confirmed from its own failure alone", func(_ *Analysis, w *Hypothesis, s answerShape) bool {
		return matchLine(suspectCauseQuestionRE, s.question) && containsToken(strings.ToLower(s.question), strings.ToLower(w.Subject)) && !tiedBeyondItself(w)
	}},
	// Two or more unrelated hypotheses nearly as strong: the evidence does
	// not single out one root.
	{"competing causes", func(a *Analysis, w *Hypothesis, _ answerShape) bool {
		return rivals(a, w, 0.85) >= 2
	}},
}

// calibrate holds back conf, the confidence of the analysis's winner, when
// a calibration rule applies to the answer. A healthy verdict is left as
// it is (its confidence is low already).
func calibrate(a *Analysis, conf float64, s answerShape) float64 {
	if rule := calibrationRuleOf(a, s); rule != "" {
		return math.Min(conf, calibrationCap)
	}
	return conf
}

// calibrationRuleOf names the first rule that holds the answer back, or "".
func calibrationRuleOf(a *Analysis, s answerShape) string {
	if a == nil || a.Healthy || len(a.Hypotheses) == 0 {
		return ""
	}
	w := a.Hypotheses[0]
	for _, r := range calibrationRules {
		if r.applies(a, w, s) {
			return r.name
		}
	}
	return ""
}

// limitStates are the kinds whose finding is a limit reached, not what
// reached it.
var limitStates = map[Kind]bool{KindOOMKilled: true, KindResourceAlarm: true, KindWorkerPool: true, KindHPAMax: true}

// ownMeasure are, per limit, the kinds of findings that measure the limit
// itself rather than what drove use to it: an autoscaler at its maximum
// scales on its pods' CPU, so their CPU rising is the same fact.
var ownMeasure = map[Kind]map[Kind]bool{KindHPAMax: {KindSaturation: true}}

// drivers are the kinds of findings that say what drives use up to a
// limit.
var drivers = map[Kind]bool{KindSaturation: true, KindLoadSurge: true, KindBacklog: true, KindConnLeak: true,
	KindCacheFull: true, KindSlowQuery: true}

// drivenBy reports whether h has something that drove it to its limit: a
// change that triggered it, a finding of growth, load or slow work among
// its support, or a growth its own findings state.
func drivenBy(h *Hypothesis) bool { return driven(h, true) }

// drivenByKnown is drivenBy with a surge of load counted only when its
// origin is named.
func drivenByKnown(h *Hypothesis) bool { return driven(h, false) }

func driven(h *Hypothesis, anySurge bool) bool {
	if h.Trigger != nil && limitTrigger(h) || h.dbLoad != nil || h.fact("load_source") != "" || h.fact("why") != "" {
		return true
	}
	for _, f := range h.Support {
		if f.Kind == KindLoadSurge && !anySurge && f.fact("load_source") == "" && f.fact("why") == "" {
			continue
		}
		if drivers[f.Kind] && !ownMeasure[h.Kind][f.Kind] {
			return true
		}
	}
	for _, f := range h.Primary {
		if f.fact("leak_rate") != "" || f.fact("growing") != "" {
			return true
		}
	}
	return false
}

// probeAnswerRE is a probe failure that got an HTTP answer from the
// container: the kubelet's "HTTP probe failed with statuscode: 404".
var probeAnswerRE = regexp.MustCompile(`(?i)probe failed with status ?code:? *[1-5]\d\d\b`)

// probeAnswered reports whether a probe of h's containers got an HTTP
// status answer.
func probeAnswered(h *Hypothesis) bool {
	for _, f := range h.Primary {
		if matchLine(probeAnswerRE, f.fact("message")) {
			return true
		}
	}
	return false
}

// kubeletReportsRE is a node condition the kubelet itself set (it is
// alive and says what is wrong), as the node finding's evidence quotes it.
var kubeletReportsRE = regexp.MustCompile(`condition (?:Ready=False|NetworkUnavailable=True)\b`)

// nodeWhy reports whether h, a node NotReady, has something of the node's
// own beyond the NotReady state: a condition the kubelet set, or a finding
// whose subject or host is the node (its kubelet's or system log, a
// pressure).
func nodeWhy(h *Hypothesis) bool {
	node := orWord(h.fact("node"), h.Subject)
	for _, f := range slices.Concat(h.Primary, h.Support) {
		if f.Kind == KindNodeNotReady {
			for _, e := range f.Evidence {
				if matchLine(kubeletReportsRE, e) {
					return true
				}
			}
			continue
		}
		for _, s := range []string{f.Subject, f.fact("host")} {
			if strings.EqualFold(s, node) || len(s) > len(node) && strings.EqualFold(s[:len(node)], node) && strings.ContainsRune("-.", rune(s[len(node)])) {
				return true
			}
		}
	}
	return false
}

// fillsStorage are the kinds of roots that say what fills a disk or a
// volume.
var fillsStorage = map[Kind]bool{KindDiskFull: true, KindWALRetained: true, KindArchiveFailing: true, KindDiskClaim: true, KindVolumeClaim: true,
	KindNodePressure: true, KindEviction: true}

// storageQuestionRE is a question, or the alert it comes from, about a
// disk or a volume filling up.
var storageQuestionRE = regexp.MustCompile(`(?i)(?:volume|disk|filesystem|file system|storage|pvc?)\w*(?:\s+\S+){0,4}?\s*(?:fill|full\b|out of space|almost out)|(?:volume|disk|filesystem|storage)\w*?(?:fill|full|outofspace)|filling ?up|outofspace|no space left|disk ?space|diskpressure|low (?:free )?(?:storage|disk|space)|\binodes?\b|not[ _]enough[ _]space|\benospc\b|insufficient (?:disk |storage )?space|\b(?:grew|grown|resized|expanded|extended|enlarged)\s+(?:the\s+)?(?:[\w-]+\s+){0,2}(?:volume|disk|pvc|filesystem)`)

// usesClaim reports whether w takes a volume or disk claim among its
// findings.
func usesClaim(w *Hypothesis) bool {
	return slices.ContainsFunc(slices.Concat(w.Primary, w.Support), func(f *Finding) bool { return f.Kind == KindVolumeClaim || f.Kind == KindDiskClaim })
}

// unexplainedClaim reports whether the question's alert, checked as a
// claim (a volume or disk filling), is borne out by a hypothesis other
// than w, while w neither fills storage nor uses that hypothesis's
// findings.
func unexplainedClaim(a *Analysis, w *Hypothesis) bool {
	if fillsStorage[w.Kind] || w.fact("why") != "" {
		return false
	}
	for _, h := range a.Hypotheses {
		if h == w || h.Kind != KindVolumeClaim && h.Kind != KindDiskClaim {
			continue
		}
		if h.fact("real") != "" && !explainedBy(h, w) {
			return true
		}
	}
	return false
}

// onlySource reports whether every finding of h, primary and support,
// comes from source src.
func onlySource(h *Hypothesis, src string) bool {
	for _, f := range h.Primary {
		if f.Source != src {
			return false
		}
	}
	for _, f := range h.Support {
		if f.Source != src {
			return false
		}
	}
	return len(h.Primary) > 0
}

// eventWhyFacts are the facts a mechanism sets when it read, in an
// event, why the object fails rather than that it fails: the object
// named as missing, a refusal or denial and by what, a provisioner's
// classified problem, the cloud's error code or quota, the runtime
// handler that does not exist, the pod that holds a volume, the pods
// that preempted, the host ports taken, what the subnet or the node's
// network agent said, the admission controller's state.
var eventWhyFacts = []string{"why", "missing", "refusal", "denial", "problem", "code", "quota", "handler", "multi_attach",
	"preemptors", "host_ports", "subnet_said", "agent_said", "admission", "admission_error", "failure_policy"}

// schedulerChanges pairs what the scheduler says the nodes lack with the
// words of a change that asks for it: a request raised, a taint or a
// toleration, a spread constraint, nodes cordoned, a host port, an
// affinity or selector, a node group or zone removed.
var schedulerChanges = []struct{ says, change *regexp.Regexp }{
	{regexp.MustCompile(`(?i)\binsufficient (?:cpu|memory|ephemeral|nvidia|\S+/gpu)`), regexp.MustCompile(`(?i)\bcpu\b|memory|\brequests?\b|resources|replicas?\b|gpu`)},
	{regexp.MustCompile(`(?i)untolerated taint|had taints? that the pod didn't tolerate`), regexp.MustCompile(`(?i)taint|toleration|gpu|node ?pool|node ?group`)},
	{regexp.MustCompile(`(?i)topology spread`), regexp.MustCompile(`(?i)topology|spread|\bzones?\b|\baz\b|cordon|drain`)},
	{regexp.MustCompile(`(?i)node\(s\) were unschedulable`), regexp.MustCompile(`(?i)cordon|drain|unschedulable|maintenance`)},
	{regexp.MustCompile(`(?i)free ports|host ?ports?`), regexp.MustCompile(`(?i)host ?port|\bports?\b`)},
	{regexp.MustCompile(`(?i)node affinity|node selector|nodeaffinity`), regexp.MustCompile(`(?i)affinity|selector|label|node ?pool|node ?group|\bzones?\b`)},
	{regexp.MustCompile(`(?i)volume node affinity conflict`), regexp.MustCompile(`(?i)\bzones?\b|\baz\b|node ?group|node ?pool|subnet`)},
}

// eventsSayWhy reports whether w, read from events only, has its why in
// the events: a primary event still current (not resolved since) whose
// mechanism read a why in it (eventWhyFacts), or pods the scheduler
// refuses for a lack its message names, with a change that asked for
// that (schedulerChanges). A scheduler's pointer to another object (a
// claim left unbound) says nothing of that object's own reason.
func eventsSayWhy(w *Hypothesis) bool {
	for _, f := range w.Primary {
		if f.fact("resolved") != "" {
			continue
		}
		for _, k := range eventWhyFacts {
			if f.fact(k) != "" {
				return true
			}
		}
	}
	if w.Kind != KindUnschedulable || noTrigger(w) {
		return false
	}
	msg, change := w.fact("message"), changeText(w.Trigger)
	for _, p := range schedulerChanges {
		if matchLine(p.says, msg) && matchLine(p.change, change) {
			return true
		}
	}
	return false
}

// rivals counts the hypotheses after w, not explained by it, whose score is
// at least share of w's.
func rivals(a *Analysis, w *Hypothesis, share float64) int {
	n := 0
	for _, h := range a.Hypotheses {
		if h == w || explainedBy(h, w) || w.Score <= 0 {
			continue
		}
		if h.Score/w.Score >= share {
			n++
		}
	}
	return n
}

// slotsChangeRE is a change that says how a database's connection slots
// were taken or lowered: clients scaled out, a pool resized, the limit
// changed.
var slotsChangeRE = regexp.MustCompile(`(?i)\breplicas?\b|\bscal(?:e|ed|es|ing)\b|pool|max_conn|connection limit|max connections`)

// takesSlots reports whether h, a database refusing connections for lack
// of slots, has a change that says how the slots were taken: one on the
// database itself, or one of a client's replicas, pool or limit.
func takesSlots(h *Hypothesis) bool {
	c := h.Trigger
	if c == nil {
		return false
	}
	return strings.EqualFold(c.Subject, h.Subject) || matchLine(slotsChangeRE, changeText(c)) || matchLine(poolSettingRE, changeText(c))
}

// backlogDrivers are the kinds of findings that say what slowed a queue's
// consumers or filled it: a surge of records, a slow call or statement
// per record.
var backlogDrivers = map[Kind]bool{KindLoadSurge: true, KindSlowOperation: true, KindSlowQuery: true}

// slowedBy reports whether a backlog's support says what slowed its
// consumers: a driver, or a dependency of theirs failing or slow.
func slowedBy(h *Hypothesis) bool {
	for _, f := range h.Support {
		// A call that ran to its own timeout measures the deadline, not
		// the work: what it waited on, or why its timeout is what it is,
		// is not read.
		if f.Kind == KindSlowOperation && cutAtTimeout(f) {
			continue
		}
		if backlogDrivers[f.Kind] || infoOf(f.Kind).class == classDependency && !strings.EqualFold(f.Subject, h.Subject) {
			return true
		}
	}
	return false
}

// ownStateOrLog reports whether some finding of h shows its subject from
// its own log, state or events, not only from its metrics or callers.
func ownStateOrLog(h *Hypothesis) bool {
	for _, f := range slices.Concat(h.Primary, h.Support) {
		if !strings.EqualFold(f.Subject, h.Subject) {
			continue
		}
		if c := f.fact("caller"); c != "" && !strings.EqualFold(c, f.Subject) {
			continue
		}
		if f.Source != SrcMetrics && f.Source != SrcCloudWatch {
			return true
		}
		// A log group read from CloudWatch is a log all the same: its
		// finding quotes a line.
		if f.Source == SrcCloudWatch && f.fact("line") != "" && f.fact("metric") == "" {
			return true
		}
	}
	return false
}

// resolverWhy reports whether a resolver's timeouts come with a finding of
// the resolver's own (its pods throttled, restarted, a limit of its node)
// other than more timeouts.
func resolverWhy(h *Hypothesis) bool {
	for _, f := range h.Support {
		switch f.Kind {
		case KindTimeout, KindDNS, KindResolverTimeout:
			continue
		}
		if strings.EqualFold(f.Subject, h.Subject) || slices.Contains(f.Related, h.Subject) {
			return true
		}
	}
	return false
}

// credentialChangeRE is a change that says what a pull's credentials
// became: another registry or image, a pull secret, a token.
var credentialChangeRE = regexp.MustCompile(`(?i)registr|image|pull|secret|credential|token`)

// credentialChange reports whether c, a hypothesis's trigger, is a change
// of what a pull authenticates with.
func credentialChange(c *Finding) bool {
	return c != nil && (c.fact("image") != "" || matchLine(credentialChangeRE, c.fact("description")+" "+c.Summary))
}

// limitTrigger reports whether h's trigger says how it drove h to its
// limit: an autoscaler at its maximum is driven by its load or its
// capacity, so a change of anything else (a log setting, a feature flag)
// near it does not say what ran it there.
func limitTrigger(h *Hypothesis) bool {
	if h.Kind != KindHPAMax {
		return true
	}
	return matchLine(podCapacityChangeRE, changeText(h.Trigger)) || matchLine(loadChangeRE, changeText(h.Trigger))
}

// loadChangeRE is a change that names load: traffic, requests, clients.
var loadChangeRE = regexp.MustCompile(`(?i)traffic|request rate|\brps\b|load|clients?\b|campaign|crawler|\bbot\b`)

// shownAsNode reports whether some finding of h, a node NotReady, shows
// its subject as a node: a node fact naming it, or evidence about the node
// object itself.
func shownAsNode(h *Hypothesis) bool {
	for _, f := range slices.Concat(h.Primary, h.Support) {
		if n := f.fact("node"); n != "" && strings.EqualFold(n, h.Subject) {
			return true
		}
		for _, e := range f.Evidence {
			if strings.HasPrefix(strings.ToLower(e), "node "+strings.ToLower(h.Subject)+" ") || strings.Contains(strings.ToLower(e), " on node "+strings.ToLower(h.Subject)) {
				return true
			}
		}
	}
	return false
}

// killsApart reports whether another hypothesis holds containers killed at
// their memory limit that w does not take in.
func killsApart(a *Analysis, w *Hypothesis) bool {
	for _, h := range a.Hypotheses {
		if h != w && h.Kind == KindOOMKilled && !explainedBy(h, w) {
			return true
		}
	}
	return false
}

// fileRefusedRE is a process refused access to a file or directory by the
// operating system (not an API's authorization).
var fileRefusedRE = regexp.MustCompile(`(?i)permission ?error|\[errno 13\]|\beacces\b|: permission denied|operation not permitted|read-only file system`)

// fileRefused reports whether the primary findings of h quote a refusal
// of file access as their line.
func fileRefused(h *Hypothesis) bool {
	for _, f := range h.Primary {
		if matchLine(fileRefusedRE, f.fact("line")) || matchLine(fileRefusedRE, f.fact("last_log")) {
			return true
		}
	}
	return false
}

// ownerOrUserRE is evidence of who owns a path or which user a process
// runs as: a uid, an fsGroup, runAsUser, an owner from ls.
var ownerOrUserRE = regexp.MustCompile(`(?i)\buid\b|uid=|fsgroup|runasuser|runasnonroot|runasgroup|\bowned by\b|\bowner\b|\bchown|securitycontext`)

// ownerOrUser reports whether some finding of h says who owns the refused
// path or which user the process runs as.
func ownerOrUser(h *Hypothesis) bool {
	for _, f := range slices.Concat(h.Primary, h.Support) {
		if f.fact("uid") != "" || f.fact("owner") != "" || f.fact("run_as") != "" {
			return true
		}
		for _, v := range f.Facts {
			if matchLine(ownerOrUserRE, v) {
				return true
			}
		}
		for _, e := range f.Evidence {
			if matchLine(ownerOrUserRE, e) {
				return true
			}
		}
	}
	return false
}

// backOffContainerRE is the container a back-off event names.
var backOffContainerRE = regexp.MustCompile(`(?i)back-off restarting failed container (\S+) in pod`)

// otherContainerBackOff reports whether h's support has back-off events of
// a container not named after the workload that restarts, no state of the
// pods' own containers, and no primary finding of h naming that container.
func otherContainerBackOff(h *Hypothesis) bool {
	other := ""
	for _, f := range h.Support {
		if f.Kind != KindCrashLoop {
			continue
		}
		if f.Source != SrcEvents {
			return false
		}
		m := findSubmatch(backOffContainerRE, f.fact("message"))
		if m == nil {
			continue
		}
		c, w := strings.ToLower(m[1]), strings.ToLower(f.Subject)
		if !strings.Contains(w, c) && !strings.Contains(c, w) {
			other = m[1]
		}
	}
	return other != "" && !namesContainer(h.Primary, other)
}

// namesContainer reports whether one of fs names container c in a fact.
func namesContainer(fs []*Finding, c string) bool {
	for _, f := range fs {
		for _, k := range []string{"container", "init_container"} {
			if strings.EqualFold(f.fact(k), c) {
				return true
			}
		}
	}
	return false
}

// throttledUnexplained reports whether h blames CPU throttling with
// nothing read of the limit (the container's cpu limit, a change to it, an
// alert stating it) or of what spends the CPU (a surge of load, a named
// source).
func throttledUnexplained(h *Hypothesis) bool {
	if h.Kind != KindCPUThrottling || h.Trigger != nil || h.fact("cpu_limit") != "" || h.fact("alert") != "" ||
		h.fact("why") != "" || h.fact("load_source") != "" {
		return false
	}
	return !hasKind(h.Support, KindLoadSurge)
}

// partialQuestionRE is a question that says only part of a workload fails:
// "only some pods", "half of the pods", "the other half pulled it fine",
// "nats-0 and nats-1 are fine", "the others are fine".
var partialQuestionRE = regexp.MustCompile(`(?i)\b(?:only|just)\s+(?:some|a few|half|part)\b|\bsome (?:of (?:the|our|its) )?(?:[\w-]+ )?(?:pods|replicas|instances|nodes|hosts|containers)\b|\bhalf (?:of )?(?:the |its |our )?(?:[\w-]+ )?(?:pods|replicas|instances|nodes|hosts)\b|\bother (?:half|pods|replicas|instances)\b|\b[a-z][\w-]*-\d+ and (?:[a-z][\w-]*)?-\d+ (?:are|look|seem) (?:fine|ok|okay|healthy)\b|\bthe others? (?:are|is|look|looks) (?:fine|ok|okay|healthy)\b|\b(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten) (?:of|out of) (?:the |its |our )?(?:\d+|two|three|four|five|six|seven|eight|nine|ten|twelve) (?:[\w-]+ )?(?:pods|replicas|instances|nodes|hosts|containers|tasks|workers)\b|\bthe other (?:\d+|two|three|four|five|six|seven|eight|nine|ten) (?:[\w-]+ )?(?:are|look|seem)\b`)

// placeRE is evidence that places a failure among a workload's pods: the
// node, zone, host or subnet they are on.
var placeRE = regexp.MustCompile(`(?i)\bnodes?\b|\bzones?\b|\bhosts?\b|\bsubnets?\b`)

// placesFailure reports whether some finding of w says where the failing
// part of a workload is: a node, zone or host among its facts, or evidence
// naming one.
func placesFailure(w *Hypothesis) bool {
	for _, f := range slices.Concat(w.Primary, w.Support) {
		for _, k := range []string{"node", "nodes", "host", "zone", "subnet"} {
			if f.fact(k) != "" {
				return true
			}
		}
		for _, e := range f.Evidence {
			if matchLine(placeRE, e) {
				return true
			}
		}
	}
	return false
}

// expiredLine reports whether a primary finding of h quotes a provider's
// refusal of an expired credential as its line.
func expiredLine(h *Hypothesis) bool {
	for _, f := range h.Primary {
		if matchLine(sessionExpiredRE, f.fact("line")) || matchLine(sessionExpiredRE, f.fact("last_log")) {
			return true
		}
	}
	return false
}

// tiedToAsked reports whether a finding about one of the asked subjects
// names w's subject or the host or node w is on: as the node it runs on,
// the host, the dependency it calls (a fact or a related name of the
// asked subject's own finding).
func tiedToAsked(a *Analysis, w *Hypothesis, subjects []string) bool {
	names := []string{w.Subject}
	for _, k := range []string{"host", "node"} {
		if v := w.fact(k); v != "" {
			names = append(names, v)
		}
	}
	for i := range a.Findings {
		f := &a.Findings[i]
		if !slices.ContainsFunc(subjects, func(n string) bool {
			return f.relates(n) || strings.EqualFold(f.fact("caller"), n) || objectNames(f.Object, n)
		}) {
			continue
		}
		for _, n := range names {
			if f.relates(n) {
				return true
			}
			for _, v := range f.Facts {
				if strings.EqualFold(v, n) {
					return true
				}
			}
		}
	}
	return false
}

// genericFailure are the kinds of roots that say how something fails (a
// Job failed, a handshake refused, a container crashing, errors in a log)
// rather than by what mechanism: the line they quote is their only why.
var genericFailure = map[Kind]bool{KindJobFailed: true, KindTLS: true, KindCrashLoop: true, KindAppCrash: true, KindLogErrors: true}

// untrustedRE is a TLS client's refusal of a server certificate it cannot
// verify against its trust store (not an expiry, which says why itself).
var untrustedRE = regexp.MustCompile(`(?i)certificate verify failed|x509: certificate signed by unknown authority|unable to get local issuer certificate|self[- ]signed certificate in certificate chain|PKIX path building failed|unable to find valid certification path`)

// untrustedLine reports whether a primary finding of h quotes a TLS
// client's refusal to trust the server's certificate as its line.
func untrustedLine(h *Hypothesis) bool {
	for _, f := range h.Primary {
		if matchLine(untrustedRE, f.fact("line")) || matchLine(untrustedRE, f.fact("last_log")) {
			return true
		}
	}
	return false
}

// nothingChangedRE is a change record that says nothing changed: a diff
// checked and found identical, a no-op.
var nothingChangedRE = regexp.MustCompile(`(?i)^\s*(?:no change|no-op|noop|unchanged|nothing changed)\b|\bidentical to (?:the )?revision\b|\bno diff\b`)

// noTrigger reports whether h has no change as its trigger, or one whose
// record says nothing changed.
func noTrigger(h *Hypothesis) bool {
	return h.Trigger == nil || matchLine(nothingChangedRE, h.Trigger.fact("description")) || matchLine(nothingChangedRE, h.Trigger.Summary[strings.Index(h.Trigger.Summary, ":")+1:])
}

// memoryChangeRE is a change that says how memory use moved: a release,
// a setting of memory, heap, cache, batch or pool sizes, the limits, the
// replicas or the load.
var memoryChangeRE = regexp.MustCompile(`(?i)memory|\bmem\b|heap|xmx|max-old-space|gomemlimit|cache|batch|buffer|pool|limit|request|resources|replica|concurren|worker|thread|traffic|load|image|version|release|upgrade|\bv?\d+\.\d+`)

// memoryTrigger reports whether c, a memory limit's trigger, can drive
// memory: a deploy of code, or a change whose text names memory's drivers.
func memoryTrigger(c *Finding) bool {
	return c.Kind == KindDeploy || c.fact("image") != "" || matchLine(memoryChangeRE, changeText(c))
}

// drivenWithoutTrigger is drivenBy with the trigger left out.
func drivenWithoutTrigger(h *Hypothesis) bool {
	c := *h
	c.Trigger = nil
	return drivenBy(&c)
}

// heapGrows reports whether h has a steady growth of memory among its
// findings (a leak rate, a growing series).
func heapGrows(h *Hypothesis) bool {
	for _, f := range slices.Concat(h.Primary, h.Support) {
		if f.fact("leak_rate") != "" || f.fact("growing") != "" {
			return true
		}
	}
	return false
}

// threadPoolQueueRE is a series of a process's own queue of work items:
// a runtime's thread pool or an executor.
var threadPoolQueueRE = regexp.MustCompile(`(?i)thread_?pool|threadpool|executor|worker_?queue|work_?queue`)

// alertQuestionRE is a question that begins with an alert as its sender
// prints it (Alertmanager's "[FIRING:1] Name", "alertname = Name").
var alertQuestionRE = regexp.MustCompile(`(?i)^\s*\[FIRING(?::\d+)?\]|^\s*alertname\s*[=:]`)

// heapRises reports whether h's support shows its subject's heap in use
// rising (a series of the runtime's heap).
func heapRises(h *Hypothesis) bool {
	for _, f := range h.Support {
		if f.Kind == KindSaturation && strings.EqualFold(f.Subject, h.Subject) && matchLine(heapMetricRE, f.fact("metric")) {
			return true
		}
	}
	return false
}

// containerMemoryRE is a series of a container's memory as the kernel
// counts it (cAdvisor's working set, RSS), not the runtime's heap.
var containerMemoryRE = regexp.MustCompile(`(?i)^container_memory_|working_set|\brss\b|_rss_`)

// containerGrowthOnly reports whether every growth that drives h, a
// memory limit reached, is of the container's memory (and there is one).
func containerGrowthOnly(h *Hypothesis) bool {
	n := 0
	for _, f := range slices.Concat(h.Primary, h.Support) {
		if f.fact("leak_rate") == "" && f.fact("growing") == "" {
			continue
		}
		if !matchLine(containerMemoryRE, f.fact("metric")) {
			return false
		}
		n++
	}
	return n > 0
}

// ownRelease reports whether h's trigger is a deploy of h's own subject:
// for a release rejected, the release that is rejected.
func ownRelease(h *Hypothesis) bool {
	return h.Trigger != nil && h.Trigger.Kind == KindDeploy && strings.EqualFold(h.Trigger.Subject, h.Subject)
}

// freeCapacityRE is a series of a pool's free capacity: a bulkhead's
// available calls, free slots or permits.
var freeCapacityRE = regexp.MustCompile(`(?i)available_concurrent_calls|_available_(?:permissions|permits|slots|calls)|_free_(?:slots|permits|connections)`)

// poolSizeChangeRE is a change that sets a pool's size: its concurrency,
// its calls, slots or permits.
var poolSizeChangeRE = regexp.MustCompile(`(?i)concurren|max.?calls|bulkhead|pool|permits|slots|max.?conn`)

// ranForHours reports whether every container of h, a memory limit
// reached, whose run before the kill is known ran an hour or more (and one
// is known).
func ranForHours(h *Hypothesis) bool {
	n := 0
	for _, f := range h.Primary {
		d, err := time.ParseDuration(f.fact("ran_for"))
		if err != nil {
			continue
		}
		if d < time.Hour {
			return false
		}
		n++
	}
	return n > 0
}

// tlsNegotiationRE is a TLS handshake refused because the two sides share
// no protocol version or cipher: Java's "Received fatal alert:
// protocol_version" or "handshake_failure", OpenSSL's "wrong version
// number", "no protocols available", "unsupported protocol", "no shared
// cipher", Go's "tls: protocol version not supported".
var tlsNegotiationRE = regexp.MustCompile(`(?i)fatal alert: (?:protocol_version|handshake_failure|insufficient_security)|alert protocol version|protocol version not supported|wrong version number|no protocols available|unsupported protocol|no (?:shared )?cipher(?: suites?)?(?: in common)?\b|no cipher suites in common|no appropriate protocol|inappropriate fallback`)

// primaryLineMatches reports whether a primary finding of h quotes a line
// (its line or last log line) that re matches.
func primaryLineMatches(h *Hypothesis, re *regexp.Regexp) bool {
	for _, f := range h.Primary {
		if matchLine(re, f.fact("line")) || matchLine(re, f.fact("last_log")) {
			return true
		}
	}
	return false
}

// consumerChangeRE is a change that says how fast a queue's consumers
// consume, or where they deliver: their concurrency, batches, polling,
// partitions, replicas, timeouts, limits, retries, the endpoint or
// broker they use.
var consumerChangeRE = regexp.MustCompile(`(?i)concurren|worker|thread|consumer|batch|prefetch|partition|replica|scal|poll|timeout|rate|limit|pool|queue|retr|endpoint|\burl\b|host|\btls\b|dsn|broker|topic|group|image|version|release|upgrade|\bv?\d+\.\d+`)

// consumerTrigger reports whether c, a backlog's trigger, can slow its
// consumers: a deploy of code, a change whose text names what sets their
// pace, or one that says nothing of what it changed (it is not judged).
func consumerTrigger(c *Finding) bool {
	text := c.fact("description")
	if i := strings.Index(c.Summary, ":"); i >= 0 {
		text += c.Summary[i+1:]
	}
	return c.Kind == KindDeploy || c.fact("image") != "" || strings.TrimSpace(text) == "" || matchLine(consumerChangeRE, text)
}

// outOfRangeRE is a consumer's or broker's word that a committed offset
// was out of range, or that segments were deleted for retention.
var outOfRangeRE = regexp.MustCompile(`(?i)out of range|outside the range|offset_out_of_range|offset reset \(at offset|segment deletions|deletable segments`)

// outOfRangeShown reports whether h, an offset reset, shows that the
// group had committed offsets the reset went past: records skipped from a
// committed offset, a pause of the consumer, an out-of-range line or the
// broker's retention deletes.
func outOfRangeShown(h *Hypothesis) bool {
	if h.fact("skipped") != "" || h.fact("paused") != "" {
		return true
	}
	for _, f := range h.Primary {
		for _, e := range f.Evidence {
			if matchLine(outOfRangeRE, e) {
				return true
			}
		}
	}
	return false
}

// insufficientRE is the scheduler's word that the running nodes lack a
// resource the pods request ("3 Insufficient cpu", "Insufficient
// nvidia.com/gpu", "Too many pods"): a new node would have it.
var insufficientRE = regexp.MustCompile(`(?i)\binsufficient \S|\btoo many pods\b`)

// schedulerLacks reports whether the scheduler's reason for h's pods, a
// node limit's, names a resource the running nodes lack: the limit's own
// record of it, or a FailedScheduling of the pods read beside it.
func schedulerLacks(h *Hypothesis) bool {
	if matchLine(insufficientRE, h.fact("scheduler")) {
		return true
	}
	for _, f := range h.Support {
		if f.Kind != KindUnschedulable || !strings.EqualFold(f.Subject, h.Subject) {
			continue
		}
		if matchLine(insufficientRE, f.fact("message")) || slices.ContainsFunc(f.Evidence, insufficientRE.MatchString) {
			return true
		}
	}
	return false
}

// repeatQuestionRE is a question about something delivered, sent, run or
// charged more than once: "the same SMS several times", "emails twice",
// "duplicate orders", "charged twice", "re-sent".
var repeatQuestionRE = regexp.MustCompile(`(?i)\bthe same\b[^.?!]{0,80}\b(?:twice|several times|multiple times|many times|more than once|over and over|again and again|\d+ (?:or \d+ )?times|three times|two times)\b|\bduplicate[ds]? (?:\w+ )?(?:e-?mails?|sms|messages?|notifications?|orders?|charges?|payments?|events?|records?|rows?|invoices?|deliver(?:y|ies)|pushes|webhooks?|jobs?|runs?)\b|\b(?:charged|billed|sent|delivered|received|processed|notified|paid|booked|shipped|emailed|texted) (?:\w+ ){0,3}(?:twice|more than once|several times|multiple times|two or three times|\d+ times)\b|\bre-?(?:sent|delivered|processed) (?:old|past|earlier|already)`)

// onlyDelays are the kinds of roots that make work late, not repeated.
var onlyDelays = map[Kind]bool{KindBacklog: true, KindSaturation: true, KindLatency: true, KindSlowQuery: true, KindSlowOperation: true,
	KindSlowCall: true, KindCPUThrottling: true, KindHPAMax: true, KindNodeLimit: true, KindGCPressure: true, KindLoadSurge: true}

// restartQuestionRE is a question about containers that run and stop
// again: "keeps restarting", "crashlooping", "keeps crashing".
var restartQuestionRE = regexp.MustCompile(`(?i)\brestart(?:s|ing|ed)?\b|\bcrash ?loop(?:s|ing|backoff)?\b|\bcrash(?:es|ing)\b|\bkeeps? (?:dying|crashing|getting killed|being killed)\b`)

// readyQuestionRE is a question about a long-running workload's pods not
// becoming ready: "0/3 ready", "not ready", "never becomes ready".
var readyQuestionRE = regexp.MustCompile(`(?i)\b\d+\s*/\s*\d+\s+(?:ready|available)\b|\b(?:not|never|isn'?t|aren'?t|none) (?:\w+ )?(?:ready|available)\b|\breadiness\b`)

// jobQuestionRE is a question that speaks of a Job, a batch run or a
// migration itself.
var jobQuestionRE = regexp.MustCompile(`(?i)\b(?:cron)?jobs?\b|\bmigrations?\b|\bbatch\b|\bbackfill\b`)

// unfinishedQuestionRE is a question about work that goes on and does not
// end: "not finishing", "never completes", "still running", "hangs".
var unfinishedQuestionRE = regexp.MustCompile(`(?i)\b(?:not|never|doesn'?t|does not|won'?t|will not|isn'?t|is not) (?:finish|finishing|finishes|complete|completing|completes|end|ending|done)\b|\bnever (?:finish|finishes|finished|complete|completes|completed|ends)\b|\bstill running\b|\b(?:runs?|running|taking|takes) (?:forever|for ever|for hours)\b|\bhang(?:s|ing)?\b|\bstuck running\b`)

// wrongValuesQuestionRE is a question about values that are there but
// wrong: "crazy prices", "prices 100x too high", "totals are wrong".
var wrongValuesQuestionRE = regexp.MustCompile(`(?i)\b(?:wrong|incorrect|crazy|bogus|absurd|garbage|nonsense|weird|corrupt(?:ed)?)\s+(?:\w+\s+)?(?:prices?|totals?|amounts?|numbers|values|figures|balances?|sums?|rates?|quantities|stock levels?)\b|\b(?:prices?|totals?|amounts?|numbers|values|figures|balances?|sums?|quantities)\s+(?:are\s+|is\s+|look\s+|looks\s+)?(?:wrong|incorrect|off by|\d+x (?:too )?(?:high|low)|too (?:high|low))\b|\b\d+\s?x too (?:high|low)\b`)

// pendingQuestionRE is a question about pods or claims that wait to be
// placed or created: "stuck Pending", "not scheduled", "ContainerCreating".
var pendingQuestionRE = regexp.MustCompile(`(?i)\bpending\b|\bunschedulable\b|\bnot (?:being )?scheduled\b|\bContainerCreating\b`)

// requestsQuestionRE is a question about a service's answers to requests:
// 5xx, errors returned, latency, requests timing out.
var requestsQuestionRE = regexp.MustCompile(`(?i)\b5\d\d\b|\b5xx\b|\breturn(?:s|ing)? (?:\w+ )?(?:errors?|\d{3})\b|\blatency\b|\bp9\d\b|\brequests? (?:\w+ )?(?:time out|timing out|timed out|fail|failing)\b`)

// ranAndStopped are the kinds of roots whose containers were placed and
// ran before they stopped: their pods are not Pending.
var ranAndStopped = map[Kind]bool{KindCrashLoop: true, KindOOMKilled: true, KindLivenessKill: true, KindAppCrash: true}

// neverRan are the kinds of roots whose pods never started a container:
// they cannot restart.
var neverRan = map[Kind]bool{KindImagePull: true, KindConfigError: true, KindUnschedulable: true, KindInitWait: true,
	KindMountFailure: true, KindQuota: true, KindNodeLimit: true, KindScaleUpRefused: true}

// stopsWork are the kinds of roots whose workload does not do its work at
// all (it cannot start, keeps crashing, or is refused what it needs): what
// it should produce is missing or stale, not wrong.
var stopsWork = map[Kind]bool{KindImagePull: true, KindConfigError: true, KindUnschedulable: true, KindInitWait: true,
	KindMountFailure: true, KindCrashLoop: true, KindOOMKilled: true, KindLivenessKill: true, KindStartFailure: true,
	KindCloudDenied: true, KindRBACDenied: true, KindNodeNotReady: true, KindEviction: true}

// namedInQuestion reports whether the question names w: its subject (or
// the release or component it belongs to) in its words, or an object
// the question names that w bears on.
func namedInQuestion(w *Hypothesis, s answerShape) bool {
	if len(s.subjects) > 0 && bearsOn(w, s.subjects) {
		return true
	}
	q := strings.ToLower(s.question)
	return w.Subject != "" && strings.Contains(q, strings.ToLower(w.Subject))
}

// symptomNotShown reports whether question asks about a symptom that w's
// state cannot show (restarts of pods that never ran, a long-running
// workload's readiness for a Job, a Job not ending for one that gave up,
// wrong values for work that does not run).
func symptomNotShown(w *Hypothesis, question string) bool {
	switch {
	case neverRan[w.Kind] && matchLine(restartQuestionRE, question):
		return true
	case w.Kind == KindJobFailed && matchLine(readyQuestionRE, question) && !matchLine(jobQuestionRE, question):
		return true
	case w.Kind == KindJobFailed && w.fact("reason") == "BackoffLimitExceeded" && matchLine(unfinishedQuestionRE, question):
		return true
	case stopsWork[w.Kind] && matchLine(wrongValuesQuestionRE, question):
		return true
	case ranAndStopped[w.Kind] && matchLine(pendingQuestionRE, question):
		return true
	case w.Kind == KindJobFailed && matchLine(requestsQuestionRE, question) && !matchLine(jobQuestionRE, question):
		return true
	}
	return false
}

// sharedMemoryRE is a process refused room for POSIX shared memory: a
// segment it cannot create or resize, a file of /dev/shm.
var sharedMemoryRE = regexp.MustCompile(`(?i)shared memory segment|/dev/shm\b|\bshm_open\b`)

// capacityDemandChange reports whether c, a node limit's trigger, says
// what asks for the pool's capacity: replicas raised, a node group, pool
// or its limits changed.
func capacityDemandChange(c *Finding) bool {
	if c == nil {
		return false
	}
	t := changeText(c)
	return matchLine(replicasUpRE, t) || matchLine(capacityChangeRE, t) || strings.Contains(strings.ToLower(t), "max size")
}

// jobStateFacts are the facts a failed Job's finding has from its own
// state and its pod's last line alone.
var jobStateFacts = map[string]bool{"job": true, "cronjob": true, "current": true, "pod": true, "reason": true, "line": true, "last_log": true,
	"failed": true, "failed_runs": true, "container": true, "exit_code": true, "last_complete": true, "finished": true, "state_only": true, "message": true}

// jobReadFurther reports whether some primary finding of h, a failed Job,
// has a fact beyond the Job's state and its last line: what a mechanism
// read of the failure (the component that refused, a call, a dependency's
// change, a deadline, a session's lifetime).
func jobReadFurther(h *Hypothesis) bool {
	for _, f := range h.Primary {
		for k, v := range f.Facts {
			if v != "" && !jobStateFacts[k] {
				return true
			}
		}
	}
	return false
}

// quotedNameRE is a name quoted in a line: the column, relation, key or
// file an error is about ("column \"tax_region\" of relation
// \"invoices\" already exists", KeyError: 'customer_id').
var quotedNameRE = regexp.MustCompile(`["'‘“][A-Za-z_/][\w.\-/]*["'’”]`)

// limitTargetRE is a value a change sets: "--limits=memory=2Gi",
// "limits.memory: 2Gi", "memory 1Gi -> 2Gi", "raise memory to 2Gi".
var limitTargetRE = regexp.MustCompile(`(?i)(?:->|→|=>|\bto\b|=|:)\s*"?(\d+(?:\.\d+)?)\s?(ki|mi|gi|ti|kb|mb|gb|tb|k|m|g|t)\b`)

// memoryWordRE is where a change's text speaks of memory.
var memoryWordRE = regexp.MustCompile(`(?i)\bmem(?:ory)?\b`)

// limitChangeNotShown reports whether text, a change's, sets a memory
// value (after its first mention of memory) and none of the values it
// sets is limit, the memory limit the killed containers run with.
func limitChangeNotShown(text, limit string) bool {
	cur, ok := memoryBytes(limit)
	loc := memoryWordRE.FindStringIndex(text)
	if !ok || loc == nil {
		return false
	}
	set := false
	for _, m := range limitTargetRE.FindAllStringSubmatch(text[loc[0]:], -1) {
		v, ok := memoryBytes(m[1] + m[2])
		if !ok {
			continue
		}
		if math.Abs(v-cur) <= 0.1*cur {
			return false
		}
		set = true
	}
	return set
}

// memoryBytes reads a memory quantity as Kubernetes and people write it:
// "1Gi", "512Mi", "2G", "768mb"; binary units are powers of 1024.
func memoryBytes(s string) (float64, bool) {
	s = strings.ToLower(strings.TrimSpace(s))
	units := []struct {
		suffix string
		mult   float64
	}{{"ki", 1 << 10}, {"mi", 1 << 20}, {"gi", 1 << 30}, {"ti", 1 << 40}, {"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12},
		{"k", 1e3}, {"m", 1e6}, {"g", 1e9}, {"t", 1e12}}
	for _, u := range units {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			v, err := strconv.ParseFloat(n, 64)
			return v * u.mult, err == nil && v > 0
		}
	}
	return 0, false
}

// descriptorTriggerRE is a change that bears on a process's open files:
// its limit, its connections or pools, its watchers, its replicas, a
// release of its code.
var descriptorTriggerRE = regexp.MustCompile(`(?i)nofile|ulimit|rlimit|open.?files|descriptor|inotify|watch|limit|connection|keep-?alive|socket|pool|replica|image|version|release|upgrade|\bv?\d+\.\d+`)

// descriptorTrigger reports whether c, a trigger of descriptors running
// out, can bear on them: a deploy of code, or a change whose text does.
func descriptorTrigger(c *Finding) bool {
	return c.Kind == KindDeploy || c.fact("image") != "" || descriptorTriggerRE.MatchString(changeText(c))
}

// diskFillerNamed reports whether h, a node under disk pressure, names
// what fills the disk or shows it filling: a writer or a workload with
// its size, a finding of a disk filling among its support, or a series
// of the node's free space falling during the incident.
func diskFillerNamed(h *Hypothesis) bool {
	for _, f := range slices.Concat(h.Primary, h.Support) {
		if f.fact("filler_workload") != "" || f.fact("writer") != "" || f.fact("filler") != "" ||
			f.Kind == KindSaturation && nodeFilesystemRE.MatchString(f.fact("metric")) {
			return true
		}
		switch f.Kind {
		case KindDiskFull, KindDiskClaim, KindVolumeClaim, KindInodesExhausted:
			return true
		}
	}
	return false
}

// nodeFilesystemRE is a series of a node's file system space (node
// exporter's, the kubelet's).
var nodeFilesystemRE = regexp.MustCompile(`(?i)node_filesystem_(?:avail|free|size)|kubelet_volume_stats|filesystem_(?:usage|available)|fs_(?:avail|usage)`)

// changeNamesMissing reports whether c, a trigger, names what is missing:
// the object ("secret stripe-api" names stripe-api) or the key ("key
// tls.crt in secret web/edge-tls" names tls.crt or edge-tls).
func changeNamesMissing(c *Finding, missing string) bool {
	if c == nil {
		return false
	}
	text, words := changeText(c), strings.Fields(strings.ToLower(missing))
	names := []string{words[len(words)-1]}
	if len(words) > 1 && words[0] == "key" {
		names = append(names, words[1])
	}
	for _, n := range names {
		n = n[strings.LastIndexByte(n, '/')+1:]
		if n != "" && strings.Contains(text, n) {
			return true
		}
	}
	return false
}

// anotherMissing reports whether some finding of a says another object is
// missing than missing (a ServiceAccount beside a Secret), not since
// resolved.
func anotherMissing(a *Analysis, missing string) bool {
	obj := func(m string) string {
		if i := strings.Index(m, " in "); strings.HasPrefix(m, "key ") && i >= 0 {
			m = m[i+4:]
		}
		return strings.ToLower(m[strings.LastIndexByte(m, '/')+1:])
	}
	for i := range a.Findings {
		f := &a.Findings[i]
		if m := f.fact("missing"); m != "" && f.fact("resolved") == "" && obj(m) != obj(missing) {
			return true
		}
	}
	return false
}

// ranToTimeoutRE is an invocation ended by its own timeout: Lambda's
// REPORT line with "Status: timeout", "Task timed out after N seconds".
var ranToTimeoutRE = regexp.MustCompile(`(?i)\bstatus:\s*timeout\b|task timed out after`)

// phaseDurationRE reads a duration as the analyst's facts print it:
// "6796.00 s", "275 ms", "1.2 s".
var phaseDurationRE = regexp.MustCompile(`^\s*(\d+(?:\.\d+)?)\s*(ms|s)\s*$`)

// factSeconds reads a duration fact in seconds.
func factSeconds(v string) (float64, bool) {
	m := findSubmatch(phaseDurationRE, v)
	if m == nil {
		return 0, false
	}
	return secondsOf(m[1], m[2])
}

// phaseBeyondRequests reports whether w, a part of each request (slow
// name lookups, a slow call), states a time per request of an hour or
// more, or a thousand times the highest request latency measured for
// the service (or its caller).
func phaseBeyondRequests(a *Analysis, w *Hypothesis) bool {
	var phase float64
	switch w.Kind {
	case KindDNSSlow:
		phase, _ = factSeconds(w.fact("typical"))
	case KindSlowCall:
		phase, _ = factSeconds(w.fact("now"))
	default:
		return false
	}
	if phase <= 0 {
		return false
	}
	if phase >= 3600 {
		return true
	}
	names := []string{w.Subject, w.fact("caller")}
	for i := range a.Findings {
		f := &a.Findings[i]
		if f.Kind != KindLatency || !slices.ContainsFunc(names, func(n string) bool { return n != "" && strings.EqualFold(n, f.Subject) }) {
			continue
		}
		if lat, ok := factSeconds(f.fact("peak")); ok && phase > 1000*lat {
			return true
		}
	}
	return false
}

// failingNowQuestionRE is a question about failures happening now:
// errors, failing calls, handshakes refused, an outage.
var failingNowQuestionRE = regexp.MustCompile(`(?i)\berrors?\b|\bfail(?:s|ing|ed|ures?)?\b|\b5\d\d\b|\b5xx\b|\bdown\b|\bbroken?\b|\bx509\b|\bhandshakes?\b|\brefused\b|\boutage\b`)

// askerPausedRE is a question whose asker says they paused a rollout.
var askerPausedRE = regexp.MustCompile(`(?i)\b(?:i|we)(?:'ve| have)?\s+(?:just\s+|already\s+)?paused\b`)

// multiAttach reports whether a primary finding of h, a mount failure, is
// a volume still attached to another node (Multi-Attach).
func multiAttach(h *Hypothesis) bool {
	return h.fact("multi_attach") != "" || slices.ContainsFunc(h.Primary, func(f *Finding) bool {
		return f.fact("multi_attach") != "" || strings.Contains(strings.ToLower(f.fact("message")), "multi-attach")
	})
}

// nodeDown reports whether a holds a node NotReady among its hypotheses.
func nodeDown(a *Analysis) bool {
	return a != nil && slices.ContainsFunc(a.Hypotheses, func(h *Hypothesis) bool { return h.Kind == KindNodeNotReady })
}

// runEndKinds are the findings that say how a pod's run ended: evicted,
// killed at its memory limit, preempted, its node gone.
var runEndKinds = []Kind{KindEviction, KindOOMKilled, KindPreempted, KindNodeNotReady, KindVPAEvictLoop}

// runEndRead reports whether h, a migration blocked by an earlier run,
// says how that run ended: its holder's end, kill or disappearance read by
// the mechanism, or a finding of its pods evicted, killed or their node
// gone among its support.
func runEndRead(h *Hypothesis) bool {
	if h.fact("holder_end") != "" || h.fact("holder_oom") != "" || h.fact("holder_gone") != "" || h.fact("why") != "" {
		return true
	}
	for _, k := range runEndKinds {
		if hasKind(h.Support, k) {
			return true
		}
	}
	return false
}

// changeElsewhere reports whether h's trigger is a change of another
// system than h's, related to none of h's findings (not their subject,
// namespace or related objects) and naming nothing its chain reached: it
// relates to h by its time only.
func changeElsewhere(h *Hypothesis) bool {
	c := h.Trigger
	if c == nil || c.Subject == "*" || c.Subject == "" || strings.EqualFold(c.Subject, h.Subject) || namesCause(h, c) {
		return false
	}
	for _, f := range slices.Concat(h.Primary, h.Support) {
		if f.relates(c.Subject) || strings.EqualFold(f.fact("caller"), c.Subject) || f.Namespace != "" && f.Namespace == c.Subject {
			return false
		}
	}
	return !strings.Contains(strings.ToLower(changeText(c)), strings.ToLower(h.Subject))
}

// occupancyRE is a series that counts what a pool holds now: its active or
// busy connections, threads or workers, not its requests or its free
// capacity.
var occupancyRE = regexp.MustCompile(`(?i)connections?_(?:active|busy|in_?use|used|acquired)|(?:active|busy|used)_(?:connections?|threads?|workers?)|threads?_(?:active|busy)|workers?_(?:active|busy)|pool_(?:active|in_?use|used|busy)`)

// occupancyChangeRE is a change that says how a pool takes more: its
// size, its connections, its threads or workers, a timeout of its calls.
var occupancyChangeRE = regexp.MustCompile(`(?i)pool|connection|max.?conn|thread|worker|concurren|timeout`)

// occupancyHeld reports whether h, an occupancy gauge rising, says what
// holds the occupants: a slow query or operation, a database's locks, a
// leak, a dependency of the subject slow or failing, or a change that says
// how the pool takes more.
func occupancyHeld(h *Hypothesis) bool {
	if h.Trigger != nil && !noTrigger(h) && (matchLine(occupancyChangeRE, changeText(h.Trigger)) || matchLine(poolSettingRE, changeText(h.Trigger))) {
		return true
	}
	if heapGrows(h) {
		return true
	}
	for _, f := range h.Support {
		switch f.Kind {
		case KindSlowQuery, KindSlowOperation, KindDBBlocked, KindBulkWriteLocks, KindConnLeak, KindLoadSurge:
			return true
		}
		if infoOf(f.Kind).class == classDependency && !strings.EqualFold(f.Subject, h.Subject) {
			return true
		}
	}
	return false
}

// timeoutCutRE is a line of an operation ended by its own deadline: a
// client's timeout elapsing ("the configured HttpClient.Timeout of 5
// seconds elapsing", "context deadline exceeded", "timed out after 5000
// ms"), a function's REPORT with Status: timeout.
var timeoutCutRE = regexp.MustCompile(`(?i)timeout of [\d.]+ ?(?:s|sec|secs|seconds|ms|milliseconds)\b[^"]{0,20}elaps|\btimed out after\b|deadline exceeded|\bstatus:\s*timeout\b|read timed out|\btimeout (?:of|after) [\d.]+ ?(?:s|ms|seconds)\b`)

// cutAtTimeout reports whether f, a slow operation, is one cut at its own
// timeout.
func cutAtTimeout(f *Finding) bool {
	return matchLine(timeoutCutRE, f.fact("line"))
}

// suspectCauseQuestionRE is a question asking whether a failure it names
// causes its complaint: "is that the cause?", "is that what's breaking
// checkout?", "could this be why …".
var suspectCauseQuestionRE = regexp.MustCompile(`(?i)\b(?:is|was|could|would|might)\s+(?:that|this|it)\s+(?:be\s+)?(?:what'?s|what is|what was|the (?:reason|cause)|why|causing|breaking|behind|responsible)`)

// tiedBeyondItself reports whether some finding of h is of another
// subject than h's, or names a caller other than it: something read
// beyond the failure itself bears on it.
func tiedBeyondItself(h *Hypothesis) bool {
	for _, f := range slices.Concat(h.Primary, h.Support) {
		if !strings.EqualFold(f.Subject, h.Subject) {
			return true
		}
		if c := f.fact("caller"); c != "" && !strings.EqualFold(c, h.Subject) {
			return true
		}
	}
	return false
}
