package stackdump

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/bringup-tool/bringup/ingest"
	"github.com/bringup-tool/bringup/testsupport/testcorpus"
)

// The sniff's line scan as it was before the literal prefilter: each
// header searched for over the whole head with a multi-line regex. It is
// the oracle the prefiltered scan must agree with on every input (the
// scoring of what was found is the same function).
var (
	refPyspyRE   = regexp.MustCompile(`(?m)^(?:.*\| )?(?:` + pyspyProcessHead + ` |` + pyspyThreadHead + ` ` + pyspyStateHead + `)`)
	refFHRE      = regexp.MustCompile(`(?m)^` + fhHead)
	refDebugRE   = regexp.MustCompile(`(?m)^` + debugServerHead + ` `)
	refPystackRE = regexp.MustCompile(`(?m)^` + pystackHead)
)

func refSniff(head []byte) int {
	return score(head, heads{debug: refDebugRE.Match(head), pystack: refPystackRE.Match(head), fh: refFHRE.Match(head), pyspy: refPyspyRE.Match(head)})
}

// sniffHeads: the heads of every real input the repository and the
// shared corpus hold (logs, dumps, traces, examples), as diagnose shows
// them to Sniff.
func sniffHeads(tb testing.TB) map[string][]byte {
	heads := map[string][]byte{}
	root := testcorpus.Root()
	dirs := []string{
		filepath.Join(root, "ingest", "stackdump", "testdata"),
		filepath.Join(root, "stacks", "testdata"),
		filepath.Join(root, "examples"),
		filepath.Join(root, "corpus", "field"),
		filepath.Join(root, "testbed", "testdata"),
		filepath.Join(root, "..", "shared", "corpus"),
	}
	for _, d := range dirs {
		_ = filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err != nil || !e.Type().IsRegular() {
				return nil
			}
			if h, err := ingest.Head(p); err == nil && len(h) > 0 {
				heads[p] = h
			}
			return nil
		})
	}
	if len(heads) == 0 {
		tb.Skip("no inputs found")
	}
	return heads
}

// TestSniffSameAsRegexOracle: the prefiltered Sniff gives every real
// input, and hand-made edge lines, the score the whole-head regexes gave.
func TestSniffSameAsRegexOracle(t *testing.T) {
	heads := sniffHeads(t)
	for _, in := range sniffEdges {
		heads["edge:"+in] = []byte(in)
	}
	scored := 0
	for name, h := range heads {
		got, want := Sniff(name, h), refSniff(h)
		if got != want {
			t.Errorf("%s: Sniff %d, regex oracle %d", name, got, want)
		}
		if got > 0 {
			scored++
		}
	}
	t.Logf("%d inputs, %d scored as dumps", len(heads), scored)
	if scored == 0 {
		t.Fatalf("no input of %d scored as a dump: the comparison saw none", len(heads))
	}
}

// sniffEdges: headers at the edges of a line, behind launcher prefixes,
// near misses and lines cut by the end of the head.
var sniffEdges = []string{
	"Process 12: python x\n",
	"Process 12:python x\n",
	"Process 12:",
	"x Process 12: python\n",
	"worker-1 | Process 12: python\n",
	"a | b | Thread 0x7F01 (idle): \"MainThread\"\n",
	"a | b |Thread 0x7F01 (idle)\n",
	"a || Thread 12 (active+gil)\n",
	"| Thread 12 (gil)\n",
	"Thread 12 (sleeping)\n",
	"Thread 0x7f01 [w] (most recent call first):\n",
	"Thread 0x7f01 [w (most recent call first):\n",
	"Current thread 0x7f01 (most recent call first):",
	"\r\nCurrent thread 0x7f01 (most recent call first):\r\n",
	"Current thread 0x (most recent call first):\n",
	"=== Rank 3: x ===\n",
	"=== Rank 3:x\n",
	" === Rank 3: x\n",
	"Traceback for thread 12 (p) [] (most recent call last):\n",
	"Traceback for thread x (p)\n",
	"\n\n\nThread 12 (idle)",
	"Pyspy dump for PID 1\nline | Process 7: x\n",
	"Fatal Python error: Aborted\n",
	"\xff\xfe | Process 1: x\n",
	"é|é| Thread 1 (idle)\n",
	"",
}

// FuzzSniffSameAsRegexOracle: no input, however odd, scores differently
// under the prefilter than under the whole-head regexes.
func FuzzSniffSameAsRegexOracle(f *testing.F) {
	for _, in := range sniffEdges {
		f.Add([]byte(in))
	}
	dir := filepath.Join(testcorpus.Root(), "..", "shared", "corpus", "stackdumps")
	if ents, err := os.ReadDir(dir); err == nil {
		for _, e := range ents {
			if h, err := ingest.Head(filepath.Join(dir, e.Name())); err == nil {
				f.Add(h)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if got, want := Sniff("fuzz", data), refSniff(data); got != want {
			t.Fatalf("Sniff %d, regex oracle %d on %q", got, want, data)
		}
	})
}

// BenchmarkSniff: the 64 KiB head of an engine log that holds no dump
// (what every diagnose input that is not a dump costs this sniff), and
// of a py-spy dump.
func BenchmarkSniff(b *testing.B) {
	var log bytes.Buffer
	for r := 0; log.Len() < ingest.HeadSize; r++ {
		log.WriteString("(VllmWorker rank=0 pid=4242) INFO 12-17 13:32:44 [gpu_model_runner.py:1234] Thread pool | Process group ready, step 12 took 0.41 s\n")
	}
	dump, err := os.ReadFile(filepath.Join(testcorpus.Root(), "stacks", "testdata", "seed004-snap1", "worker_TP0.txt"))
	if err != nil {
		b.Skip(err)
	}
	for name, h := range map[string][]byte{"enginelog": log.Bytes()[:ingest.HeadSize], "pyspy": dump} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(h)))
			for i := 0; i < b.N; i++ {
				_ = Sniff("x", h)
			}
		})
		b.Run(name+"-regex", func(b *testing.B) {
			b.SetBytes(int64(len(h)))
			for i := 0; i < b.N; i++ {
				_ = refSniff(h)
			}
		})
	}
}
