package cli

import (
	"bufio"
	"os"

	"github.com/bringup-tool/bringup/analyze/compiles"
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
		f, err := os.Create(perfettoPath)
		if err != nil {
			return Usagef("--perfetto: cannot write %s: %v", perfettoPath, err)
		}
		w := bufio.NewWriter(f)
		if err := perfetto.Write(w, res); err != nil {
			f.Close()
			return Usagef("--perfetto %s: %v", perfettoPath, err)
		}
		if err := w.Flush(); err != nil {
			f.Close()
			return Usagef("--perfetto %s: %v", perfettoPath, err)
		}
		if err := f.Close(); err != nil {
			return Usagef("--perfetto %s: %v", perfettoPath, err)
		}
	}
	return nil
}
