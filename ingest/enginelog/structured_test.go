package enginelog

import (
	"strings"
	"testing"

	"github.com/bringup-tool/bringup/record"
)

// A line a collector or a structured logger wrapped is read as its
// message: docker's json-file records, a JSON logger's (TGI's
// --json-output: a whole traceback in one value gives its exception
// line), logfmt's msg="…" (a logrus wrapper running vLLM). Line numbers
// stay the file's.
func TestStructuredLines(t *testing.T) {
	log := `{"log":"Traceback (most recent call last):\n","stream":"stderr","time":"2024-01-01T00:00:00.1Z"}` + "\n" +
		`{"log":"  File \"/x/vllm/worker.py\", line 3, in load_model\n","stream":"stderr"}` + "\n" +
		`{"log":"RuntimeError: boom\n","stream":"stderr"}` + "\n" +
		`{"timestamp":"2023-07-06T19:16:30Z","level":"ERROR","fields":{"message":"Error when initializing model\nTraceback (most recent call last):\n  File \"/opt/x.py\", line 1, in f\nRuntimeError: weight encoder.embed_tokens.weight does not exist\n"},"target":"text_generation_launcher"}` + "\n" +
		`time="2026-01-29T14:55:54Z" level=info msg="  File \"/opt/vllm-env/bin/vllm\", line 10, in <module>" component=vllm` + "\n" +
		`{'model': 'x', "not": "json"}` + "\n" +
		`{"type": "metrics", "value": 3}` + "\n"
	var texts []string
	var lines []int
	if _, err := Parse(strings.NewReader(log), "s.log", func(r record.Record) {
		for i, l := range strings.Split(r.Text, "\n") {
			texts = append(texts, l)
			lines = append(lines, r.Line+i)
		}
	}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"Traceback (most recent call last):",
		`  File "/x/vllm/worker.py", line 3, in load_model`,
		"RuntimeError: boom",
		"RuntimeError: weight encoder.embed_tokens.weight does not exist",
		`  File "/opt/vllm-env/bin/vllm", line 10, in <module>`,
		`{'model': 'x', "not": "json"}`,
		`{"type": "metrics", "value": 3}`,
	}
	if strings.Join(texts, "\n") != strings.Join(want, "\n") {
		t.Fatalf("texts:\n%s\nwant:\n%s", strings.Join(texts, "\n"), strings.Join(want, "\n"))
	}
	for i, n := range lines {
		if n != i+1 {
			t.Errorf("line %q is numbered %d, want %d", texts[i], n, i+1)
		}
	}
}

// An excerpt that starts inside a JSON record's message (the paste cut
// the record's start) is read as that message's end: its last line. Only
// when what follows the value closes a record, and only for a value of
// several lines.
func TestCutStructuredTail(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`init__\n    model = T5(config)\n\nRuntimeError: weight x does not exist\n\n"},"target":"text_generation_launcher"}`, "RuntimeError: weight x does not exist"},
		{`line 3\nValueError: caf\u00e9 \"q\"\n"}`, `ValueError: café "q"`},
		{`one line only"},"target":"t"}`, ""},
		{`a\nb"} trailing`, ""},
		{`a\nb"},"target":}`, ""},
		{`a\nb", "k": "v"}`, "b"},
		{"a\\nb\"}\r", "b"},
		{`config: {"prompt": "a\nb"}`, ""},
	} {
		got, ok := cutStructuredTail(nil, []byte(c.in))
		if string(got) != c.want || ok != (c.want != "") {
			t.Errorf("cutStructuredTail(%q) = %q %v, want %q", c.in, got, ok, c.want)
		}
	}
	log := "x\\nRuntimeError: boom\\n\"}\nINFO 12-02 04:00:00 [a.py:1] ok\nx\\nRuntimeError: second\\n\"}\n"
	var texts []string
	if _, err := Parse(strings.NewReader(log), "s.log", func(r record.Record) { texts = append(texts, r.Text) }); err != nil {
		t.Fatal(err)
	}
	all := strings.Join(texts, "\n")
	if !strings.HasPrefix(all, "RuntimeError: boom\n") || !strings.HasSuffix(all, "\nRuntimeError: second") {
		t.Errorf("records %q: each cut record read as its message's last line", texts)
	}
}
