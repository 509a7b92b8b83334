package cli

import "github.com/bringup-tool/bringup/analyze/compiles"

// writeTraceOutputs writes the --html and --perfetto outputs.
func writeTraceOutputs(res *compiles.Result, htmlDir, perfettoPath string) error {
	if htmlDir != "" || perfettoPath != "" {
		return Usagef("--html and --perfetto are not wired in this build yet")
	}
	return nil
}
