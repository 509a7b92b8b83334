// Command genlog writes the benchmark log (package benchlog) to a file:
//
//	go run ./testsupport/benchlog/genlog -mb 1100 -tp 8 -o /tmp/bench.log
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/bringup-tool/bringup/testsupport/benchlog"
)

func main() {
	mb := flag.Int64("mb", 1100, "size in MiB")
	tp := flag.Int("tp", 8, "tensor-parallel ranks")
	out := flag.String("o", "", "file to write (required)")
	vary := flag.Bool("vary", false, "vary the numbers of the metrics and tqdm lines (fewer repeated bodies)")
	flag.Parse()
	if *out == "" || *mb <= 0 || *tp <= 0 {
		fmt.Fprintln(os.Stderr, "genlog: give -o FILE, and -mb and -tp above 0")
		os.Exit(2)
	}
	f, err := os.Create(*out)
	if err == nil {
		err = benchlog.WriteVaried(f, *mb<<20, *tp, *vary)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "genlog:", err)
		os.Exit(1)
	}
}
