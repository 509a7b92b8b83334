package cli

import (
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/bringup-tool/bringup/atomicfile"
	"github.com/bringup-tool/bringup/report"
	"github.com/bringup-tool/bringup/rules"
)

// output is where a command writes its report: the file of -o FILE, or
// the command's stdout when FILE is "" or "-". The file is written beside
// FILE and renamed over it by Close (atomicfile), so a symbolic link or
// another file already at FILE is never written through, and a report cut
// short leaves FILE as it was.
type output struct {
	io.Writer
	f    *atomicfile.File
	path string
	tty  bool
}

// openOutput opens -o FILE for a command's report; Close puts it in place
// and reports a failed write, Abort (deferred) drops an unfinished one.
func openOutput(cmd *cobra.Command, path string) (*output, error) {
	if path == "" || path == "-" {
		w := cmd.OutOrStdout()
		return &output{Writer: w, tty: w == io.Writer(os.Stdout) && stdoutIsTerminal()}, nil
	}
	f, err := atomicfile.Create(path)
	if err != nil {
		return nil, Usagef("-o: %v (choose a writable path)", err)
	}
	return &output{Writer: f, f: f, path: path}, nil
}

// Style colours text only when it goes to a terminal.
func (o *output) Style() report.Style { return report.Style{Color: o.tty} }

// Close puts the -o file in place; closing twice, or closing stdout, does
// nothing.
func (o *output) Close() error {
	if o.f == nil {
		return nil
	}
	f := o.f
	o.f = nil
	if err := f.Commit(); err != nil {
		return Usagef("-o %s: %v (choose a writable path)", o.path, err)
	}
	return nil
}

// Abort drops the -o file unless Close put it in place: a command that
// stops on an error leaves FILE as it was.
func (o *output) Abort() {
	if o.f != nil {
		o.f.Abort()
		o.f = nil
	}
}

// style is the colour of a report written to the command's stdout.
func style(cmd *cobra.Command) report.Style {
	return report.Style{Color: cmd.OutOrStdout() == io.Writer(os.Stdout) && stdoutIsTerminal()}
}

// loadRules is the built-in rule set plus the files of --rules.
func loadRules(files ...string) (*rules.Set, error) {
	set, err := rules.Builtin()
	if err != nil {
		return nil, Usagef("built-in rules do not load: %v (a broken build: reinstall bringup)", err)
	}
	for _, f := range files {
		if err := set.LoadFile(f); err != nil {
			return nil, Usagef("--rules: %v (fix the rule file or leave it out)", err)
		}
	}
	return set, nil
}
