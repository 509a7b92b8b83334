package cli

import (
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/bringup-tool/bringup/probe"
	"github.com/bringup-tool/bringup/report"
	"github.com/bringup-tool/bringup/report/probetext"
)

func init() { register(newProbeCmd) }

func newProbeCmd() *cobra.Command {
	var (
		specText string
		out      string
		knobs    []string
	)
	cmd := &cobra.Command{
		Use:   "probe [--spec SPEC] [--out DIR] -- CMD ARGS...",
		Short: "Run a boot with the exception probe in every Python process and say who really raised",
		Long: `probe runs CMD with bringup's probe injected into every Python process of
the boot (a sitecustomize.py first on PYTHONPATH; fork, spawn and forkserver
children included; a sitecustomize it shadows still runs) and no other
supervision: the boot's stdin, stdout and stderr are its own, and its exit
status is probe's. Afterwards probe prints on stderr what the probe recorded,
verdict first: for each matching exception the instruction that raised it
(decoded from the traceback with dis), the expression it evaluated, the code
object (and whether Dynamo generated it), the module object it ran on and the
likely mechanism; then the Python processes that did not load the probe and
why (-I, -E, -S, or a launcher that dropped PYTHONPATH).

SPEC selects exceptions: TYPE[:REGEX][;TYPE[:REGEX]...], e.g. KeyError,
KeyError:in_proj, torch._dynamo.exc.Unsupported, any. A named type is also
recorded where it is raised (Python 3.12+, sys.monitoring); "any" only where
an exception is reported (uncaught, logged with exc_info, printed). REGEX is
searched in str(exception).

Reports are written to DIR/probe (default: a new directory under the user
cache directory), one JSON file per process (schema bringup.probe/v1; see
docs/probe.md).`,
		Example: `  bringup probe --spec KeyError:in_proj -- vllm serve MODEL -O3
  bringup probe --spec 'KeyError;AttributeError' --out run1 -- python repro.py`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return Usagef("probe needs a command after --, e.g. bringup probe --spec KeyError -- python repro.py")
			}
			spec, err := probe.ParseSpec(specText)
			if err != nil {
				return Usagef("--spec: %v", err)
			}
			if out == "" {
				if out, err = defaultProbeDir(); err != nil {
					return Usagef("no --out given and %v", err)
				}
			} else if entries, err := os.ReadDir(filepath.Join(out, probe.SubDir)); err == nil && len(entries) > 0 {
				return Usagef("--out %s already holds a probe directory with files: give a new directory, so this boot's reports are not mixed with another's", out)
			}
			dep, err := probe.Inject(out, spec, probe.Options{Knobs: knobs})
			if err != nil {
				return Usagef("%v", err)
			}
			code, scanner, err := dep.Run(args, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
			if err != nil {
				return Usagef("%v", err)
			}
			reports, problems := probe.ReadDir(out)
			probetext.Write(cmd.ErrOrStderr(), report.Style{Color: isTerminal(os.Stderr)}, probetext.Input{
				Dir:      dep.Dir,
				Spec:     spec.String(),
				Reports:  reports,
				Problems: problems,
				Missing:  dep.Missing(scanner.Python(), reports),
				Scanned:  true,
			})
			if code != 0 {
				return &ExitError{Code: code}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&specText, "spec", "any", "exceptions to record: TYPE[:REGEX][;...] or any")
	f.StringVar(&out, "out", "", "run directory for the probe and its reports (default: new under the user cache dir)")
	f.StringArrayVar(&knobs, "knob", nil, "another environment variable (or PREFIX*) each report records, on top of the engines' knobs")
	return cmd
}

func defaultProbeDir() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(base, "bringup", "probe")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return os.MkdirTemp(dir, time.Now().Format("20060102-150405-"))
}
