// Command pydump prints what pyproc reads from live Python processes, in
// py-spy's dump layout, with no bucketing or analysis: a tool for checking
// the reader itself. Users want `bringup stacks --pid`.
//
//	go run ./pyproc/internal/pydump PID [PID…]
package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/bringup-tool/bringup/pyproc"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: pydump PID [PID…]")
		os.Exit(2)
	}
	status := 0
	for _, a := range os.Args[1:] {
		pid, err := strconv.Atoi(a)
		if err != nil {
			fmt.Fprintf(os.Stderr, "pydump: %q is not a pid\n", a)
			status = 2
			continue
		}
		start := time.Now()
		p, err := pyproc.Capture(pid)
		took := time.Since(start)
		if err != nil {
			fmt.Fprintf(os.Stderr, "pydump: %v\n", err)
			status = 1
			continue
		}
		fmt.Printf("Process %d: %s\n", p.PID, strings.Join(p.Cmdline, " "))
		fmt.Printf("Python v%s (%s)\n", p.Python, p.Exe)
		for _, th := range p.Threads {
			fmt.Printf("\nThread %d (ident %#x): %q", th.TID, th.Ident, th.Name)
			if th.Main {
				fmt.Print(" [main]")
			}
			if th.Partial {
				fmt.Print(" [partial: running, chain changed while read]")
			}
			fmt.Println()
			for _, f := range th.Frames {
				fmt.Printf("    %s (%s:%d)\n", f.Func, f.File, f.Line)
			}
		}
		fmt.Fprintf(os.Stderr, "pydump: pid %d read in %v\n", pid, took.Round(10*time.Microsecond))
	}
	os.Exit(status)
}
