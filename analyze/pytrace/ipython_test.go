package pytrace

import (
	"reflect"
	"testing"

	"github.com/bringup-tool/bringup/record"
)

// Colab's traceback, cut in a frame: the header's type is what was
// raised; frames are read from IPython's "PATH in FUNC(ARGS)" lines (the
// path a Markdown link), their line from the arrowed source line.
func TestIPythonColabCut(t *testing.T) {
	tbs := feedN(t, 1,
		"---------------------------------------------------------------------------",
		"InternalTorchDynamoError                  Traceback (most recent call last)",
		"[<ipython-input-19-61daefda3be3>](https://localhost:8080/#) in <cell line: 15>()",
		"     13 ",
		"     14 compiled_m = torch.compile(m) # passes",
		"---> 15 compiled_m(torch.randn(3, 4)) # fails",
		"",
		"21 frames",
		"[/usr/local/lib/python3.10/dist-packages/torch/nn/modules/module.py](https://localhost:8080/#) in _wrapped_call_impl(self, *args, **kwargs)",
		"   1517         else:",
		"-> 1518             return self._call_impl(*args, **kwargs)",
		"   1519 ",
		"   1520     def _ca",
	)
	r := tbs[0].Root()
	want := record.Stack{
		{File: "/usr/local/lib/python3.10/dist-packages/torch/nn/modules/module.py", Line: 1518, Func: "_wrapped_call_impl"},
		{File: "<ipython-input-19-61daefda3be3>", Line: 15, Func: "<cell line: 15>"},
	}
	if r.Type != "InternalTorchDynamoError" || r.Message != "" || !tbs[0].Truncated || !reflect.DeepEqual(r.Frames, want) ||
		r.Code[0] != "return self._call_impl(*args, **kwargs)" || r.Code[1] != "compiled_m(torch.randn(3, 4)) # fails" {
		t.Errorf("got %+v", tbs[0])
	}
}

// IPython 8's form, whole: "Cell In[N], line L" and "File PATH:LINE, in
// FUNC(ARGS)" frames, then the exception line, whose message it takes; a
// chained one's header starts the next exception of the chain.
func TestIPython8Chain(t *testing.T) {
	tbs := feedLines(
		"KeyError                                  Traceback (most recent call last)",
		"Cell In[3], line 2",
		"      1 try:",
		"----> 2     d['x']",
		"",
		"KeyError: 'x'",
		"",
		"During handling of the above exception, another exception occurred:",
		"",
		"RuntimeError                              Traceback (most recent call last)",
		"Cell In[3], line 4",
		"----> 4     f()",
		"",
		"File ~/env/lib/python3.11/site-packages/pkg/mod.py:7, in f()",
		"      6 def f():",
		"----> 7     raise RuntimeError('boom')",
		"",
		"RuntimeError: boom",
	)
	if len(tbs) != 1 || len(tbs[0].Chain) != 2 || tbs[0].Truncated {
		t.Fatalf("%+v", tbs)
	}
	k, rt := tbs[0].Chain[0], tbs[0].Chain[1]
	if k.Type != "KeyError" || k.Message != "'x'" || k.Relation != "context" || len(k.Frames) != 1 || k.Frames[0] != (record.Frame{File: "Cell In[3]", Line: 2}) {
		t.Errorf("first: %+v", k)
	}
	want := record.Stack{{File: "~/env/lib/python3.11/site-packages/pkg/mod.py", Line: 7, Func: "f"}, {File: "Cell In[3]", Line: 4}}
	if rt.Type != "RuntimeError" || rt.Message != "boom" || !reflect.DeepEqual(rt.Frames, want) || rt.Code[0] != "raise RuntimeError('boom')" {
		t.Errorf("second: %+v", rt)
	}
}

func TestIPythonHeader(t *testing.T) {
	for line, want := range map[string]string{
		"InternalTorchDynamoError                  Traceback (most recent call last)": "InternalTorchDynamoError",
		"torch._dynamo.exc.Unsupported  Traceback (most recent call last)":            "torch._dynamo.exc.Unsupported",
		"KeyError Traceback (most recent call last)":                                  "", // one space: not IPython's column
		"Traceback (most recent call last)":                                           "",
		"the run failed  Traceback (most recent call last)":                           "",
		"Value  Traceback (most recent call last)":                                    "", // not an exception's name
	} {
		got, ok := ipythonHeader(line)
		if got != want || ok != (want != "") {
			t.Errorf("%q: %q %v, want %q", line, got, ok, want)
		}
	}
}
