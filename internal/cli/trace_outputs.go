package cli

import (
	"bufio"

	"github.com/bringup-tool/bringup/analyze/compiles"
	"github.com/bringup-tool/bringup/atomicfile"
	"github.com/bringup-tool/bringup/report/perfetto"
	"github.com/bringup-tool/bringup/report/tracehtml"
)

// writeTraceOutputs writes the --html report and the --perfetto trace.
func writeTraceOutputs(res *compiles.Result, htmlDir, perfettoPath string) error {
	if htmlDir != "" {
		if err := tracehtml.Write(htmlDir, res, tracehtml.Options{Footer: "Written by bringup " + Version + " trace. Self-contained: no network, open index.html from disk."}); err != nil {
			return Usagef("--html %s: %v", htmlDir, err)
		}
	}
	if perfettoPath != "" {
		f, err := atomicfile.Create(perfettoPath)
		if err != nil {
			return Usagef("--perfetto: cannot write %v", err)
		}
		w := bufio.NewWriter(f)
		err = perfetto.Write(w, res)
		if err == nil {
			err = w.Flush()
		}
		if err != nil {
			f.Abort()
			return Usagef("--perfetto %s: %v", perfettoPath, err)
		}
		if err := f.Commit(); err != nil {
			return Usagef("--perfetto %s: %v", perfettoPath, err)
		}
	}
	return nil
}
