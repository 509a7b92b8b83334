// Command bringup diagnoses, traces, captures and supervises torch.compile
// boots of LLM serving engines. See README.md.
package main

import (
	"os"

	"github.com/bringup-tool/bringup/internal/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr)) }
