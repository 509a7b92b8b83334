package torchtrace

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/bringup-tool/bringup/input"
	"github.com/bringup-tool/bringup/testsupport/testcorpus"
)

// scanGzip scans a gzipped trace through Gunzip, as bringup trace does.
func scanGzip(t *testing.T, path string) []Event {
	t.Helper()
	f, err := input.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if !Gzipped(f) {
		t.Fatalf("%s is not seen as gzipped", path)
	}
	r, err := Gunzip(f)
	if err != nil {
		t.Fatal(err)
	}
	sc := NewScanner(r, path)
	var evs []Event
	for sc.Next() {
		evs = append(evs, *sc.Event())
	}
	if sc.Err() != nil {
		t.Fatal(sc.Err())
	}
	return evs
}

// A gzipped trace scans to the same events as the plain one, and every
// payload and envelope reference into it (offsets in the decompressed
// stream) fetches the same bytes, from a decompressed copy that is never
// seen in the temporary directory.
func TestGzipTraceAndItsReferences(t *testing.T) {
	plain := testcorpus.File(t, "tlparse-inputs", "comp_metrics.log")
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	gz := filepath.Join(t.TempDir(), "comp_metrics.log.gz")
	testcorpus.GzipCopy(t, plain, gz)

	_, want := scanFile(t, plain, nil)
	got := scanGzip(t, gz)
	if len(got) != len(want) || len(want) == 0 {
		t.Fatalf("%d events from the .gz, %d from the plain file", len(got), len(want))
	}
	payloads := 0
	for i := range want {
		w, g := want[i], got[i]
		if w.Kind != g.Kind || w.Line != g.Line || w.Payload.Offset != g.Payload.Offset || w.Payload.Length != g.Payload.Length || g.Payload.Path != gz {
			t.Fatalf("event %d: %+v, want %+v", i, g, w)
		}
		we, werr := ReadEnvelope(w.Envelope)
		ge, gerr := ReadEnvelope(g.Envelope)
		if werr != nil || gerr != nil || len(we) != len(ge) || string(we[w.Kind]) != string(ge[g.Kind]) {
			t.Fatalf("envelope %d: %v / %v", i, werr, gerr)
		}
		if w.Payload.Length > 0 {
			payloads++
			wp, werr := ReadPayload(w.Payload)
			gp, gerr := ReadPayload(g.Payload)
			if werr != nil || gerr != nil || wp != gp {
				t.Fatalf("payload %d: %v / %v, %d vs %d bytes", i, werr, gerr, len(wp), len(gp))
			}
			v, ok, err := EnvelopeValue(g.Envelope, g.Kind)
			if err != nil || !ok || len(v) == 0 {
				t.Fatalf("envelope value %d: %v %v", i, ok, err)
			}
		}
	}
	if payloads == 0 {
		t.Fatal("no payload fetched")
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("the decompressed copy is visible in TMPDIR: %v", left)
	}

	// The file rewritten in place: references read the new content, not
	// the copy of the old one.
	simple, err := os.ReadFile(testcorpus.File(t, "tlparse-inputs", "simple.log"))
	if err != nil {
		t.Fatal(err)
	}
	testcorpus.GzipCopy(t, testcorpus.File(t, "tlparse-inputs", "simple.log"), gz)
	_, want = scanFile(t, testcorpus.File(t, "tlparse-inputs", "simple.log"), nil)
	got = scanGzip(t, gz)
	for i := range want {
		if want[i].Payload.Length == 0 {
			continue
		}
		wp, _ := ReadPayload(want[i].Payload)
		gp, err := ReadPayload(got[i].Payload)
		if err != nil || wp != gp {
			t.Fatalf("after the rewrite, payload %d: %v (%d vs %d bytes)", i, err, len(gp), len(wp))
		}
		break
	}

	head, err := Head(gz)
	if err != nil || !bytes.HasPrefix(simple, head) || len(head) == 0 || Sniff(gz, head) < 60 {
		t.Errorf("Head of the .gz: %d bytes, %v, sniff %d", len(head), err, Sniff(gz, head))
	}
	if RankFromName("/d/dedicated_log_torch_trace_rank_5_x1y2.log.gz") != 5 || RankFromName("/d/dedicated_log_torch_trace_rank_5.log.gz") != 5 {
		t.Error("a gzipped rank file's rank is not read from its name")
	}
}

// A broken gzip file is a read error with its cause, for the scan and for
// a reference into it.
func TestBrokenGzip(t *testing.T) {
	p := filepath.Join(t.TempDir(), "broken.log.gz")
	os.WriteFile(p, []byte{0x1f, 0x8b, 8, 0, 0, 0}, 0o644)
	f, _ := os.Open(p)
	defer f.Close()
	if _, err := Gunzip(f); !Gzipped(f) || err == nil || !strings.Contains(err.Error(), "gzip") {
		t.Errorf("Gunzip: %v", err)
	}
	if _, err := ReadPayload(PayloadRef{Path: p, Offset: 0, Length: 10}); err == nil || !strings.Contains(err.Error(), "gzip") {
		t.Errorf("ReadPayload: %v", err)
	}
}

// References never open a FIFO (they name trace files; a FIFO put there
// since would block the report).
func TestReferencesRefuseFIFO(t *testing.T) {
	p := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Skip(err)
	}
	if _, err := ReadPayload(PayloadRef{Path: p, Offset: 0, Length: 10}); !errors.Is(err, input.ErrNotRegular) {
		t.Errorf("ReadPayload on a FIFO: %v", err)
	}
	if _, err := Head(p); !errors.Is(err, input.ErrNotRegular) {
		t.Errorf("Head on a FIFO: %v", err)
	}
}
