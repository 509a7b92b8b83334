// Package cli holds bringup's subcommands, one file each. A file here parses
// flags and calls packages; it holds no logic of its own.
package cli

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
)

// Version is set at build time with -ldflags "-X .../internal/cli.Version=…".
var Version = "dev"

// Exit codes shared by every command (DESIGN.md "Contracts").
const (
	ExitOK       = 0 // ran, no error-level finding
	ExitFindings = 1 // ran, found at least one error-level finding (or the boot failed/hung)
	ExitUsage    = 2 // could not run: usage, unreadable input, permission
)

// ExitError carries an exit code out of a command. A nil Err with code 1
// means "ran fine, found errors": nothing more is printed.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// Usagef is the error for "could not run": exit 2 with a one-line reason
// that says how to fix it.
func Usagef(format string, a ...any) error {
	return &ExitError{Code: ExitUsage, Err: fmt.Errorf(format, a...)}
}

// FoundErrors is returned by a command that ran and found at least one
// error-level finding.
var FoundErrors = &ExitError{Code: ExitFindings}

var subcommands []func() *cobra.Command

// register adds a subcommand constructor; each command file calls it from
// its init, so adding a command touches no shared file.
func register(newCmd func() *cobra.Command) { subcommands = append(subcommands, newCmd) }

// NewRoot builds the command tree.
func NewRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "bringup",
		Short: "Diagnose, trace, capture and supervise torch.compile boots of LLM serving engines",
		Long: `bringup reads what an engine boot (vLLM, SGLang, ATOM; CUDA and ROCm) leaves
behind under torch.compile, watches a boot as it happens, and says what went
wrong, where, why, and what to do next.`,
		Version:       Version,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return Usagef("unknown command %q (see 'bringup --help')", args[0])
			}
			return cmd.Help()
		},
	}
	for _, c := range subcommands {
		root.AddCommand(c())
	}
	return root
}

// Main runs the CLI and returns the process exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	root := NewRoot()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.Execute()
	if err == nil {
		return ExitOK
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		if ee.Err != nil {
			fmt.Fprintf(stderr, "bringup: %v\n", ee.Err)
		}
		return ee.Code
	}
	// cobra's own errors (unknown flag, wrong arg count) are usage errors.
	fmt.Fprintf(stderr, "bringup: %v (see 'bringup --help')\n", err)
	return ExitUsage
}

// stdoutIsTerminal reports whether colour and progress may be used.
func stdoutIsTerminal() bool { return isTerminal(os.Stdout) }
