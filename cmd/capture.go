package cmd

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"github.com/rootcause/rootcause/agent/capture"
	"github.com/rootcause/rootcause/agent/evidence/live/kube"
	"github.com/rootcause/rootcause/agent/evidence/live/prom"
	"github.com/rootcause/rootcause/outbound"
)

func newCaptureCommand(v *viper.Viper) *cobra.Command {
	var (
		out, since, kubeconfig, kubeContext, promURL, tracesURL, maxSize string
		namespaces                                                       []string
		inCluster                                                        bool
	)
	cmd := &cobra.Command{
		Use:   "capture --out DIR [--namespace NS]... [--since 2h] [--kubeconfig F | --in-cluster] [--prometheus URL] [--traces URL] [--max-size 200MB]",
		Short: "Write an incident bundle from a live cluster, Prometheus and traces",
		Long: `Capture writes an incident bundle (docs/bundles.md) from live systems: every
Kubernetes kind rootcause reads, events, the current and previous logs of
pods that are not ready or restarted (bounded per container) and the recent
logs of healthy pods as room allows, the raw samples of the Prometheus series
of the window, traces of the window, rollout history (the ReplicaSets), and
bundle.json with captured_at and what was cut to fit --max-size. Secret
values are never read: Secrets are captured with their key names only.
Progress goes to stderr. rootcause investigate --bundle DIR on the result
gives the answer a live investigation gives now.

The cluster comes from --kubeconfig (default: $KUBECONFIG, ~/.kube/config)
and --context, or from the pod's service account with --in-cluster.`,
		Example: `  rootcause capture --out ./incident --namespace shop --prometheus http://prometheus:9090
  rootcause capture --out ./incident --in-cluster --since 6h --max-size 1GB`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return errors.New("--out is required: the directory of the bundle to write")
			}
			o := capture.Options{Out: out, Namespaces: namespaces, Progress: cmd.ErrOrStderr()}
			var err error
			if o.Since, err = time.ParseDuration(since); err != nil || o.Since <= 0 {
				return fmt.Errorf("--since: want a positive duration such as 2h or 30m, got %q", since)
			}
			if o.MaxBytes, err = parseSize(maxSize); err != nil {
				return fmt.Errorf("--max-size: %w", err)
			}
			if inCluster && kubeconfig != "" {
				return errors.New("--kubeconfig and --in-cluster exclude each other")
			}
			k, err := kube.New(kube.Config{Kubeconfig: kubeconfig, Context: kubeContext, InCluster: inCluster})
			if err != nil {
				if kubeconfig != "" || inCluster || promURL == "" {
					return err
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "capture: no Kubernetes cluster (%v): capturing Prometheus only\n", err)
			} else {
				o.Kube = k
			}
			if promURL != "" {
				guard, err := operatorGuard(promURL)
				if err != nil {
					return fmt.Errorf("--prometheus: %w", err)
				}
				m, err := prom.New(prom.Config{URL: promURL, Guard: guard})
				if err != nil {
					return fmt.Errorf("--prometheus: %w", err)
				}
				o.Metrics = m
			}
			if tracesURL != "" {
				if capture.OpenTraces == nil || capture.DefaultTraceWriter == nil {
					return errors.New("--traces: this build cannot capture traces")
				}
				guard, err := operatorGuard(tracesURL)
				if err != nil {
					return fmt.Errorf("--traces: %w", err)
				}
				if o.Traces, err = capture.OpenTraces(tracesURL, guard); err != nil {
					return fmt.Errorf("--traces: %w", err)
				}
				o.TraceWriter = capture.DefaultTraceWriter
			}
			_, err = capture.Run(cmd.Context(), o)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&out, "out", "", "directory of the bundle to write (must not exist or be empty)")
	f.StringArrayVar(&namespaces, "namespace", nil, "namespace to capture; repeatable (default: every namespace)")
	f.StringVar(&since, "since", "2h", "how far back logs and metrics go")
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)")
	f.StringVar(&kubeContext, "context", "", "kubeconfig context (default: the current one)")
	f.BoolVar(&inCluster, "in-cluster", false, "use the pod's service account")
	f.StringVar(&promURL, "prometheus", "", "Prometheus base URL, e.g. http://prometheus:9090")
	f.StringVar(&tracesURL, "traces", "", "trace backend base URL (Jaeger query or Tempo)")
	f.StringVar(&maxSize, "max-size", "200MB", "size cap of the bundle (kB, MB, GB); what is cut is listed in bundle.json")
	return cmd
}

// operatorGuard lets capture reach the address the operator gave on the
// command line (loopback and private addresses included), and nothing else.
func operatorGuard(raw string) (*outbound.Guard, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return nil, fmt.Errorf("%q is not an http(s) URL", raw)
	}
	allow, err := outbound.ParseAllowlist([]string{u.Hostname()})
	if err != nil {
		return nil, err
	}
	return outbound.New(allow), nil
}

// parseSize reads 200MB, 1GB, 512kB or a byte count.
func parseSize(s string) (int64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		m      int64
	}{{"GB", 1 << 30}, {"MB", 1 << 20}, {"KB", 1 << 10}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.m
			break
		}
	}
	n, err := strconv.ParseFloat(t, 64)
	if err != nil || n <= 0 || math.IsInf(n, 0) {
		return 0, fmt.Errorf("want a size such as 200MB or 1GB, got %q", s)
	}
	return int64(n * float64(mult)), nil
}
