package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/spf13/cobra"

	"github.com/bringup-tool/bringup/diagnose"
	reportcluster "github.com/bringup-tool/bringup/report/cluster"
	"github.com/bringup-tool/bringup/report/diagnosis"
)

func init() { register(newDiagnoseCmd) }

func newDiagnoseCmd() *cobra.Command {
	var (
		asJSON    bool
		outPath   string
		ruleFiles []string
		torchDir  string
		logs      logFlags
	)
	cmd := &cobra.Command{
		Use:   "diagnose [--json] [-o FILE] [--rules FILE] (PATH... | --srun JOBID | --kube SELECTOR [-n NS] [-c CTR] | --ray URL)",
		Short: "Say what went wrong in an engine boot, from its logs and artifacts",
		Long: `diagnose reads engine logs (vLLM, SGLang, ATOM, torchrun, Ray, PyTorch), and
any other artifact kind a bringup analyzer handles, from files, directories
(recursively) or stdin ("-"), and matches what it finds against a knowledge
base of known torch.compile and startup failures.

It prints the verdict first (what failed, on which ranks, in which phase),
then the evidence (file:line) and the remedy.

--srun, --kube and --ray gather the logs of every node of a multi-node job
first (a Slurm job's output files, the pods' container logs, a Ray
cluster's log files), each node under its own --deadline, and name the node
in every evidence line (NODE/FILE:LINE); the nodes' status follows the
verdict.

Exit status: 0 no error-level finding, 1 error-level finding, 2 could not
run, 3 partial result (--srun/--kube/--ray: a node did not give its logs).`,
		Example: `  bringup diagnose examples/
  bringup diagnose --json -o diagnosis.json logs/
  kubectl logs pod/vllm-0 | bringup diagnose -
  bringup diagnose --srun 4242
  bringup diagnose --kube leaderworkerset.sigs.k8s.io/name=vllm -n serving
  bringup diagnose --ray http://127.0.0.1:8265`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 && !logs.active() {
				return Usagef("diagnose needs at least one PATH: a log file, a directory, or - for stdin (or --srun JOBID, --kube SELECTOR, --ray URL)")
			}
			// A log full of crash loops keeps up to pytrace.MaxTracebacks
			// tracebacks: tens of MiB live, which the GC would let double.
			limitMemory()
			set, err := loadRules(ruleFiles...)
			if err != nil {
				return err
			}
			g, cleanup, err := logs.gather(cmd)
			if err != nil {
				return err
			}
			defer cleanup()
			gathered, name := logInputs(g)
			// A --torch-dir that is no directory explains nothing: said,
			// and the torch the log's frames name is looked at instead.
			badTorch := torchDirProblem(torchDir)
			if badTorch != "" {
				badTorch, torchDir = torchDir, ""
			}
			d, err := diagnose.Run(append(args, gathered...), diagnose.Options{Rules: set, Stdin: cmd.InOrStdin(), TorchDir: torchDir, Name: name})
			if d != nil && badTorch != "" {
				d.Inputs = append(d.Inputs, diagnose.Input{Path: badTorch, Kind: torchDirKind, Error: torchDirProblem(badTorch) + torchDirNote})
			}
			switch {
			case errors.Is(err, diagnose.ErrNoInput):
				for _, in := range d.Inputs {
					fmt.Fprintf(cmd.ErrOrStderr(), "bringup: %s\n", in.Note())
				}
				return Usagef("nothing readable to diagnose in %v (give engine log files or directories that contain them)", args)
			case err != nil:
				return Usagef("%v (check the path)", err)
			}
			noteUnused(cmd.ErrOrStderr(), d)

			w, err := openOutput(cmd, outPath)
			if err != nil {
				return err
			}
			defer w.Abort()
			switch {
			case asJSON && g != nil:
				err = reportcluster.DiagnosisJSON(w, g, d)
			case asJSON:
				err = diagnosis.WriteJSON(w, d)
			case g != nil:
				err = reportcluster.DiagnosisText(w, g, d, w.Style())
			default:
				err = diagnosis.WriteText(w, d, w.Style())
			}
			if err != nil {
				return Usagef("writing the report: %v", err)
			}
			if err := w.Close(); err != nil {
				return err
			}
			switch {
			case g != nil && g.Partial():
				return &ExitError{Code: ExitPartial}
			case d.HasErrors():
				return FoundErrors
			}
			return nil
		},
	}
	logs.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, `write JSON (schema "bringup.diagnosis/v1") instead of text`)
	cmd.Flags().StringVarP(&outPath, "output", "o", "", "write the report to FILE instead of stdout")
	cmd.Flags().StringArrayVar(&ruleFiles, "rules", nil, "add rules from a YAML FILE (repeatable; same format as rules/*.yaml)")
	cmd.Flags().StringVar(&torchDir, "torch-dir", "", "the torch package the boot used (DIR/_dynamo/graph_break_registry.json explains graph-break ids); default: the one the log's frames name, when it exists here")
	return cmd
}

// torchDirKind is the input kind of a --torch-dir that could not be used,
// torchDirNote what that means for the diagnosis.
const (
	torchDirKind = "torch-dir"
	torchDirNote = " (--torch-dir); graph-break ids are explained only from a torch the log's frames name"
)

// torchDirProblem says why --torch-dir dir cannot be the torch package the
// boot used ("no such directory", "not a directory"): a typo, or a path of
// the machine the boot ran on; "" when dir is "" or a directory here.
func torchDirProblem(dir string) string {
	if dir == "" {
		return ""
	}
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "no such directory"
	case err != nil:
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return pe.Err.Error()
		}
		return err.Error()
	case !fi.IsDir():
		return "not a directory"
	}
	return ""
}

// noteUnused tells stderr which inputs were not (fully) used, briefly: a
// directory of thousands of files must not flood the terminal.
func noteUnused(w io.Writer, d *diagnose.Diagnosis) {
	const max = 10
	n := 0
	for _, in := range d.Inputs {
		if in.Error == "" {
			continue
		}
		if n < max {
			fmt.Fprintf(w, "bringup: note: %s\n", in.Note())
		}
		n++
	}
	if n > max {
		fmt.Fprintf(w, "bringup: note: … and %d more inputs not used (see inputs[] in --json)\n", n-max)
	}
}
