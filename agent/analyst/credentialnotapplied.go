package analyst

import "fmt"

// A credential rotated half-way: the new password was written to the
// secret store (Vault KV, AWS Secrets Manager, a Kubernetes Secret) but
// never set on the server (the database role, the broker's user), so the
// clients that pick up the new value — a container restarted to reload
// it, a sidecar that re-rendered the file, a pod started since — are
// refused ("password authentication failed for user", "Access denied for
// user", WRONGPASS), while any still holding the old one keep working.
// The opposite of KindCredentialRotated, where the server changed and the
// clients kept the old value: what tells them apart is whether the
// refused client read the credential after the rotation. Detection shares
// credentialrotated.go's reading of refusals and rotations
// (detectRotatedCredential).

// KindCredentialNotApplied is clients refused with a rotated credential
// the server was never given.
const KindCredentialNotApplied Kind = "credential_not_applied"

var credentialNotApplied = &mechanism{
	kind:    KindCredentialNotApplied,
	class:   classCause,
	label:   "credential rotated in the secret store but not on the server",
	related: credentialRotated.related,
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("the credential of %s was rotated at %s UTC (%s)", h.Subject, h.fact("rotated_at"), quote(ReadableLine(h.fact("rotation")), 180))
		d += h.clause(", secret ", "secret")
		d += fmt.Sprintf(", but the server was not given the new password: %s picked up the new credential at %s, and from %s UTC the server refuses it, password authentication fails (%s)",
			h.Subject, orWord(h.fact("reloaded_at"), "since"), h.fact("refused_from"), quote(ReadableLine(h.fact("line")), 180))
		if u := h.fact("user"); u != "" {
			d += fmt.Sprintf(" for user %s", u)
		}
		if x := h.fact("reload_exit"); x != "" {
			d += fmt.Sprintf(". Its previous container did not crash: it stopped on purpose to pick up the new credential (%s)", quote(ReadableLine(x), 160))
		}
		d += ". The rotation changed the stored secret only; the role or user on the server still has the old password"
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		who := orWord(h.fact("user"), "the user of "+h.Subject)
		r.high("Set the rotated password on the server for %s (ALTER ROLE … PASSWORD, or re-run the rotation's step that changes the server), or restore the previous version of the secret, then let %s reconnect", who, h.Subject)
		r.med("Rotate through a mechanism that changes the server and the stored secret together (Vault's database secrets engine, a Secrets Manager rotation function) rather than writing the secret by hand")
		r.low("Alert on authentication failures right after each rotation and check the new credential before clients reload it")
	},
}
