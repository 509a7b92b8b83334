package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	reportruns "github.com/bringup-tool/bringup/report/runs"
	"github.com/bringup-tool/bringup/store"
	"github.com/bringup-tool/bringup/watch"
)

func init() { register(newRunsCmd) }

// runsStore is the store the runs subcommands read, from runs' persistent
// flags.
type runsStore struct {
	path     string
	stopLost bool
	grace    time.Duration
	stderr   io.Writer
}

// open opens the store and marks the runs a dead watch left running.
func (r *runsStore) open() (*store.Store, error) {
	path, err := store.Resolve(r.path)
	if err != nil {
		return nil, Usagef("%v", err)
	}
	st, err := store.Open(path)
	if err != nil {
		return nil, Usagef("%v", err)
	}
	checkLost(r.stderr, "bringup runs", st, r.stopLost, r.grace)
	return st, nil
}

// list opens the store and reads its newest n runs (all for 0).
func (r *runsStore) list(n int) ([]*store.Run, error) {
	st, err := r.open()
	if err != nil {
		return nil, err
	}
	defer st.Close()
	rs, err := st.List(n)
	if err != nil {
		return nil, Usagef("%v", err)
	}
	return rs, nil
}

// get opens the store and reads the runs refs name.
func (r *runsStore) get(refs ...string) ([]*store.Run, error) {
	st, err := r.open()
	if err != nil {
		return nil, err
	}
	defer st.Close()
	var rs []*store.Run
	for _, ref := range refs {
		run, err := st.Get(ref)
		if err != nil {
			return nil, Usagef("%v", err)
		}
		rs = append(rs, run)
	}
	return rs, nil
}

func newRunsCmd() *cobra.Command {
	var rs runsStore
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "List, show, compare and tabulate the boots recorded by bringup watch",
		Long: `runs reads the run store that 'bringup watch' records every boot in (embedded
SQLite; --store or $` + store.EnvVar + `, else the user's state directory).
A run is named by its id or "last".

Opening the store, runs (like watch) marks lost every run left "running" by a
watch that is gone (killed, or the machine went down), and names the
processes its boot left running; --stop-lost stops them.`,
		Example: `  bringup runs list
  bringup runs show last --json
  bringup runs compare 12 13
  bringup runs matrix --by VLLM_USE_AOT_COMPILE,VLLM_COMPILE_FULLGRAPH`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return Usagef("unknown runs subcommand %q (use list, show, compare or matrix)", args[0])
			}
			return cmd.Help()
		},
	}
	cmd.PersistentFlags().StringVar(&rs.path, "store", "", "run store file (default $"+store.EnvVar+", else the user's state dir)")
	cmd.PersistentFlags().BoolVar(&rs.stopLost, "stop-lost", false, "stop the processes that lost runs (a killed watch) left running")
	cmd.PersistentFlags().DurationVar(&rs.grace, "grace", 10*time.Second, "with --stop-lost: time between SIGTERM and SIGKILL")
	cmd.PersistentPreRun = func(c *cobra.Command, _ []string) { rs.stderr = c.ErrOrStderr() }
	cmd.AddCommand(newRunsListCmd(&rs), newRunsShowCmd(&rs), newRunsCompareCmd(&rs), newRunsMatrixCmd(&rs))
	return cmd
}

func newRunsListCmd(rs *runsStore) *cobra.Command {
	var listJSON bool
	var limit int
	list := &cobra.Command{
		Use:   "list [--json] [-n N]",
		Short: "List recorded runs, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			runs, err := rs.list(limit)
			if err != nil {
				return err
			}
			if listJSON {
				return reportruns.ListJSON(cmd.OutOrStdout(), runs)
			}
			return reportruns.List(cmd.OutOrStdout(), runs, style(cmd))
		},
	}
	list.Flags().BoolVar(&listJSON, "json", false, `print JSON ("schema": "bringup.runs/v1")`)
	list.Flags().IntVarP(&limit, "limit", "n", 0, "show only the newest N runs")
	return list
}

func newRunsShowCmd(rs *runsStore) *cobra.Command {
	var showJSON bool
	show := &cobra.Command{
		Use:   "show ID|last [--json]",
		Short: "Show one run: outcome, env report, silences, timeline, findings",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return Usagef("runs show takes one run: an id from 'bringup runs list', or last")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			runs, err := rs.get(args[0])
			if err != nil {
				return err
			}
			r := runs[0]
			if showJSON {
				return reportruns.RunJSON(cmd.OutOrStdout(), r)
			}
			return reportruns.Show(cmd.OutOrStdout(), r, style(cmd))
		},
	}
	show.Flags().BoolVar(&showJSON, "json", false, `print JSON ("schema": "bringup.run/v1")`)
	return show
}

func newRunsCompareCmd(rs *runsStore) *cobra.Command {
	var cmpJSON bool
	compare := &cobra.Command{
		Use:   "compare ID|last ID... [--json]",
		Short: "Runs side by side: settings that differ, outcome, phase times, findings",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) < 2 {
				return Usagef("runs compare takes two or more runs, e.g. 'bringup runs compare 12 13' or '12 last'")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			runs, err := rs.get(args...)
			if err != nil {
				return err
			}
			c := store.Compare(runs)
			if cmpJSON {
				return reportruns.JSON(cmd.OutOrStdout(), c)
			}
			return reportruns.Compare(cmd.OutOrStdout(), c, style(cmd))
		},
	}
	compare.Flags().BoolVar(&cmpJSON, "json", false, `print JSON ("schema": "bringup.runs-compare/v1")`)
	return compare
}

func newRunsMatrixCmd(rs *runsStore) *cobra.Command {
	var by string
	var last int
	var matJSON bool
	matrix := &cobra.Command{
		Use:   "matrix --by VAR[,VAR] [--last N] [--json]",
		Short: `Settings × outcome with counts ("hung 5/5")`,
		Long: `matrix groups runs by the values of requested environment variables (as
given to watch with --env/--env-file; "command" groups by command line) and
counts each outcome: the verification matrix of a bring-up, e.g.

  VLLM_COMPILE_FULLGRAPH  VLLM_USE_AOT_COMPILE  RUNS  IDS        OUTCOME
  0                       0                     5     1,2,3,4,5  hung 5/5
  1                       1                     5     6,...      failed 5/5`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var keys []string
			for _, k := range strings.Split(by, ",") {
				if k = strings.TrimSpace(k); k != "" {
					keys = append(keys, k)
				}
			}
			if len(keys) == 0 {
				return Usagef("matrix needs --by VAR[,VAR]: the settings to group runs by")
			}
			runs, err := rs.list(last)
			if err != nil {
				return err
			}
			m := store.BuildMatrix(runs, keys)
			if matJSON {
				return reportruns.JSON(cmd.OutOrStdout(), m)
			}
			return reportruns.Matrix(cmd.OutOrStdout(), m, style(cmd))
		},
	}
	matrix.Flags().StringVar(&by, "by", "", "comma-separated variables (or \"command\") to group by")
	matrix.Flags().IntVar(&last, "last", 0, "only the newest N runs")
	matrix.Flags().BoolVar(&matJSON, "json", false, `print JSON ("schema": "bringup.runs-matrix/v1")`)
	return matrix
}

// checkLost marks the runs a dead watch left "running" as lost and says so
// on w, naming the processes their boots left running (stopped with
// stop). A failure to check is said and does not stop the command.
func checkLost(w io.Writer, prog string, st *store.Store, stop bool, grace time.Duration) {
	if w == nil {
		w = io.Discard
	}
	ls, err := watch.CheckRuns(st, watch.CheckOptions{Stop: stop, Grace: grace})
	if err != nil {
		fmt.Fprintf(w, "%s: checking for runs a killed watch left running: %v\n", prog, err)
	}
	for _, l := range ls {
		r := l.Run
		if l.Marked {
			fmt.Fprintf(w, "%s: run #%d was still marked running, but its watch is gone: marked lost (%s)\n", prog, r.ID, r.Reason)
		}
		if len(l.Stopped) > 0 {
			fmt.Fprintf(w, "%s: run #%d: stopped %d process(es) its boot left running: %s\n", prog, r.ID, len(l.Stopped), procNames(l.Stopped))
		}
		if len(l.Running) > 0 {
			how := "'bringup runs list --stop-lost' stops them"
			if stop {
				how = "they could not be stopped"
			}
			fmt.Fprintf(w, "%s: run #%d (lost) left %d process(es) running: %s; %s\n", prog, r.ID, len(l.Running), procNames(l.Running), how)
		}
	}
}

func procNames(ps []store.BootProc) string {
	var parts []string
	for i, p := range ps {
		if i == 8 {
			parts = append(parts, fmt.Sprintf("and %d more", len(ps)-i))
			break
		}
		parts = append(parts, fmt.Sprintf("pid %d (%s)", p.PID, p.Process))
	}
	return strings.Join(parts, ", ")
}
