package torchtrace

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/testsupport/testcorpus"
)

func scanFile(t testing.TB, path string, want func(*Event) bool) (*Scanner, []Event) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := NewScanner(f, path)
	sc.Want = want
	var evs []Event
	for sc.Next() {
		ev := *sc.Event()
		ev.Body = append([]byte(nil), ev.Body...)
		evs = append(evs, ev)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return sc, evs
}

// oracle is the subset of Stats that testdata/oracle_counts.py computes
// independently (a second implementation in Python, from tlparse's rules).
type oracle struct {
	Records            int            `json:"records"`
	Corrupted          int            `json:"corrupted"`
	PayloadMD5Mismatch int            `json:"payload_md5_mismatch"`
	Events             map[string]int `json:"events"`
	Artifacts          map[string]int `json:"artifacts"`
	CompileIDs         []string       `json:"compile_ids"`
	CompilationMetrics int            `json:"compilation_metrics"`
	Failed             int            `json:"failed"`
	ChromiumEvents     int            `json:"chromium_events"`
	Ranks              []int          `json:"ranks"`
	PIDs               []int          `json:"pids"`
}

// TestCorpusCountsMatchOracle checks every file of the tlparse corpus
// against counts computed by an independent implementation.
func TestCorpusCountsMatchOracle(t *testing.T) {
	root := testcorpus.Dir(t, "tlparse-inputs")
	data, err := os.ReadFile("testdata/corpus_counts.json")
	if err != nil {
		t.Fatal(err)
	}
	var golden map[string]oracle
	if err := json.Unmarshal(data, &golden); err != nil {
		t.Fatal(err)
	}
	seen := 0
	err = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !(strings.HasSuffix(p, ".log") || strings.HasSuffix(p, ".txt")) {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		want, ok := golden[rel]
		if !ok {
			t.Errorf("%s: not in testdata/corpus_counts.json (regenerate it with the oracle)", rel)
			return nil
		}
		seen++
		sc, _ := scanFile(t, p, nil)
		st := sc.Stats()
		got := oracle{st.Records, st.Corrupted, st.PayloadMD5Mismatch, st.Events, st.Artifacts, st.CompileIDs,
			st.CompilationMetrics, st.Failed, st.ChromiumEvents, st.Ranks, st.PIDs}
		if !reflect.DeepEqual(got, want) {
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(want)
			t.Errorf("%s:\n got  %s\n want %s", rel, g, w)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen != len(golden) || seen < 40 {
		t.Errorf("checked %d files, golden has %d", seen, len(golden))
	}
}

// TestSimpleLogLikeTlparse: test_parse_simple says raw.jsonl has 15 lines:
// the string table plus 14 events once the 50 chromium and 12 str records
// are left out.
func TestSimpleLogLikeTlparse(t *testing.T) {
	for _, name := range []string{"simple.log", "simple_corrupted_json.log"} {
		sc, evs := scanFile(t, testcorpus.File(t, "tlparse-inputs", name), nil)
		st := sc.Stats()
		if st.Events["chromium_event"] != 50 || st.Events["str"] != 12 || st.Records-50-12 != 14 {
			t.Errorf("%s: %d records, events %v; want 14 besides 50 chromium and 12 str", name, st.Records, st.Events)
		}
		if st.StringTable != 12 || sc.String(0) == "" {
			t.Errorf("%s: string table %d entries, [0]=%q", name, st.StringTable, sc.String(0))
		}
		ids := map[string]bool{}
		for _, ev := range evs {
			ids[ev.ID.String()] = true
		}
		if !ids["0/0"] {
			t.Errorf("%s: no event in compile 0/0", name)
		}
	}
	// The corrupted copy differs by one truncated chromium payload.
	sc, _ := scanFile(t, testcorpus.File(t, "tlparse-inputs", "simple_corrupted_json.log"), nil)
	if st := sc.Stats(); st.PayloadMD5Mismatch != 1 || st.MD5MismatchLines[0] != (record.Skip{Line: 13, Reason: ReasonMD5Mismatch}) {
		t.Errorf("corrupted copy: %d md5 mismatches at %v, want 1 at line 13", st.PayloadMD5Mismatch, st.MD5MismatchLines)
	}
}

// TestCompMetricsGuardsPayloads: test_parse_compilation_metrics expects
// exactly these three dynamo_guards payloads; ReadPayload must return them
// byte for byte (their MD5 is the envelope's has_payload).
func TestCompMetricsGuardsPayloads(t *testing.T) {
	_, evs := scanFile(t, testcorpus.File(t, "tlparse-inputs", "comp_metrics.log"), nil)
	var got []string
	for _, ev := range evs {
		if ev.Kind != "dynamo_guards" {
			continue
		}
		p, err := ReadPayload(ev.Payload)
		if err != nil {
			t.Fatal(err)
		}
		sum := md5.Sum([]byte(p))
		got = append(got, hex.EncodeToString(sum[:]))
		if !ev.MD5OK {
			t.Errorf("line %d: md5 not ok", ev.Line)
		}
		var guards []map[string]any
		if err := json.Unmarshal([]byte(p), &guards); err != nil || len(guards) == 0 {
			t.Errorf("line %d: guards payload is not a JSON list: %v", ev.Line, err)
		}
	}
	sort.Strings(got)
	want := []string{"11726d08889974e57b12edee2812504e", "29e35548d59d0e446f0c8a3f3010cc72", "e18e1bcb67140c0a67427a6119556f7a"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("guards payload md5s %v, want %v", got, want)
	}
}

// TestCompileIDsAndAttempts: comp_metrics has restarts ([0/0_1]), autotune
// has a runtime metrics event without attempt that belongs to [0/0].
func TestCompileIDsAndAttempts(t *testing.T) {
	sc, _ := scanFile(t, testcorpus.File(t, "tlparse-inputs", "comp_metrics.log"), nil)
	if got := sc.Stats().CompileIDs; !reflect.DeepEqual(got, []string{"0/0", "0/0_1", "1/0", "1/0_1", "2/0"}) {
		t.Errorf("comp_metrics ids %v", got)
	}
	_, evs := scanFile(t, testcorpus.File(t, "tlparse-inputs", "autotune_with_compile_id.log"), nil)
	found := false
	for _, ev := range evs {
		if ev.Kind == "compilation_metrics_runtime" {
			found = true
			if ev.ID.Attempt != nil || ev.ID.AttemptN() != 0 || ev.ID.Unit() != "0/0" || ev.ID.String() != "0/0" {
				t.Errorf("runtime metrics id %+v prints %q", ev.ID, ev.ID.String())
			}
		}
	}
	if !found {
		t.Error("no compilation_metrics_runtime event")
	}
	one, zero := 1, 0
	for _, c := range []struct {
		id   CompileID
		want string
	}{
		{CompileID{}, ""},
		{CompileID{Frame: &zero, Compile: &one, Attempt: &one}, "0/1_1"},
		{CompileID{Autograd: &zero}, "!0/-/-"},
		{CompileID{Autograd: &one, Frame: &zero, Compile: &zero, Attempt: &zero}, "!1/0/0"},
	} {
		if got := c.id.String(); got != c.want {
			t.Errorf("%+v prints %q, want %q", c.id, got, c.want)
		}
	}
}

func envelope(kind string, meta string, payload string, extra string) string {
	sum := md5.Sum([]byte(payload))
	var b strings.Builder
	fmt.Fprintf(&b, `V1206 15:20:13.926000 4242 torch/_dynamo/utils.py:1288] {"%s": %s, "frame_id": 0, "frame_compile_id": 0, "attempt": 0%s`, kind, meta, extra)
	if payload != "" {
		fmt.Fprintf(&b, `, "has_payload": "%s"`, hex.EncodeToString(sum[:]))
	}
	b.WriteString("}\n")
	if payload != "" {
		for _, l := range strings.Split(payload, "\n") {
			b.WriteString("\t" + l + "\n")
		}
	}
	return b.String()
}

// TestBadInput: corrupted envelopes, MD5 mismatches, unknown kinds and
// fields, blank and stray lines, CRLF, a truncated last record — all
// counted with their lines, none fatal.
func TestBadInput(t *testing.T) {
	var b strings.Builder
	b.WriteString(envelope("dynamo_start", `{"stack": []}`, "", ""))                                        // 1
	b.WriteString(`V1206 15:20:13.926000 4242 torch/x.py:1] {"artifact": {"name": "x", "encoding": "json"`) // 2: bad JSON
	b.WriteString(", \"has_payload\": \"00\"\n\t{\"a\": 1}\n")                                              // 3: its payload
	b.WriteString("\n")                                                                                     // 4: blank
	b.WriteString("some unrelated line\n")                                                                  // 5
	b.WriteString(envelope("future_event_kind", `{"x": 1}`, "", `, "new_key": 3`))                          // 6
	good := envelope("artifact", `{"name": "recompile_reasons", "encoding": "json"}`, "[\n\"why\"\n]", "")
	b.WriteString(good) // 7-10
	bad := strings.Replace(envelope("artifact", `{"name": "y", "encoding": "string"}`, "abc", ""), "\tabc", "\tabd", 1)
	b.WriteString(bad)                                                                                                   // 11-12
	b.WriteString(strings.ReplaceAll(envelope("dynamo_guards", `{}`, "[\n{\"code\": \"x\"}\n]", ""), "\n", "\r\n"))      // 13-16 CRLF
	b.WriteString(`V1206 15:20:13.926000 4242 torch/x.py:1] {"chromium_event": {}, "has_payload": "abc"}` + "\n\t{\"na") // truncated
	sc := NewScanner(strings.NewReader(b.String()), "bad.log")
	sc.Want = func(ev *Event) bool { return ev.ArtifactName == "recompile_reasons" }
	var kinds []string
	var bodies []string
	md5ok := map[int]bool{}
	for sc.Next() {
		ev := sc.Event()
		kinds = append(kinds, ev.Kind)
		md5ok[ev.Line] = ev.MD5OK
		if ev.Body != nil {
			bodies = append(bodies, string(ev.Body))
		}
	}
	st := sc.Stats()
	if want := []string{"dynamo_start", "future_event_kind", "artifact", "artifact", "dynamo_guards", "chromium_event"}; !reflect.DeepEqual(kinds, want) {
		t.Errorf("kinds %v, want %v", kinds, want)
	}
	if st.Corrupted != 1 || !reflect.DeepEqual(st.CorruptedLines, Skips{{Line: 2, Reason: ReasonCorrupted}}) {
		t.Errorf("corrupted %d at %v, want 1 at line 2", st.Corrupted, st.CorruptedLines)
	}
	if st.NonGlog != 1 || st.NonGlogLines[0] != (record.Skip{Line: 5, Reason: ReasonNonGlog}) || st.Blank != 1 || st.OrphanPayloadLines != 0 {
		t.Errorf("non-glog %d %v, blank %d, orphans %d", st.NonGlog, st.NonGlogLines, st.Blank, st.OrphanPayloadLines)
	}
	if st.Unknown["future_event_kind"] != 1 || st.UnknownFields["new_key"] != 1 {
		t.Errorf("unknown kinds %v, fields %v", st.Unknown, st.UnknownFields)
	}
	if !md5ok[7] || md5ok[11] || !md5ok[13] || md5ok[17] {
		t.Errorf("md5 ok by line: %v (want 7 and 13 ok, 11 and 17 not)", md5ok)
	}
	if st.PayloadMD5Mismatch != 2 || !st.NoFinalNewline {
		t.Errorf("md5 mismatches %d, no final newline %v", st.PayloadMD5Mismatch, st.NoFinalNewline)
	}
	if !reflect.DeepEqual(bodies, []string{"[\n\"why\"\n]"}) {
		t.Errorf("wanted bodies %q", bodies)
	}
	if st.Records != 6 || st.Lines != 18 {
		t.Errorf("records %d lines %d, want 6 and 18", st.Records, st.Lines)
	}
}

// genReader produces one envelope with a payload of n bytes in lines of
// lineLen, without ever holding it: the scanner must hash it as it streams.
type genReader struct {
	head, tail []byte
	n, lineLen int
	pos        int
	line       []byte
}

func (g *genReader) Read(p []byte) (int, error) {
	if len(g.head) > 0 {
		k := copy(p, g.head)
		g.head = g.head[k:]
		return k, nil
	}
	if g.pos < g.n {
		k := 0
		for k < len(p) && g.pos < g.n {
			i := g.pos % (g.lineLen + 2)
			var c byte
			switch {
			case i == 0:
				c = '\t'
			case i == g.lineLen+1:
				c = '\n'
			default:
				c = 'a' + byte(i%26)
			}
			p[k] = c
			k++
			g.pos++
		}
		return k, nil
	}
	if len(g.tail) > 0 {
		k := copy(p, g.tail)
		g.tail = g.tail[k:]
		return k, nil
	}
	return 0, io.EOF
}

func bigPayloadMD5(lines, lineLen int) string {
	h := md5.New()
	line := make([]byte, lineLen)
	for i := range line {
		line[i] = 'a' + byte((i+1)%26)
	}
	for i := 0; i < lines; i++ {
		if i > 0 {
			h.Write([]byte{'\n'})
		}
		h.Write(line)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestHugePayloadStreams: a 100 MB payload (and, separately, one 3 MiB line,
// longer than the read buffer) is hashed as it streams and not kept.
func TestHugePayloadStreams(t *testing.T) {
	for _, c := range []struct{ lines, lineLen int }{{1 << 20, 98}, {1, 3 << 20}} {
		sum := bigPayloadMD5(c.lines, c.lineLen)
		head := fmt.Sprintf(`V1206 15:20:13.926000 1 torch/x.py:1] {"inductor_output_code": {"filename": "big.py"}, "frame_id": 0, "frame_compile_id": 0, "attempt": 0, "has_payload": "%s"}`+"\n", sum)
		tail := `V1206 15:20:14.000000 1 torch/x.py:2] {"dynamo_start": {"stack": []}, "frame_id": 1, "frame_compile_id": 0, "attempt": 0}` + "\n"
		g := &genReader{head: []byte(head), tail: []byte(tail), n: c.lines * (c.lineLen + 2), lineLen: c.lineLen}
		sc := NewScanner(g, "big.log")
		var evs []Event
		for sc.Next() {
			evs = append(evs, *sc.Event())
		}
		if len(evs) != 2 || !evs[0].MD5OK || evs[0].Body != nil || evs[0].PayloadLines != c.lines {
			t.Fatalf("%d×%d: events %d, md5 ok %v, body kept %v, payload lines %d", c.lines, c.lineLen, len(evs), evs[0].MD5OK, evs[0].Body != nil, evs[0].PayloadLines)
		}
		if evs[0].Payload.Length != int64(c.lines*(c.lineLen+2)) || evs[1].Line != c.lines+2 {
			t.Errorf("payload span %d, next envelope at line %d", evs[0].Payload.Length, evs[1].Line)
		}
	}
}

// TestWantedBodyIsCapped: a wanted payload larger than MaxBody is cut and
// flagged, and its MD5 still covers all of it.
func TestWantedBodyIsCapped(t *testing.T) {
	payload := strings.Repeat("x", 5000)
	sc := NewScanner(strings.NewReader(envelope("chromium_event", "{}", payload, "")), "cap.log")
	sc.Want = func(*Event) bool { return true }
	sc.MaxBody = 1000
	if !sc.Next() {
		t.Fatal("no event")
	}
	ev := sc.Event()
	if len(ev.Body) != 1000 || !ev.BodyTruncated || !ev.MD5OK {
		t.Errorf("body %d truncated %v md5 %v", len(ev.Body), ev.BodyTruncated, ev.MD5OK)
	}
}

// TestReadPayloadAndEnvelope fetch back what the scanner located.
func TestReadPayloadAndEnvelope(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "t.log")
	text := envelope("dynamo_start", `{"stack": []}`, "", "") + envelope("artifact", `{"name": "dynamo_error", "encoding": "string"}`, "Traceback:\n  line 1\r", "")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	_, evs := scanFile(t, p, nil)
	got, err := ReadPayload(evs[1].Payload)
	if err != nil || got != "Traceback:\n  line 1" { // a trailing CR is not payload
		t.Errorf("payload %q, %v", got, err)
	}
	env, err := ReadEnvelope(evs[0].Envelope)
	if err != nil || string(env["frame_id"]) != "0" || !bytes.Contains(env["dynamo_start"], []byte("stack")) {
		t.Errorf("envelope %v, %v", env, err)
	}
	if _, err := ReadPayload(PayloadRef{Path: p, Offset: 0, Length: 10}); err == nil {
		t.Error("a span that is not a payload must be an error")
	}
}

func TestSniffAndRankFromName(t *testing.T) {
	head, _ := os.ReadFile(testcorpus.File(t, "tlparse-inputs", "simple.log"))
	if s := Sniff("x.log", head[:4096]); s < 80 {
		t.Errorf("simple.log sniffs %d", s)
	}
	human := []byte("V1206 15:20:13.926000 4242 torch/_dynamo/convert_frame.py:1] [0/0] Step 1: torchdynamo start tracing fn\n")
	if s := Sniff("x.log", human); s != 0 {
		t.Errorf("a TORCH_LOGS line sniffs %d", s)
	}
	for name, want := range map[string]int{
		"dedicated_log_torch_trace_rank_0_6u3fubwl.log": 0, "dedicated_log_torch_trace_rank_12.log": 12,
		"dedicated_log_torch_trace_abc.log": -1, "another.log": -1,
	} {
		if got := RankFromName("/d/" + name); got != want {
			t.Errorf("%s: rank %d, want %d", name, got, want)
		}
	}
}

func FuzzScanner(f *testing.F) {
	root := testcorpus.Dir(f, "tlparse-inputs")
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, err := os.ReadFile(p); err == nil {
				// 2 KiB from the start and from the end (whole lines): small
				// seeds keep the fuzzer fast (minimizing inputs grown from
				// 8 KiB seeds stalled it for most of a minute).
				f.Add(b[:min(len(b), 2048)])
				if len(b) > 4096 {
					tail := b[len(b)-2048:]
					f.Add(tail[bytes.IndexByte(tail, '\n')+1:])
				}
			}
		}
		return nil
	})
	f.Add([]byte(envelope("artifact", `{"name": "recompile_reasons", "encoding": "json"}`, "[\n\"why\"\n]", "")))
	f.Fuzz(func(t *testing.T, data []byte) {
		sc := NewScanner(bytes.NewReader(data), "fuzz.log")
		sc.Want = func(*Event) bool { return true }
		sc.MaxBody = 512
		n := 0
		for sc.Next() {
			ev := sc.Event()
			n++
			if ev.Line <= 0 || ev.Payload.Offset < 0 || ev.Payload.Offset+ev.Payload.Length > int64(len(data)) {
				t.Fatalf("bad event position %+v", ev.Payload)
			}
			if len(ev.Body) > 512 {
				t.Fatalf("body %d over cap", len(ev.Body))
			}
		}
		st := sc.Stats()
		if st.Records != n || st.Bytes != int64(len(data)) || st.Records+st.Corrupted+st.NonGlog > st.Lines {
			t.Fatalf("records %d (events %d), bytes %d of %d, lines %d", st.Records, n, st.Bytes, len(data), st.Lines)
		}
	})
}

// An envelope longer than the read buffer (a 3 MiB metadata string) is
// gathered whole; the next record is still found at the right line.
func TestLongEnvelope(t *testing.T) {
	long := strings.Repeat("a", 3<<20)
	text := envelope("compilation_metrics", `{"fail_reason": "`+long+`", "fail_type": "X"}`, "", "") +
		envelope("artifact", `{"name": "dynamo_error", "encoding": "string"}`, "tb", "")
	sc := NewScanner(strings.NewReader(text), "long.log")
	var kinds []string
	var metaLen int
	for sc.Next() {
		ev := sc.Event()
		kinds = append(kinds, ev.Kind)
		if ev.Kind == "compilation_metrics" {
			metaLen = len(ev.Meta)
		}
		if ev.Kind == "artifact" && (ev.Line != 2 || !ev.MD5OK || ev.Payload.Offset != int64(strings.Index(text, "\ttb"))) {
			t.Errorf("artifact after the long line: line %d md5 %v offset %d", ev.Line, ev.MD5OK, ev.Payload.Offset)
		}
	}
	st := sc.Stats()
	if len(kinds) != 2 || metaLen < 3<<20 || st.Failed != 1 || st.Corrupted != 0 {
		t.Errorf("kinds %v meta %d failed %d corrupted %d", kinds, metaLen, st.Failed, st.Corrupted)
	}
}

// A corrupted interned-string index far past the table is ignored instead
// of growing the table to it.
func TestInternIndexBounded(t *testing.T) {
	text := `V0101 00:00:00.000000 1 torch/_logging/structured.py:1] {"str": ["a.py", 0]}` + "\n" +
		`V0101 00:00:00.000000 1 torch/_logging/structured.py:1] {"str": ["b.py", 900000000]}` + "\n"
	sc := NewScanner(strings.NewReader(text), "x.log")
	for sc.Next() {
	}
	if sc.Stats().StringTable != 1 || sc.String(0) != "a.py" || sc.String(900000000) != "" {
		t.Errorf("table %d", sc.Stats().StringTable)
	}
}

// scanAll scans text, deferring MD5 checks or not, and returns the events
// (bodies and hash inputs dropped) and the stats.
func scanAll(text []byte, deferMD5 bool) ([]Event, *Stats) {
	sc := NewScanner(bytes.NewReader(text), "t.log")
	sc.DeferMD5 = deferMD5
	var evs []Event
	var late []int
	for sc.Next() {
		ev := *sc.Event()
		if ev.MD5Deferred {
			ev.MD5OK = CheckMD5(&ev)
			if !ev.MD5OK {
				late = append(late, ev.Line)
			}
		}
		ev.MD5Deferred, ev.HashInput, ev.Body = false, nil, nil
		evs = append(evs, ev)
	}
	st := sc.Stats()
	// Counted late, as a pipeline does once the scan is over.
	for _, l := range late {
		st.AddMD5Mismatch(l)
	}
	return evs, st
}

// TestDeferMD5SameAsInline: deferring the MD5 check to the caller gives
// the same events and counts as checking inline, on every corpus file and
// on a file mixing good and bad payloads below and above MaxDeferredHash
// (the big ones are still checked by the scanner, and the mismatch lines
// stay in file order, capped).
func TestDeferMD5SameAsInline(t *testing.T) {
	var inputs [][]byte
	root := testcorpus.Dir(t, "tlparse-inputs")
	for _, pat := range []string{"*.log", "*.txt"} {
		ms, _ := filepath.Glob(filepath.Join(root, pat))
		for _, m := range ms {
			b, err := os.ReadFile(m)
			if err != nil {
				t.Fatal(err)
			}
			inputs = append(inputs, b)
		}
	}
	var mixed strings.Builder
	big := strings.Repeat("y", MaxDeferredHash+10)
	bad := func(s string) string { // the right envelope, a payload changed after hashing
		return strings.Replace(s, "\tpayload", "\tPAYLOAD", 1)
	}
	for i := 0; i < 30; i++ {
		small := envelope("artifact", `{"name": "x", "encoding": "string"}`, fmt.Sprintf("payload %d\nline\rtwo", i), "")
		large := envelope("artifact", `{"name": "y", "encoding": "string"}`, "payload big\n"+big, "")
		switch i % 3 {
		case 0:
			mixed.WriteString(bad(small))
			mixed.WriteString(large)
		case 1:
			mixed.WriteString(small)
			mixed.WriteString(bad(large))
		default:
			mixed.WriteString(small)
			mixed.WriteString(large)
		}
	}
	inputs = append(inputs, []byte(mixed.String()))
	for i, in := range inputs {
		evA, stA := scanAll(in, false)
		evB, stB := scanAll(in, true)
		if !reflect.DeepEqual(evA, evB) {
			t.Errorf("input %d: events differ when the MD5 check is deferred", i)
		}
		if !reflect.DeepEqual(stA, stB) {
			t.Errorf("input %d: stats differ when the MD5 check is deferred:\ninline   %+v\ndeferred %+v", i, stA, stB)
		}
	}
	_, st := scanAll(inputs[len(inputs)-1], true)
	if st.PayloadMD5Mismatch != 20 || len(st.MD5MismatchLines) != maxKeptLines || !sort.IntsAreSorted(st.MD5MismatchLines.Lines()) {
		t.Errorf("mixed file: %d mismatches, lines %v", st.PayloadMD5Mismatch, st.MD5MismatchLines)
	}
}

// TestSkipsWireShape: the bad lines are record.Skips in Stats and a plain
// list of line numbers in bringup.trace/v1's counts, read back as lines.
func TestSkipsWireShape(t *testing.T) {
	st := Stats{Corrupted: 2, CorruptedLines: Skips{{Line: 3, Reason: ReasonCorrupted}, {Line: 9, Reason: ReasonOversize}}}
	st.AddMD5Mismatch(40)
	st.AddMD5Mismatch(7)
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"corrupted":2,"corrupted_lines":[3,9],"non_glog":0,`, `"payload_md5_mismatch":2,"payload_md5_mismatch_lines":[7,40],`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("counts %s lack %s", b, want)
		}
	}
	if strings.Contains(string(b), "non_glog_lines") {
		t.Errorf("empty list written: %s", b)
	}
	var back Stats
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back.CorruptedLines.Lines(), []int{3, 9}) || !reflect.DeepEqual(back.MD5MismatchLines.Lines(), []int{7, 40}) {
		t.Errorf("read back %+v, %v", back, err)
	}
}
