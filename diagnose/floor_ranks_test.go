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
	for name, c := range map[string]struct {
		log   string
		ranks []string
	}{
		"worker name": {"json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)\n" +
			"  ... in triton/runtime/cache.py, get_group\n" +
			"Backend supervisor: backend worker freetoken-TP0-scheduler\n", []string{"TP0"}},
		"two ranks": {"json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)\n" +
			"Backend supervisor: backend worker freetoken-TP0-scheduler\n" +
			"Backend supervisor: backend worker freetoken-TP1-scheduler\n", nil},
		"first line only": {"json.decoder.JSONDecodeError: Expecting value in TP0 metadata\n", nil},
	} {
		f := topError(diagnoseText(t, c.log, Options{}))
		if f == nil {
			t.Fatalf("%s: no error finding", name)
		}
		if len(f.Ranks) != len(c.ranks) || !slices.Equal(f.Ranks, c.ranks) && len(c.ranks) > 0 {
			t.Errorf("%s: ranks %q, want %q", name, f.Ranks, c.ranks)
		}
	}
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
	for name, c := range map[string]struct {
		log   string
		ranks []string
	}{
		"right after": {tb + warn, []string{"rank0"}},
		"far after":   {tb + strings.Repeat("DEBUG 01-08 20:56:25 client.py:252] Shutting down MQLLMEngineClient output handler.\n", 5) + warn, nil},
		"no prefix":   {tb + "[W108 20:56:17.821587941 ProcessGroupNCCL.cpp:1250] Warning: WARNING: process group has NOT been destroyed before we destruct ProcessGroupNCCL.\n", nil},
	} {
		f := topError(diagnoseText(t, c.log, Options{}))
		if f == nil {
			t.Fatalf("%s: no error finding", name)
		}
		if !slices.Equal(f.Ranks, c.ranks) && (len(c.ranks) > 0 || len(f.Ranks) > 0) {
			t.Errorf("%s: ranks %q, want %q", name, f.Ranks, c.ranks)
		}
	}
}
