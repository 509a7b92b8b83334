package diagnose

import (
	"slices"
	"strings"
	"testing"
)

// A rank named on a line that an error printed without frames runs on
// over (a supervisor naming the worker, freetoken issue 490) is the
// error's rank; lines that name two ranks name none.
func TestRankFromMessageLines(t *testing.T) {
	checkTopRanks(t, map[string]rankCase{
		"worker name": {"json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)\n" +
			"  ... in triton/runtime/cache.py, get_group\n" +
			"Backend supervisor: backend worker freetoken-TP0-scheduler\n", []string{"TP0"}},
		"two ranks": {"json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)\n" +
			"Backend supervisor: backend worker freetoken-TP0-scheduler\n" +
			"Backend supervisor: backend worker freetoken-TP1-scheduler\n", nil},
		"first line only": {"json.decoder.JSONDecodeError: Expecting value in TP0 metadata\n", nil},
	})
}

// The warning torch prints under a rank prefix as that rank's process
// exits without destroy_process_group, right after an unprefixed
// traceback, names the traceback's rank (vllm issue 11865); after an error
// that has a rank, or far after it, it names none.
func TestRankFromOwnExitWarning(t *testing.T) {
	tb := "Traceback (most recent call last):\n" +
		"  File \"/x/vllm/worker/model_runner_base.py\", line 152, in _wrapper\n" +
		"    raise type(err)(\n" +
		"TypeError: BackendCompilerFailed.__init__() missing 1 required positional argument: 'inner_exception'\n"
	warn := "[rank0]:[W108 20:56:17.821587941 ProcessGroupNCCL.cpp:1250] Warning: WARNING: process group has NOT been destroyed before we destruct ProcessGroupNCCL.\n"
	checkTopRanks(t, map[string]rankCase{
		"right after": {tb + warn, []string{"rank0"}},
		"far after":   {tb + strings.Repeat("DEBUG 01-08 20:56:25 client.py:252] Shutting down MQLLMEngineClient output handler.\n", 5) + warn, nil},
		"no prefix":   {tb + "[W108 20:56:17.821587941 ProcessGroupNCCL.cpp:1250] Warning: WARNING: process group has NOT been destroyed before we destruct ProcessGroupNCCL.\n", nil},
		// torch 2.4+'s wording.
		"new wording": {tb + "[rank0]:[W914 04:53:45.615225908 ProcessGroupNCCL.cpp:1476] Warning: WARNING: destroy_process_group() was not called before program exit, which can leak resources.\n", []string{"rank0"}},
	})
}

// ProcessGroupNCCL's watchdog names the rank in its log prefix, after the
// process group ("[PG 1 Rank 3]", "[PG ID 0 PG GUID 0(default_pg) Rank 2]"):
// a watchdog line with no rank prefix of its own is that rank's (and the
// line is fatal: the watchdog takes the process down after it).
func TestRankFromProcessGroupPrefix(t *testing.T) {
	checkTopRanks(t, map[string]rankCase{
		"detected by watchdog":      {"[E321 02:07:08.465224069 ProcessGroupNCCL.cpp:1664] [PG 1 Rank 3] Exception (either an error or timeout) detected by watchdog at work: 1580, last enqueued NCCL work: 1582, last completed NCCL work: 1579.\n", []string{"rank3"}},
		"timeout at work, named pg": {"[E1003 18:37:01.833621509 ProcessGroupNCCL.cpp:1709] [PG 0 (default_pg) Rank 1] Timeout at NCCL work: 6463, last enqueued NCCL work: 6463, last completed NCCL work: 6462.\n", []string{"rank1"}},
		"heartbeat, guid form":      {"[E409 05:10:01.9 ProcessGroupNCCL.cpp:1595] [PG ID 0 PG GUID 0(default_pg) Rank 2] Heartbeat monitor timed out! Process will be terminated after dumping debug info. workMetaList_.size()=1\n", []string{"rank2"}},
		// A viewer's line numbers before the rank prefix; rank 6 shows only
		// the watchdog's report of the work rank 1 timed out on: one error.
		"same work": {"[1201] [rank1]:[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=77, OpType=ALLGATHER, NumelIn=4, NumelOut=32, Timeout(ms)=600000) ran for 600060 milliseconds before timing out.\n" +
			"[1202] [rank6]:[E321 02:07:08.465224069 ProcessGroupNCCL.cpp:1664] [PG ID 1 PG GUID 1 Rank 6] Exception (either an error or timeout) detected by watchdog at work: 77, last enqueued NCCL work: 78, last completed NCCL work: 76.\n", []string{"rank1", "rank6"}},
		// Another work: rank 6's report is an error of its own.
		"other work": {"[1201] [rank1]:[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=77, OpType=ALLGATHER, NumelIn=4, NumelOut=32, Timeout(ms)=600000) ran for 600060 milliseconds before timing out.\n" +
			"[1202] [rank6]:[E321 02:07:08.465224069 ProcessGroupNCCL.cpp:1664] [PG ID 1 PG GUID 1 Rank 6] Exception (either an error or timeout) detected by watchdog at work: 91, last enqueued NCCL work: 92, last completed NCCL work: 90.\n", []string{"rank1"}},
	})
}

// A process whose error names only its pid is the rank that another of its
// lines names beside the same pid (a Ray worker's own line and torch's
// "[rank2]:" line under it, vllm issue 13121); a pid seen as two ranks
// names none.
func TestRankOfPID(t *testing.T) {
	checkTopRanks(t, map[string]rankCase{
		"ray worker": {"(RayWorkerWrapper pid=1061) ERROR 02-12 02:14:01 worker_base.py:574] RuntimeError: Gloo connectFullMesh failed with [../third_party/gloo/gloo/transport/tcp/pair.cc:144] no error\n" +
			"(RayWorkerWrapper pid=1061) [rank2]:[E212 02:14:01.179080356 ProcessGroupGloo.cpp:143] Gloo connectFullMesh failed\n", []string{"rank2"}},
		"two ranks": {"(RayWorkerWrapper pid=1061) ERROR 02-12 02:14:01 worker_base.py:574] RuntimeError: Gloo connectFullMesh failed with [../third_party/gloo/gloo/transport/tcp/pair.cc:144] no error\n" +
			"(RayWorkerWrapper pid=1061) [rank2]:[E212 02:14:01.179080356 ProcessGroupGloo.cpp:143] one\n" +
			"(RayWorkerWrapper pid=1061) [rank3]:[E212 02:14:01.179080356 ProcessGroupGloo.cpp:143] two\n", []string{"RayWorkerWrapper pid 1061"}},
	})
}

// A traceback cut before its exception line after the engine logged the
// error's text (vLLM's engine: "ERROR … engine.py:474] not enough values
// to unpack", then the traceback) is that error, not a bare "cut off".
func TestCutTracebackTakesLoggedMessage(t *testing.T) {
	log := "ERROR 01-26 14:30:12 [engine.py:474] not enough values to unpack (expected 3, got 2)\n" +
		"ERROR 01-26 14:30:12 [engine.py:474] Traceback (most recent call last):\n" +
		"ERROR 01-26 14:30:12 [engine.py:474]   File \"/v/vllm/engine/multiprocessing/engine.py\", line 462, in run_mp_engine\n" +
		"ERROR 01-26 14:30:12 [engine.py:474]     engine = MQLLMEngine.from_vllm_config(\n"
	f := topError(diagnoseText(t, log, Options{}))
	if f == nil || !strings.Contains(f.Root, "not enough values to unpack (expected 3, got 2)") {
		t.Fatalf("finding: %+v", f)
	}
}

// rankCase is a log and the ranks its top error finding must name.
type rankCase struct {
	log   string
	ranks []string
}

// checkTopRanks diagnoses each case's log and checks the ranks of its top
// error finding.
func checkTopRanks(t *testing.T, cases map[string]rankCase) {
	t.Helper()
	for name, c := range cases {
		f := topError(diagnoseText(t, c.log, Options{}))
		if f == nil {
			t.Fatalf("%s: no error finding", name)
		}
		if !slices.Equal(f.Ranks, c.ranks) {
			t.Errorf("%s: ranks %q, want %q", name, f.Ranks, c.ranks)
		}
	}
}
