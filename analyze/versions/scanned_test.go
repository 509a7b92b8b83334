package versions

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/bringup-tool/bringup/record"
)

// scanAll is Feed without the memo of scanned texts: every line scanned.
func scanAll(d *Detector, rec record.Record) {
	for i, line := range strings.Split(rec.Text, "\n") {
		d.scan(line, rec.Source, rec.Line+i)
	}
}

// A crash loop's records again and again, with surer sources of the same
// versions coming late: Feed, which scans a text it has seen only once,
// finds what scanning every line finds, and where; the memo stays within
// its bound on texts that never repeat.
func TestRepeatedTextsScannedOnce(t *testing.T) {
	texts := []string{
		"INFO: started from /usr/lib/python3.10/site-packages/vllm/x.py",
		"torch==2.7.1+cu126\ntriton==3.3.1",
		"File \"/opt/venv/lib/python3.12/site-packages/torch/_dynamo/eval_frame.py\", line 1, in f",
		"Initializing a V1 LLM engine (v0.11.2) with config: model='m'",
		"PyTorch version: 2.8.0+cu128\nPython version: 3.12.3 (main)\nCUDA used to build PyTorch: 12.8",
		"vLLM API server version 0.11.3",
	}
	var recs []record.Record
	for round := 0; round < 50; round++ {
		for i, s := range texts[:3] {
			recs = append(recs, record.Record{Source: "a.log", Line: 10*round + i + 1, Text: s})
		}
		if round == 30 { // the surer sources, late
			for i, s := range texts[3:] {
				recs = append(recs, record.Record{Source: "b.log", Line: 900 + i, Text: s})
			}
		}
	}
	var memo, ref Detector
	for _, r := range recs {
		memo.Feed(&r)
		scanAll(&ref, r)
	}
	if !reflect.DeepEqual(memo.found, ref.found) {
		t.Fatalf("with the memo %v, scanning every line %v", memo.found, ref.found)
	}
	if v := memo.Versions(); v[VLLM] != "0.11.2" || v[Torch] != "2.8.0+cu128" || v[Python] != "3.12.3" {
		t.Fatalf("versions %v", v)
	}
	if len(memo.scanned) != len(texts) {
		t.Fatalf("%d texts remembered, want %d", len(memo.scanned), len(texts))
	}

	var d Detector
	for i := 0; i < 3*maxScanned; i++ {
		d.Feed(&record.Record{Text: fmt.Sprintf("pkg%d==1.%d", i, i)})
	}
	if len(d.scanned) != maxScanned {
		t.Fatalf("%d texts remembered, bound %d", len(d.scanned), maxScanned)
	}
}
