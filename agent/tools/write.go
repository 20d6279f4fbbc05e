package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/mergeconf"
)

// Bounds of the write tools.
const (
	DefaultCommandTimeout = 30 * time.Second
	MaxCommandTimeout     = 5 * time.Minute
	MaxCommandOutput      = 64 << 10 // per stream
)

// CommandOutput is the result of shell and docker_exec.
type CommandOutput struct {
	Command    []string `json:"command"`
	ExitCode   int      `json:"exit_code"`
	Stdout     string   `json:"stdout"`
	Stderr     string   `json:"stderr"`
	Truncated  bool     `json:"truncated"` // an output stream was cut at 64 KiB
	DurationMS int64    `json:"duration_ms"`
}

func writeTools() []Tool {
	inv := []string{AgentInvestigation}
	return []Tool{
		{
			Spec: Spec{
				Name: "shell",
				Description: "Run a command on the rootcause host. CHANGES THINGS: refused unless the team enables write actions. " +
					"Only commands whose program is in tools.shell.allowed_commands run; the command is split into words " +
					"(quotes group words) and run directly, without a shell: no pipes, redirection, globbing or variables.",
				Parameters:  evSchema(`{"command": {"type": "string", "description": "program and arguments, e.g. systemctl restart nginx"}}`, "command"),
				Integration: IntegrationShell, ReadOnly: false, Agents: inv,
			},
			Run: runShell,
		},
		{
			Spec: Spec{
				Name: "docker_exec",
				Description: "Run a command inside a Docker container on the host (docker exec). CHANGES THINGS: refused unless the team " +
					"enables write actions and tools.docker.enabled is true. The command is split into words and run without a shell.",
				Parameters: evSchema(`{
					"container": {"type": "string", "description": "container name or ID"},
					"command": {"type": "string", "description": "program and arguments to run in the container"}
				}`, "container", "command"),
				Integration: IntegrationDocker, ReadOnly: false, Agents: inv,
			},
			Run: runDockerExec,
		},
		{
			Spec: Spec{
				Name: "db_write",
				Description: "Run a writing SQL statement on a configured database. CHANGES THINGS: refused unless the team enables write actions. " +
					"Not available in this build (no SQL driver is included).",
				Parameters: evSchema(`{
					"database": {"type": "string", "description": "configured database name"},
					"statement": {"type": "string", "description": "SQL statement"}
				}`, "database", "statement"),
				Integration: IntegrationDatabase, ReadOnly: false, Agents: inv,
			},
			Run: runDBWrite,
		},
	}
}

func runShell(ctx context.Context, env *Env, raw json.RawMessage) (any, error) {
	var a struct{ Command string }
	if err := decodeArgs("shell", raw, &a); err != nil {
		return nil, err
	}
	if err := writeAllowed(env, "shell"); err != nil {
		return nil, err
	}
	args, err := SplitCommand(a.Command)
	if err != nil {
		return nil, evidence.Errorf("shell", evidence.CodeInvalid, "%v", err)
	}
	settings := env.Settings[IntegrationShell]
	allowed := evStrings(settings["allowed_commands"])
	if len(allowed) == 0 {
		return nil, evidence.Errorf("shell", evidence.CodeNotConfigured, "no command is allowed: an admin must list programs in tools.shell.allowed_commands")
	}
	if !slices.Contains(allowed, args[0]) {
		return nil, evidence.Errorf("shell", evidence.CodeInvalid, "command %q is not in tools.shell.allowed_commands (%s)", args[0], strings.Join(allowed, ", "))
	}
	return RunCommand(ctx, args, evTimeout(settings))
}

func runDockerExec(ctx context.Context, env *Env, raw json.RawMessage) (any, error) {
	var a struct{ Container, Command string }
	if err := decodeArgs("docker_exec", raw, &a); err != nil {
		return nil, err
	}
	if err := writeAllowed(env, "docker_exec"); err != nil {
		return nil, err
	}
	settings := env.Settings[IntegrationDocker]
	if en, _ := settings["enabled"].(bool); !en {
		return nil, evNotConfigured("docker", "docker")
	}
	if a.Container == "" || strings.HasPrefix(a.Container, "-") || strings.ContainsAny(a.Container, " \t\n") {
		return nil, evidence.Errorf("docker_exec", evidence.CodeInvalid, "container %q is not a container name or ID", a.Container)
	}
	args, err := SplitCommand(a.Command)
	if err != nil {
		return nil, evidence.Errorf("docker_exec", evidence.CodeInvalid, "%v", err)
	}
	docker, err := exec.LookPath("docker")
	if err != nil {
		return nil, evidence.Errorf("docker", evidence.CodeUnavailable, "the docker CLI is not installed on this host")
	}
	return RunCommand(ctx, append([]string{docker, "exec", a.Container}, args...), evTimeout(settings))
}

func runDBWrite(ctx context.Context, env *Env, raw json.RawMessage) (any, error) {
	var a struct{ Database, Statement string }
	if err := decodeArgs("db_write", raw, &a); err != nil {
		return nil, err
	}
	if err := writeAllowed(env, "db_write"); err != nil {
		return nil, err
	}
	return nil, evidence.Errorf("database", evidence.CodeNotConfigured,
		"db_write is not available in this build: rootcause includes no SQL database driver, so it cannot run %q on %q", evShort(a.Statement, 80), a.Database)
}

// writeAllowed re-checks, inside the tool, what Session checks before the
// call: a tool that changes things runs only with write actions on.
func writeAllowed(env *Env, tool string) error {
	if env == nil || !env.WriteActions {
		return evidence.Errorf(tool, evidence.CodeNotConfigured, "tool %q changes things and is refused: the team's feature_flags.enable_write_actions is not true", tool)
	}
	return nil
}

// SplitCommand splits a command line into words like a POSIX shell would
// split a simple command ('single' and "double" quotes group, backslash
// escapes), with no expansion of any kind.
func SplitCommand(s string) ([]string, error) {
	var (
		out   []string
		cur   strings.Builder
		inTok bool
		quote rune
	)
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else if r == '\\' && quote == '"' && i+1 < len(rs) && (rs[i+1] == '"' || rs[i+1] == '\\') {
				i++
				cur.WriteRune(rs[i])
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inTok = r, true
		case r == '\\' && i+1 < len(rs):
			i++
			cur.WriteRune(rs[i])
			inTok = true
		case r == ' ' || r == '\t' || r == '\n':
			if inTok {
				out = append(out, cur.String())
				cur.Reset()
				inTok = false
			}
		default:
			cur.WriteRune(r)
			inTok = true
		}
	}
	if quote != 0 {
		return nil, errors.New("unterminated quote in command")
	}
	if inTok {
		out = append(out, cur.String())
	}
	if len(out) == 0 {
		return nil, errors.New("empty command")
	}
	return out, nil
}

// capWriter keeps the first max bytes written and notes the rest.
type capWriter struct {
	buf bytes.Buffer
	max int
	cut bool
}

func (w *capWriter) Write(p []byte) (int, error) {
	if room := w.max - w.buf.Len(); room > 0 {
		w.buf.Write(p[:min(room, len(p))])
	}
	if w.buf.Len()+len(p) > w.max {
		w.cut = true
	}
	return len(p), nil
}

// RunCommand runs args (no shell) in its own process group with a timeout;
// on timeout or cancellation the whole group is killed. A non-zero exit is
// a result, not an error.
func RunCommand(ctx context.Context, args []string, timeout time.Duration) (*CommandOutput, error) {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, args[0], args[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	stdout, stderr := &capWriter{max: MaxCommandOutput}, &capWriter{max: MaxCommandOutput}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	start := time.Now()
	err := cmd.Run()
	out := &CommandOutput{Command: args, DurationMS: time.Since(start).Milliseconds()}
	out.Stdout = strings.ToValidUTF8(stdout.buf.String(), "\uFFFD")
	out.Stderr = strings.ToValidUTF8(stderr.buf.String(), "\uFFFD")
	out.Truncated = stdout.cut || stderr.cut
	if cctx.Err() != nil {
		return out, evidence.Errorf(evShort(args[0], 40), evidence.CodeUnavailable, "command killed after %s: %v", timeout, cctx.Err())
	}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		out.ExitCode = ee.ExitCode()
	case err != nil:
		return nil, evidence.Errorf(evShort(args[0], 40), evidence.CodeUnavailable, "running %s: %v", args[0], err)
	}
	return out, nil
}

func evTimeout(settings map[string]any) time.Duration {
	if t, ok := mergeconf.Number(settings["timeout_seconds"]); ok && t > 0 {
		return min(time.Duration(t*float64(time.Second)), MaxCommandTimeout)
	}
	return DefaultCommandTimeout
}

// evStrings reads a settings list of strings.
func evStrings(v any) []string {
	switch l := v.(type) {
	case []string:
		return l
	case []any:
		var out []string
		for _, x := range l {
			if s, ok := x.(string); ok && s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

func evShort(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return fmt.Sprintf("%s…", s[:n])
}
