package cli

import (
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/bringup-tool/bringup/analyze/compiles"
	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/report"
	"github.com/bringup-tool/bringup/report/tracejson"
	"github.com/bringup-tool/bringup/report/tracetext"
)

func init() { register(newTraceCmd) }

// memoryLimit is the soft heap limit of bringup trace and diagnose (see
// GOMEMLIMIT).
const memoryLimit = 200 << 20

// limitMemory keeps the heap near memoryLimit on huge inputs, unless the
// user set GOMEMLIMIT: the GC works harder there instead of letting
// garbage double the live set.
func limitMemory() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(memoryLimit)
	}
}

// versionRE is what --torch accepts: a release as torch prints its
// version ("2.10.0", "2.6.0a0+git1234", "2.9.0.dev20250701+cu128").
var versionRE = regexp.MustCompile(`^v?[0-9]+\.[0-9]+(\.[0-9]+)*([a-z]+[0-9]*)?(\.[a-z]+[0-9]*)*(\+[A-Za-z0-9._-]+)?$`)

// progressMin is the input size from which a progress bar is worth drawing.
const progressMin = 64 << 20

func newTraceCmd() *cobra.Command {
	var (
		asJSON    bool
		outPath   string
		htmlDir   string
		perfetto  string
		rulesPath string
		top       int
		torch     string
	)
	cmd := &cobra.Command{
		Use:   "trace [--json] [-o FILE] [--html DIR] [--perfetto FILE] [--rules FILE] [--top N] [--torch VERSION] PATH...",
		Short: "Analyse TORCH_TRACE logs: compiles, failures, graph breaks, recompiles, cache, open phases, rank divergence",
		Long: `trace reads the structured logs PyTorch writes under TORCH_TRACE=<dir> (a file,
or a directory: the rank files dedicated_log_torch_trace_rank_N*.log are found
in it, other files are ignored and listed; .gz files are read decompressed;
FIFOs and devices are refused) and reports, verdict first: failed
compiles (the whole exception chain, the phase that raised, the user code),
phases still running when the log stopped, distinct graph breaks,
recompiles and recompile limits, FX-graph/AOTAutograd cache outcomes (with
what differed on a miss), symbolic shapes, torch.export issues, Inductor
provenance, and where ranks diverge. A folder holding several runs is read
as several runs: ranks are compared within a run only. A compile id that
repeats in one input is told apart by its occurrence ([1/0]#2).

Exit status: 0 no error-level finding, 1 error-level findings (a failed
compile, a phase that never ended, a recompile limit, diverging collectives),
2 could not run (not one TORCH_TRACE record read: each input is named with
why).`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return Usagef("trace needs a TORCH_TRACE file or directory (e.g. bringup trace /tmp/torch_trace)")
			}
			if top < 1 {
				return Usagef("--top %d: give at least 1 (entries per list in the summary)", top)
			}
			if torch != "" && !versionRE.MatchString(torch) {
				return Usagef("--torch %q is not a version: give the torch version of the traced processes, e.g. 2.10.0 or 2.9.0.dev20250701+cu128", report.Clean(torch))
			}
			limitMemory()
			var ruleFiles []string
			if rulesPath != "" {
				ruleFiles = append(ruleFiles, rulesPath)
			}
			set, err := loadRules(ruleFiles...)
			if err != nil {
				return err
			}
			inputs, ignored, err := compiles.Discover(args)
			if err != nil {
				return Usagef("%s", report.Clean(err.Error()))
			}
			var total int64
			for _, in := range inputs {
				total += in.Bytes
			}
			opts := compiles.Options{}
			stderr := cmd.ErrOrStderr()
			if total >= progressMin && isTerminal(os.Stderr) {
				opts.Progress = progressBar(stderr)
			}
			res := compiles.AnalyzeInputs(inputs, ignored, opts)
			if opts.Progress != nil {
				fmt.Fprint(stderr, "\r\x1b[K")
			}
			if unread := compiles.Unread(res); len(unread) == len(res.Inputs) {
				// Not one record: an "OK: 0 compile(s)" would say the trace
				// was healthy when nothing was read.
				for _, u := range unread {
					line := u.Path + ": " + u.Reason
					if strings.Contains(u.Reason, u.Path) { // "open PATH: …"
						line = u.Reason
					}
					fmt.Fprintf(stderr, "bringup: %s\n", report.Clean(line))
				}
				return Usagef("no TORCH_TRACE record read (reasons above): give the files PyTorch writes under TORCH_TRACE=<dir>, or that directory")
			}
			if torch != "" {
				// The traced processes' torch, for version-gated rules:
				// traces record it only since the torch_version artifact.
				res.Versions["torch"] = torch
			}
			res.Findings = compiles.Conclude(res, set)
			if err := writeTraceOutputs(res, htmlDir, perfetto); err != nil {
				return err
			}
			out, err := openOutput(cmd, outPath)
			if err != nil {
				return err
			}
			defer out.Abort()
			if asJSON {
				if err := tracejson.WriteJSON(out, res); err != nil {
					return Usagef("cannot write JSON: %v", err)
				}
			} else {
				opts := tracetext.Options{Style: out.Style(), Top: top}
				err := tracetext.Write(out, res, opts)
				if err == nil {
					err = tracetext.WriteFindings(out, res.Findings, opts)
				}
				if err != nil {
					return Usagef("cannot write the summary: %v", err)
				}
			}
			if err := out.Close(); err != nil {
				return err
			}
			if record.HasError(res.Findings) {
				return FoundErrors
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&asJSON, "json", false, `print the analysis as JSON ("schema": "bringup.trace/v1")`)
	fl.StringVarP(&outPath, "output", "o", "", "write the summary (or JSON) to FILE instead of stdout")
	fl.StringVar(&htmlDir, "html", "", "also write a self-contained HTML report into DIR")
	fl.StringVar(&perfetto, "perfetto", "", "also write the compile phases as Chrome/Perfetto trace-event JSON to FILE")
	fl.StringVar(&rulesPath, "rules", "", "add rules from a YAML FILE to the built-in knowledge base")
	fl.IntVar(&top, "top", 10, "show at most N entries per list in the summary (N ≥ 1)")
	fl.StringVar(&torch, "torch", "", "torch version of the traced processes, for version-gated rules when the trace does not record it (e.g. 2.10.0)")
	return cmd
}

// progressBar draws bytes read on stderr, at most every 100 ms.
func progressBar(w io.Writer) func(done, total int64) {
	var last time.Time
	return func(done, total int64) {
		if time.Since(last) < 100*time.Millisecond && done < total {
			return
		}
		last = time.Now()
		pct := float64(done) / float64(max(total, 1))
		const width = 30
		n := int(pct * width)
		bar := make([]byte, width)
		for i := range bar {
			if i < n {
				bar[i] = '#'
			} else {
				bar[i] = '.'
			}
		}
		fmt.Fprintf(w, "\rreading trace [%s] %3.0f%% %d/%d MiB", bar, pct*100, done>>20, total>>20)
	}
}
