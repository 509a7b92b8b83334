package enginelog_test

import (
	"fmt"
	"strings"

	"github.com/bringup-tool/bringup/ingest/enginelog"
	"github.com/bringup-tool/bringup/record"
)

func ExampleParse() {
	log := `(EngineCore_DP0 pid=26353) (Worker_TP7 pid=26373) ERROR 12-17 13:32:44 [multiproc_executor.py:815] WorkerProc hit an exception.
(EngineCore_DP0 pid=26353) (Worker_TP7 pid=26373) ERROR 12-17 13:32:44 [multiproc_executor.py:815] Traceback (most recent call last):
[2025-10-29 11:23:06 DP0 TP1] Scheduler hit an exception: Traceback (most recent call last):
  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2300, in run_scheduler_process
[rank1]:W0318 06:57:14.000000 166 torch/_dynamo/convert_frame.py:1047] [5/8] torch._dynamo hit config.recompile_limit (8)
`
	st, err := enginelog.Parse(strings.NewReader(log), "boot.log", func(r record.Record) {
		fmt.Printf("%s %d-%d %q %s %q %s %q\n", r.Location(), r.Line, r.EndLine, r.Rank.String(), r.Level, r.Emitter, r.Time.Format("01-02 15:04:05"), r.Text)
	})
	fmt.Println(st.Lines, st.Records, st.Skipped, err)
	// Output:
	// boot.log:1 1-2 "DP0 TP7" ERROR "multiproc_executor.py:815" 12-17 13:32:44 "WorkerProc hit an exception.\nTraceback (most recent call last):"
	// boot.log:3 3-4 "DP0 TP1"  "" 10-29 11:23:06 "Scheduler hit an exception: Traceback (most recent call last):\n  File \"/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py\", line 2300, in run_scheduler_process"
	// boot.log:5 5-5 "rank1" WARNING "torch/_dynamo/convert_frame.py:1047" 03-18 06:57:14 "torch._dynamo hit config.recompile_limit (8)"
	// 5 3 0 <nil>
}
