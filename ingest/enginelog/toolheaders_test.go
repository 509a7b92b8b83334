package enginelog

import (
	"strings"
	"testing"

	"github.com/bringup-tool/bringup/record"
)

// TestHIPLogHeader: ROCm's runtime log (AMD_LOG_LEVEL) leads each line
// with ":LEVEL:file.cpp:LINE: "; level 1 is an error (rocm-systems#2209's
// IPC failure came back ok), and a colon-led line that is not one stays text.
func TestHIPLogHeader(t *testing.T) {
	in := ":1:rocmemory.cpp :1043: Failed to create memory for IPC, failed with hsa_status: 4097\n" +
		":3:hip_device_runtime.cpp   :652 : 1234 us: hipGetDevice ( 0x7ffd )\n" +
		":1:hip_memory.cpp:3354: IPC memory creation failed for memory: 0xbae00000\n" +
		":1:not a header\n"
	recs, _ := parseBytes(t, []byte(in))
	if len(recs) != 3 {
		t.Fatalf("%d records: %+v", len(recs), recs)
	}
	if r := recs[0]; r.Level != record.LevelError || r.Text != "Failed to create memory for IPC, failed with hsa_status: 4097" {
		t.Errorf("error: %+v", r)
	}
	if r := recs[1]; r.Level != record.LevelInfo || !strings.HasPrefix(r.Text, "1234 us: hipGetDevice") {
		t.Errorf("info: %+v", r)
	}
	if r := recs[2]; r.Level != record.LevelError || !strings.HasSuffix(r.Text, ":1:not a header") {
		t.Errorf("error with a plain line after it: %+v", r)
	}
}

// TestPytestErrorLines: pytest marks the lines of a failed test's error
// "E   "; they are error lines, read without the mark (vllm#48647's
// "E   ModuleNotFoundError: No module named 'flashinfer'" came back ok).
func TestPytestErrorLines(t *testing.T) {
	in := "/usr/lib/python3.12/site-packages/vllm/v1/attention/backends/flashinfer.py:12: in <module>\n" +
		"E   ModuleNotFoundError: No module named 'flashinfer'\n" +
		"E    indented more\n" +
		"EXIT   not pytest's\n" +
		"E           RuntimeError: deeper\n"
	recs, _ := parseBytes(t, []byte(in))
	if len(recs) != 4 {
		t.Fatalf("%d records: %+v", len(recs), recs)
	}
	if r := recs[1]; r.Level != record.LevelError || r.Text != "ModuleNotFoundError: No module named 'flashinfer'" {
		t.Errorf("pytest's error line: %+v", r)
	}
	if r := recs[2]; r.Level != record.LevelError || !strings.HasPrefix(r.Text, "indented more\nEXIT") {
		t.Errorf("pytest's error line, more indented: %+v", r)
	}
	if r := recs[3]; r.Level != record.LevelError || r.Text != "RuntimeError: deeper" {
		t.Errorf("pytest's error line, at the source's indent: %+v", r)
	}
}

// TestTracingHeader: Rust's tracing format (TGI's launcher) gives the
// level; a line at column 0 after a message logged below error is not
// part of it ("Error: WebserverFailed" after "INFO … Shard 0 terminated"
// is the launcher's own exit), while an error's lines run on.
func TestTracingHeader(t *testing.T) {
	in := "2023-10-16T06:54:28.059380Z ERROR text_generation_launcher: Shard 0 failed to start\n" +
		"2023-10-16T06:54:28.059400Z  INFO text_generation_launcher: Shutting down shards\n" +
		"Error: ShardCannotStart\n" +
		"2023-09-26T21:48:00.969072Z ERROR text_generation_launcher: Method Warmup encountered an error.\n" +
		"Traceback (most recent call last):\n"
	recs, _ := parseBytes(t, []byte(in))
	if len(recs) != 4 {
		t.Fatalf("%d records: %+v", len(recs), recs)
	}
	if r := recs[0]; r.Level != record.LevelError || r.Text != "Shard 0 failed to start" || r.Emitter != "text_generation_launcher" || r.Time.Day() != 16 {
		t.Errorf("error: %+v", r)
	}
	if r := recs[1]; r.Level != record.LevelInfo || r.Text != "Shutting down shards" {
		t.Errorf("info: %+v", r)
	}
	if r := recs[2]; r.Level != "" || r.Text != "Error: ShardCannotStart" {
		t.Errorf("the line after the info message: %+v", r)
	}
	if r := recs[3]; r.Level != record.LevelError || !strings.HasSuffix(r.Text, "Traceback (most recent call last):") {
		t.Errorf("an error's lines run on: %+v", r)
	}
}

// TestUvicornHeader: uvicorn pads its level to column 10 ("INFO:     ");
// that is the line's level and the message starts after it (so
// "Application startup complete." is a phase marker, vllm#50067), a
// traceback a logger in that format printed keeps its indent under the
// header, and a plain "INFO: …" keeps its word.
func TestUvicornHeader(t *testing.T) {
	in := "INFO:     Application startup complete.\n" +
		"WARNING:  Invalid HTTP request received.\n" +
		"INFO: not padded\n" +
		"ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 8000): address already in use\n" +
		"ERROR:      File \"/usr/lib/python3.10/os.py\", line 225, in makedirs\n"
	recs, _ := parseBytes(t, []byte(in))
	if len(recs) != 5 {
		t.Fatalf("%d records: %+v", len(recs), recs)
	}
	if r := recs[0]; r.Level != record.LevelInfo || r.Text != "Application startup complete." {
		t.Errorf("info: %+v", r)
	}
	if r := recs[1]; r.Level != record.LevelWarning || r.Text != "Invalid HTTP request received." {
		t.Errorf("warning: %+v", r)
	}
	if r := recs[2]; r.Level != "" || r.Text != "INFO: not padded" {
		t.Errorf("not uvicorn's padding: %+v", r)
	}
	if r := recs[3]; r.Level != record.LevelError || !strings.HasPrefix(r.Text, "[Errno 98]") {
		t.Errorf("error: %+v", r)
	}
	if r := recs[4]; r.Level != record.LevelError || !strings.HasPrefix(r.Text, "  File \"") {
		t.Errorf("a traceback's frame under the header: %+v", r)
	}
}

// TestRayAutoscalerPrefix: Ray's driver prints its autoscaler's events
// under "(autoscaler +7s) "; the body after it is the message (vllm#7815's
// "Error: No available node types …" was read as one plain line).
func TestRayAutoscalerPrefix(t *testing.T) {
	in := "(autoscaler +7s) Error: No available node types can fulfill resource request {'GPU': 1.0}.\n" +
		"(autoscaler +1m30s) Tip: use `ray status` to view detailed cluster status.\n" +
		"(autoscaler 7s) not Ray's\n"
	recs, _ := parseBytes(t, []byte(in))
	if len(recs) != 3 {
		t.Fatalf("%d records: %+v", len(recs), recs)
	}
	if r := recs[0]; !strings.HasPrefix(r.Text, "Error: No available node types") || len(r.Labels) != 1 || r.Labels[0] != "(autoscaler +7s)" {
		t.Errorf("autoscaler event: %+v", r)
	}
	if r := recs[1]; !strings.HasPrefix(r.Text, "Tip: use") {
		t.Errorf("autoscaler event, minutes: %+v", r)
	}
	if r := recs[2]; r.Text != "(autoscaler 7s) not Ray's" {
		t.Errorf("not the prefix: %+v", r)
	}
}

// TestTagBeforePythonHeader: a component's bracketed tag before Python
// logging's header (sgl-router's "[Router (Python)] 2025-01-09 00:28:10 -
// ERROR - …") is a label, and the header gives the level.
func TestTagBeforePythonHeader(t *testing.T) {
	in := "$ python -m sglang_router.launch_router\n" +
		"[Router (Python)] 2025-01-09 00:28:10 - ERROR - Error starting router: argument 'worker_urls': bad\n"
	recs, _ := parseBytes(t, []byte(in))
	if len(recs) != 2 {
		t.Fatalf("%d records: %+v", len(recs), recs)
	}
	if r := recs[1]; r.Level != record.LevelError || !strings.HasPrefix(r.Text, "Error starting router") || len(r.Labels) != 1 || r.Labels[0] != "[Router (Python)]" {
		t.Errorf("tagged Python header: %+v", r)
	}
}

// TestSGLangHeaderWithoutTime: SGLang's header whose time the paste cut
// off ("[TP1] Scheduler hit an exception:") still names the rank; a
// bracketed word that is no rank is left alone.
func TestSGLangHeaderWithoutTime(t *testing.T) {
	in := "[TP1] Scheduler hit an exception:\n[DP0 TP3] done\n[TPU] not a rank\n"
	recs, _ := parseBytes(t, []byte(in))
	if len(recs) < 3 {
		t.Fatalf("%d records: %+v", len(recs), recs)
	}
	if r := recs[0]; r.Rank.TP != 1 || r.Text != "Scheduler hit an exception:" {
		t.Errorf("TP1: %+v", r)
	}
	if r := recs[1]; r.Rank.DP != 0 || r.Rank.TP != 3 || r.Text != "done" {
		t.Errorf("DP0 TP3: %+v", r)
	}
	if r := recs[2]; r.Rank.TP >= 0 { // (read as aiter's "[name] " tag)
		t.Errorf("no rank: %+v", r)
	}
}

// TestLoggingHeader: Python logging's default format, "LEVEL:name:msg"
// (logging.basicConfig()): the level and the logger's name are read, and
// the message starts after the second colon; a level word followed by a
// space, a digit or a name that ends in a dot is a message's own word.
func TestLoggingHeader(t *testing.T) {
	for _, c := range []struct {
		in, emitter, text string
		lvl               record.Level
	}{
		{"WARNING:torch._dynamo:Encountered an exception in identify_mutated_tensors, assuming every input is mutated", "torch._dynamo", "Encountered an exception in identify_mutated_tensors, assuming every input is mutated", record.LevelWarning},
		{"INFO:root:loading", "root", "loading", record.LevelInfo},
		{"CRITICAL:__main__:gone", "__main__", "gone", record.LevelCritical},
		{"ERROR: plain", "", "ERROR: plain", ""},
		{"ERROR:1:2", "", "ERROR:1:2", ""},
		{"ERROR:a.:b", "", "ERROR:a.:b", ""},
		{"NOTICE:x:y", "", "NOTICE:x:y", ""},
	} {
		recs, _ := parseBytes(t, []byte(c.in+"\n"))
		if len(recs) != 1 || recs[0].Level != c.lvl || recs[0].Emitter != c.emitter || recs[0].Text != c.text {
			t.Errorf("%q: %+v", c.in, recs)
		}
	}
}

// TestTimelessVLLMHeader: vLLM's header without its time ("WARNING
// [ray_utils.py:556] "), as a logging config or a paste leaves it: the
// level and emitter are read; a level word before brackets that hold no
// file:line, or two spaces before them, is no header.
func TestTimelessVLLMHeader(t *testing.T) {
	for _, c := range []struct {
		in, emitter, text string
		lvl               record.Level
	}{
		{"WARNING [ray_utils.py:556] Tensor parallel size (2) exceeds available GPUs (1).", "ray_utils.py:556", "Tensor parallel size (2) exceeds available GPUs (1).", record.LevelWarning},
		{"ERROR [core.py:1129] EngineCore failed to start.", "core.py:1129", "EngineCore failed to start.", record.LevelError},
		{"ERROR [core.py] no line", "", "ERROR [core.py] no line", ""},
		{"ERROR  [core.py:1] two spaces", "", "ERROR  [core.py:1] two spaces", ""},
	} {
		recs, _ := parseBytes(t, []byte(c.in+"\n"))
		if len(recs) != 1 || recs[0].Level != c.lvl || recs[0].Emitter != c.emitter || recs[0].Text != c.text {
			t.Errorf("%q: %+v", c.in, recs)
		}
	}
}

// TestAlignedContinuation: a line indented to where the message starts
// after the open record's process prefix continues that message (its
// indent dropped); under a short prefix, or indented elsewhere, it does
// not.
func TestAlignedContinuation(t *testing.T) {
	in := "(EngineCore pid=630) [autoscaler] Error: No available node types can fulfill resource request\n" +
		"                     {'GPU': 1.0, 'node:192.168.50.192': 0.001}.\n" +
		"(EngineCore pid=630) done\n" +
		"                        {'deeper': 1}\n"
	recs, _ := parseBytes(t, []byte(in))
	if len(recs) != 2 || !strings.HasSuffix(recs[0].Text, "request\n{'GPU': 1.0, 'node:192.168.50.192': 0.001}.\ndone") {
		t.Fatalf("aligned: %d records %+v", len(recs), recs)
	}
	if r := recs[1]; r.Rank.Role != "" || !strings.Contains(r.Text, "{'deeper': 1}") {
		t.Errorf("indented past the prefix: %+v", r)
	}
	short, _ := parseBytes(t, []byte("(W pid=1) a\n            b\n"))
	if len(short) != 2 {
		t.Errorf("under a short prefix: %+v", short)
	}
}
