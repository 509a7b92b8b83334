package cli

import "bytes"

// runCLI runs bringup with args as a user would, returning the exit code,
// stdout and stderr.
func runCLI(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := Main(args, &out, &errb)
	return code, out.String(), errb.String()
}
