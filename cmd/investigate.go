package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"github.com/rootcause/rootcause/agent"
	"github.com/rootcause/rootcause/agent/demo"
	"github.com/rootcause/rootcause/agent/eval"
	"github.com/rootcause/rootcause/agent/evidence/bundle"
	"github.com/rootcause/rootcause/finding"
)

// contextFlag collects repeated --context key=value flags.
type contextFlag map[string]string

func (c contextFlag) String() string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+c[k])
	}
	return strings.Join(parts, ",")
}

func (c contextFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("want key=value (keys: %s)", strings.Join(agent.ContextKeys, ", "))
	}
	c[k] = v
	return nil
}

func (c contextFlag) Type() string { return "key=value" }

// offlineEngine is the engine of the offline commands (investigate, eval,
// demo): the settings' LLM when one is configured, else the analyst.
func offlineEngine(ctx context.Context, v *viper.Viper) (agent.Engine, error) {
	s, err := loadSettings(v)
	if err != nil {
		return nil, err
	}
	return buildEngine(ctx, s.LLM, newResolver(), nil)
}

func newInvestigateCommand(v *viper.Viper) *cobra.Command {
	var (
		bundleDir string
		agentName string
		asJSON    bool
		now       string
		ctxv      = contextFlag{}
		timeout   time.Duration
	)
	cmd := &cobra.Command{
		Use:   "investigate --bundle DIR [--agent NAME] [--context key=value]... [--json] MESSAGE",
		Short: "Investigate an incident bundle in-process, without a server",
		Long: `Investigate runs one investigation against an incident bundle (a directory
of captured evidence: kubernetes/, prometheus/, logs/, changes.json,
cloudwatch/, repos/, runbooks/; see docs/bundles.md) and prints the report,
or the result JSON with --json. No server and no network are needed.

Time windows are measured back from the bundle's captured_at (bundle.json),
or from --now.`,
		Example: `  rootcause investigate --bundle ./incident --context service=checkout "Why is checkout failing?"
  rootcause investigate --bundle ./incident --agent k8s_agent --json "pods restarting in shop"`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if bundleDir == "" {
				return errors.New("--bundle is required: the directory of the incident bundle")
			}
			b, err := bundle.OpenDir(bundleDir)
			if err != nil {
				return err
			}
			if err := b.RequireEvidence(cmd.Context()); err != nil {
				return err
			}
			for _, p := range b.Problems(cmd.Context()) {
				skipped := "the rest of the file is skipped"
				if p.File == "alerts.json" {
					skipped = "none of its alerts is read"
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "rootcause: warning: %s:%d: %s (%s; rootcause bundle check %s lists all)\n", p.File, p.Line, p.What, skipped, bundleDir)
			}
			var clock time.Time
			if now != "" {
				if clock, err = time.Parse(time.RFC3339, now); err != nil {
					return fmt.Errorf("--now: want an RFC 3339 time such as 2026-03-14T10:42:00Z")
				}
			}
			s := &eval.Scenario{Name: filepath.Base(filepath.Clean(bundleDir)), Dir: bundleDir, Bundle: b, Now: clock,
				Title:   args[0],
				Request: eval.Request{AgentName: agentName, Message: args[0], Context: ctxv}}
			return runOffline(cmd, v, s, asJSON, timeout)
		},
	}
	f := cmd.Flags()
	f.StringVar(&bundleDir, "bundle", "", "incident bundle directory (required)")
	f.StringVar(&agentName, "agent", "planner", "agent to run: planner, investigation_agent, k8s_agent, aws_agent, metrics_agent, coding_agent")
	f.BoolVar(&asJSON, "json", false, "print the result as JSON instead of a report")
	f.StringVar(&now, "now", "", "the investigation's clock (RFC 3339); default: the bundle's captured_at")
	f.Var(ctxv, "context", "context key=value (service, environment, namespace, severity, related_alert, time_window, hint); repeatable")
	f.DurationVar(&timeout, "timeout", 2*time.Minute, "time limit of the investigation")
	return cmd
}

// runOffline investigates s in-process and prints the report or JSON.
func runOffline(cmd *cobra.Command, v *viper.Viper, s *eval.Scenario, asJSON bool, timeout time.Duration) error {
	if err := agent.ValidateRequest(s.Request.AgentName, s.Request.Message, s.Request.Context); err != nil {
		return err
	}
	engine, err := offlineEngine(cmd.Context(), v)
	if err != nil {
		return err
	}
	out, err := eval.Run(cmd.Context(), s, engine, eval.Options{Timeout: timeout})
	if err != nil {
		return err
	}
	if out.Status != eval.StatusCompleted {
		return fmt.Errorf("investigation failed: %s", out.Error)
	}
	w := cmd.OutOrStdout()
	if asJSON {
		return writeJSONOut(w, map[string]any{
			"status": out.Status, "result": out.Result, "tools_used": out.ToolsUsed,
			"duration_seconds": out.DurationSeconds,
		})
	}
	return printReport(w, out.Result, s.Request.AgentName, s.Title, out.ToolsUsed, out.DurationSeconds)
}

func printReport(w io.Writer, r *finding.Result, agentName, title string, used []string, secs float64) error {
	if err := finding.Render(w, r, finding.ReportMeta{Title: title, Agent: agentName, Duration: fmt.Sprintf("%.1fs", secs)}); err != nil {
		return err
	}
	if len(used) > 0 {
		_, err := fmt.Fprintf(w, "\nTools used: %s\n", strings.Join(used, ", "))
		return err
	}
	return nil
}

func newEvalCommand(v *viper.Viper) *cobra.Command {
	var asJSON bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "eval [--json] SCENARIO_DIR...",
		Short: "Run scenarios and score the results against their expectations",
		Long: `Eval runs each scenario (an incident bundle plus scenario.json; see
docs/scenarios.md) in-process and prints, per scenario, the result, the tools
used and, when the scenario has "expect", whether it passed and why not.

With --json it prints one JSON object per scenario per line:
{"scenario", "status", "result", "tools_used", "duration_seconds", "passed", "failures"}.

It exits 0 when every scenario ran, whatever the scores, and non-zero when
one could not run (a bad bundle or scenario.json: the error names the file).`,
		Example: `  rootcause eval testdata/scenarios/*
  rootcause eval --json testdata/scenarios/oom-after-deploy`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			engine, err := offlineEngine(cmd.Context(), v)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			var broken []string
			passed, scored := 0, 0
			// Scenarios are investigated on every core at once and printed
			// in the order given, each as soon as those before it are.
			results := make([]chan evalResult, len(args))
			for i := range results {
				results[i] = make(chan evalResult, 1)
			}
			go func() {
				next := make(chan int)
				go func() {
					defer close(next)
					for i := range args {
						next <- i
					}
				}()
				for range min(runtime.GOMAXPROCS(0), len(args)) {
					go func() {
						for i := range next {
							var r evalResult
							if r.s, r.err = eval.LoadScenario(args[i]); r.err == nil {
								r.out, r.err = eval.Run(cmd.Context(), r.s, engine, eval.Options{Timeout: timeout})
							}
							results[i] <- r
						}
					}()
				}
			}()
			for i, dir := range args {
				r := <-results[i]
				s, out := r.s, r.out
				if err := r.err; err != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "rootcause: %v\n", err)
					broken = append(broken, dir)
					continue
				}
				if out.Scored {
					scored++
					if out.Passed {
						passed++
					}
				}
				if asJSON {
					line, err := json.Marshal(out)
					if err != nil {
						return err
					}
					fmt.Fprintln(w, string(line))
					continue
				}
				printEvalOutcome(w, s, out)
			}
			if !asJSON && scored > 0 {
				fmt.Fprintf(w, "\n%d of %d scored scenarios passed\n", passed, scored)
			}
			if len(broken) > 0 {
				return fmt.Errorf("%d scenario(s) could not run: %s", len(broken), strings.Join(broken, ", "))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per scenario per line")
	cmd.Flags().DurationVar(&timeout, "timeout", 2*time.Minute, "time limit of each investigation")
	return cmd
}

// evalResult is one scenario of eval: loaded and run, or the error that
// stopped it.
type evalResult struct {
	s   *eval.Scenario
	out *eval.Outcome
	err error
}

func printEvalOutcome(w io.Writer, s *eval.Scenario, out *eval.Outcome) {
	mark := "ran"
	if out.Scored {
		mark = "PASS"
		if !out.Passed {
			mark = "FAIL"
		}
	}
	fmt.Fprintf(w, "%-4s %s (%s, %.1fs)\n", mark, s.Name, s.Title, out.DurationSeconds)
	if out.Result != nil {
		fmt.Fprintf(w, "     root cause (%.0f%%): %s\n", out.Result.RootCause.Confidence, out.Result.RootCause.Description)
	}
	if out.Error != "" {
		fmt.Fprintf(w, "     error: %s\n", out.Error)
	}
	for _, f := range out.Failures {
		fmt.Fprintf(w, "     - %s\n", f)
	}
}

func newDemoCommand(v *viper.Viper) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "demo [--json]",
		Short: "Investigate the sample incident built into the binary",
		Long: `Demo investigates a sample incident embedded in the binary (a checkout
release that leaks memory until its pods are OOMKilled) with the offline
analyst, and prints the report. It needs no server, no setup and no network.
With llm.* settings configured, the LLM engine investigates instead.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, err := bundle.Open(demo.Bundle(), demo.Name)
			if err != nil {
				return err
			}
			ask := demo.Request()
			s := &eval.Scenario{Name: demo.Name, Dir: demo.Name, Bundle: b, Now: demo.Now(), Title: ask.Message,
				Request: eval.Request{AgentName: ask.AgentName, Message: ask.Message, Context: ask.Context}}
			if !asJSON {
				fmt.Fprintf(cmd.OutOrStdout(), "%s\nAsked at %s: %q (context: %s)\n\n",
					b.Description, demo.Now().Format(time.RFC3339), ask.Message, contextFlag(ask.Context).String())
			}
			return runOffline(cmd, v, s, asJSON, 2*time.Minute)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON instead of a report")
	return cmd
}
