package versions

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/bringup-tool/bringup/ingest/enginelog"
	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/testsupport/testcorpus"
)

func detect(t *testing.T, path string) *Detector {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d := &Detector{}
	if _, err := enginelog.Parse(f, path, d.Add); err != nil {
		t.Fatal(err)
	}
	return d
}

func TestCollectEnv(t *testing.T) {
	d := detect(t, filepath.Join("testdata", "collect-env.log"))
	want := map[string]string{"torch": "2.7.1+cu126", "cuda": "12.6", "python": "3.12.3", "triton": "3.3.1", "vllm": "0.9.1"}
	if got := d.Versions(); !reflect.DeepEqual(got, want) {
		t.Errorf("versions %v, want %v", got, want)
	}
	// The first statement of the surest kind wins: "CUDA used to build
	// PyTorch: 12.6" (line 5) over the runtime's 12.6.77 and the +cu126 tag.
	if src, line, ok := d.Where("cuda"); !ok || line != 5 || filepath.Base(src) != "collect-env.log" {
		t.Errorf("cuda from %s:%d", src, line)
	}
	if _, line, _ := d.Where("vllm"); line != 15 {
		t.Errorf("vllm from line %d", line)
	}
}

func TestPinsTagsAndPaths(t *testing.T) {
	d := detect(t, filepath.Join("testdata", "rocm.log"))
	want := map[string]string{"sglang": "0.5.2", "torch": "2.9.0", "rocm": "10.0", "triton": "3.5.0", "atom": "0.1.3", "python": "3.10"}
	if got := d.Versions(); !reflect.DeepEqual(got, want) {
		t.Errorf("versions %v, want %v", got, want)
	}
}

func TestCorpus(t *testing.T) {
	for name, want := range map[string]map[string]string{
		"vllm-issue-18851.log":     {"python": "3.12"},
		"vllm-issue-30905.log":     {"python": "3.12"},
		"vllm-issue-15598.log":     {},
		"sglang-issue-1117.log":    {},
		"pytorch-issue-120774.log": {},
	} {
		d := detect(t, testcorpus.File(t, "engine-logs", name))
		if got := d.Versions(); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %v, want %v", name, got, want)
		}
	}
}

func TestBanners(t *testing.T) {
	for text, want := range map[string]map[string]string{
		"Initializing a V1 LLM engine (v0.11.2) with config: model='x'":    {"vllm": "0.11.2"},
		"Initializing an LLM engine (v0.6.3.post1) with config: model='x'": {"vllm": "0.6.3.post1"},
		"vLLM API server version 0.10.1rc2.dev5+g1234abc":                  {"vllm": "0.10.1rc2.dev5+g1234abc"},
		"installed notvllm==1.0 and torch==2.8.0":                          {"torch": "2.8.0"},
		"Python version: unknown":                                          {},
	} {
		d := &Detector{}
		d.Add(record.Record{Source: "s", Line: 1, Text: text})
		if got := d.Versions(); !reflect.DeepEqual(got, want) {
			t.Errorf("%q: %v, want %v", text, got, want)
		}
	}
}
