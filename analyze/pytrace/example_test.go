package pytrace_test

import (
	"fmt"
	"strings"

	"github.com/bringup-tool/bringup/analyze/pytrace"
	"github.com/bringup-tool/bringup/ingest/enginelog"
)

func ExampleExtractor() {
	log := `(VllmWorker rank=1 pid=191128) ERROR 05-28 18:58:32 [multiproc_executor.py:522] Traceback (most recent call last):
(VllmWorker rank=1 pid=191128) ERROR 05-28 18:58:32 [multiproc_executor.py:522]   File "/venv/lib/python3.12/site-packages/torch/_dynamo/output_graph.py", line 1519, in _call_user_compiler
(VllmWorker rank=1 pid=191128) ERROR 05-28 18:58:32 [multiproc_executor.py:522]     compiled_fn = compiler_fn(gm, self.example_inputs())
(VllmWorker rank=1 pid=191128) ERROR 05-28 18:58:32 [multiproc_executor.py:522] torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:
(VllmWorker rank=1 pid=191128) ERROR 05-28 18:58:32 [multiproc_executor.py:522] AssertionError: failed to get the hash of the compiled graph
(VllmWorker rank=1 pid=191128) ERROR 05-28 18:58:32 [multiproc_executor.py:522]
(VllmWorker rank=1 pid=191128) ERROR 05-28 18:58:32 [multiproc_executor.py:522] Set TORCHDYNAMO_VERBOSE=1 for the internal stack trace
`
	x := pytrace.NewExtractor()
	enginelog.Parse(strings.NewReader(log), "worker.log", x.Add)
	for _, tb := range x.Finish() {
		fin, root := tb.Final(), tb.Root()
		fmt.Printf("%s:%d-%d %s\n", tb.Source, tb.Line, tb.EndLine, tb.Rank)
		fmt.Printf("raised: %s\n", fin.Type)
		fmt.Printf("root:   %s: %s (line %d, in %s)\n", root.Type, root.Message, root.Line, root.Frames[0].Func)
	}
	// Output:
	// worker.log:1-7 rank1
	// raised: torch._dynamo.exc.BackendCompilerFailed
	// root:   AssertionError: failed to get the hash of the compiled graph (line 4, in _call_user_compiler)
}
