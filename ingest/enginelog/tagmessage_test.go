package enginelog

import (
	"strings"
	"testing"
)

// An exception whose message starts with a newline prints an empty
// exception line; its message is the next line even when that starts like
// a time-less logger tag (sglang PR 17460: sgl_kernel's load report).
func TestTagInsideExceptionMessage(t *testing.T) {
	in := "Traceback (most recent call last):\n" +
		"  File \"/opt/.venv/lib/python3.12/site-packages/sgl_kernel/load_utils.py\", line 188, in _load_architecture_specific_ops\n" +
		"    raise ImportError(error_msg)\n" +
		"ImportError: \n" +
		"[sgl_kernel] CRITICAL: Could not load any common_ops library!\n" +
		"\n" +
		"Attempted locations:\n"
	recs, _ := parseBytes(t, []byte(in))
	if len(recs) != 1 {
		t.Fatalf("got %d records, want the traceback as one: %+v", len(recs), recs)
	}
	if !strings.Contains(recs[0].Text, "ImportError: \n[sgl_kernel] CRITICAL: Could not load") {
		t.Errorf("the tag was peeled off the message: %q", recs[0].Text)
	}
	if recs[0].Emitter != "" {
		t.Errorf("emitter %q, want none (the record is the traceback)", recs[0].Emitter)
	}
}

// What must not change: a tag after an exception line that has its
// message, after prose ending in ':', or with a time, starts a record.
func TestTagAfterExceptionLineStartsRecord(t *testing.T) {
	for _, c := range []struct{ name, prev, tag, emitter string }{
		{"message on the line", "RuntimeError: boom", "[aiter] import [module_aiter_enum] under /x", "aiter"},
		{"prose", "During handling of the above exception, another exception occurred:", "[aiter] retry", "aiter"},
		{"lower-case name", "note:", "[aiter] retry", "aiter"},
		{"timed tag", "ImportError: ", "[atom 06:33:57] engine up", "atom"},
	} {
		in := "Traceback (most recent call last):\n  File \"a.py\", line 1, in <module>\n" + c.prev + "\n" + c.tag + "\n"
		recs, _ := parseBytes(t, []byte(in))
		if len(recs) != 2 || recs[1].Emitter != c.emitter {
			t.Errorf("%s: want the tag line as a record of its own from %q, got %+v", c.name, c.emitter, recs)
		}
	}
}

func TestEmptyMessageLine(t *testing.T) {
	for line, want := range map[string]bool{
		"ImportError:":  true,
		"ImportError: ": true,
		"torch._dynamo.exc.BackendCompilerFailed: ": true,
		"ImportError: x":   false,
		"Error in x:":      false,
		"torch.:":          false,
		".Error:":          false,
		"a..B:":            false,
		":":                false,
		"  ImportError:":   false,
		"9Error:":          false,
		"torch._dynamo.x:": false,
	} {
		if got := emptyMessageLine([]byte(line)); got != want {
			t.Errorf("emptyMessageLine(%q) = %v, want %v", line, got, want)
		}
	}
}

// torch's C++ logging prints a c10::Error's native part ("Exception raised
// from …", "frame #N: …") under the first line's rank prefix only: those
// lines continue it (vllm-ascend issue 686). Other unprefixed lines after
// a rank-prefixed one start records of their own.
func TestC10ReportContinues(t *testing.T) {
	in := "[rank1]:[E428 03:37:31.268946165 compiler_depend.ts:422] setup failed!\n" +
		"Exception raised from OperationSetup at build/op_plugin/compiler_depend.ts:131 (most recent call first):\n" +
		"frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0xb8 (0xffff9a9ec908 in libc10.so)\n" +
		"frame #1: c10::detail::torchCheckFail(char const*, char const*, unsigned int, char const*) + 0x70 (0xffff9a99b4e0 in libc10.so)\n" +
		"frames were printed\n"
	recs, _ := parseBytes(t, []byte(in))
	if len(recs) != 2 || recs[0].EndLine != 4 || recs[0].Rank.String() != "rank1" {
		t.Fatalf("want the c10 report as one record of rank1 (lines 1-4), then one: %+v", recs)
	}
	if !strings.Contains(recs[0].Text, "setup failed!\nException raised from OperationSetup") {
		t.Errorf("text %q", recs[0].Text)
	}
}
