package enginelog

import (
	"strings"
	"testing"

	"github.com/bringup-tool/bringup/record"
)

// TestTRTLLMHeader: TensorRT-LLM's logger header gives the level, the MPI
// rank and the time, and a message's following lines join its record.
func TestTRTLLMHeader(t *testing.T) {
	in := "[03/14/2025-09:26:53] [TRT-LLM] [I] Starting the executor\n" +
		"[03/14/2025-09:26:54] [TRT-LLM] [RANK 5] [E] Failed to initialize executor on rank 5: boom\n" +
		"\n" +
		"The following component could not be created: KV cache\n" +
		"[03/14/2025-09:26:54] [TRT-LLM] [W] [03/14 not a header\n"
	var recs []record.Record
	if _, err := Parse(strings.NewReader(in), "t.log", func(r record.Record) { recs = append(recs, r) }); err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 {
		t.Fatalf("%d records: %+v", len(recs), recs)
	}
	if r := recs[0]; r.Level != record.LevelInfo || r.Text != "Starting the executor" || r.Time.Month() != 3 || r.Time.Day() != 14 {
		t.Errorf("info: %+v", r)
	}
	if r := recs[1]; r.Level != record.LevelError || r.Rank.Global != 5 || !strings.HasPrefix(r.Text, "Failed to initialize executor") ||
		!strings.Contains(r.Text, "could not be created: KV cache") {
		t.Errorf("error: %+v", r)
	}
	if r := recs[2]; r.Level != record.LevelWarning || r.Text != "[03/14 not a header" {
		t.Errorf("warning: %+v", r)
	}
	// Not TensorRT-LLM's: a date in brackets before another tag.
	var other []record.Record
	Parse(strings.NewReader("[03/14/2025-09:26:53] [vllm] [E] x\n"), "t.log", func(r record.Record) { other = append(other, r) })
	if len(other) != 1 || other[0].Level != "" {
		t.Errorf("other tag: %+v", other)
	}
}

// TestTrtexecHeader: TensorRT's own tools (trtexec) print the level letter
// right after the time, with no logger tag; each line is a record at its
// level (model-optimizer#70's "[E] Error[9]: … Error Code 9" came back ok).
func TestTrtexecHeader(t *testing.T) {
	in := "[09/11/2024-21:49:27] [I] [TRT] Loaded engine size: 15 MiB\n" +
		"[09/11/2024-21:49:27] [E] Error[9]: IBuilder::buildSerializedNetwork: Error Code 9: API Usage Error (FP8)\n" +
		"[09/11/2024-21:49:27] [W] The CUDA graph capture on the stream has failed.\n" +
		"[09/11/2024-21:49:27] [X] not a level\n"
	recs, _ := parseBytes(t, []byte(in))
	want := []record.Level{record.LevelInfo, record.LevelError, record.LevelWarning}
	if len(recs) != 3 {
		t.Fatalf("%d records: %+v", len(recs), recs)
	}
	for i, w := range want {
		if recs[i].Level != w || strings.HasPrefix(recs[i].Text, "[") && i != 0 {
			t.Errorf("record %d: %+v", i, recs[i])
		}
	}
	if !strings.HasPrefix(recs[1].Text, "Error[9]: ") || !strings.HasSuffix(recs[2].Text, "not a level") {
		t.Errorf("texts: %q / %q", recs[1].Text, recs[2].Text)
	}
}
