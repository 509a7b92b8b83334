package stacks

import (
	"testing"

	"github.com/bringup-tool/bringup/record"
)

func st(pairs ...string) record.Stack {
	var s record.Stack
	for i := 0; i+1 < len(pairs); i += 2 {
		s = append(s, record.Frame{Func: pairs[i], File: pairs[i+1]})
	}
	return s
}

func TestCollapsePeriods(t *testing.T) {
	var fr []string
	fr = append(fr, "leaf", "a.py")
	for i := 0; i < 5; i++ {
		fr = append(fr, "ExternKernel.__str__", "torch/_inductor/ir.py", "<listcomp>", "torch/_inductor/ir.py", "MutableBox.__str__", "torch/_inductor/ir.py")
	}
	fr = append(fr, "operator_str", "torch/_inductor/exc.py")
	c := Collapse(st(fr...), newNormalizer(nil))
	// __str__, <listcomp>, __str__ is not a run of one key: period 3 ×5.
	if len(c) != 3 || c[1].Repeat != 5 || len(c[1].Keys) != 3 || c[0].Repeat != 1 || c[2].Keys[0].Func != "operator_str" {
		t.Fatalf("collapsed %+v", c)
	}
	if got := FuncLabel(c[1].Funcs[0]); got != "ExternKernel.__str__" {
		t.Errorf("label %q", got)
	}
	if c.Depth() != 17 {
		t.Errorf("depth %d", c.Depth())
	}
	// Two repetitions are not recursion.
	c = Collapse(st("f", "a.py", "g", "a.py", "f", "a.py", "g", "a.py"), nil)
	if len(c) != 4 {
		t.Errorf("k=2 collapsed: %+v", c)
	}
	// Qualified names that differ where co_name agrees are one key.
	c = Collapse(st("ExternKernel.__str__", "torch/_inductor/ir.py", "MutableBox.__str__", "torch/_inductor/ir.py", "MutableBox.__str__", "torch/_inductor/ir.py"), nil)
	if len(c) != 1 || c[0].Repeat != 3 || FuncLabel(c[0].Funcs[0]) != "{ExternKernel,MutableBox}.__str__" {
		t.Errorf("mixed classes %+v label %q", c, FuncLabel(c[0].Funcs[0]))
	}
}

func TestNormalise(t *testing.T) {
	cases := []struct{ in, want string }{
		{"/usr/local/lib/python3.12/dist-packages/torch/_inductor/graph.py", "torch/_inductor/graph.py"},
		{"/opt/venv/lib/python3.11/site-packages/vllm/worker.py", "vllm/worker.py"},
		{"/usr/lib/python3.12/threading.py", "threading.py"},
		{"/tmp/torchinductor_root/ab/cabcdef.py", "<inductor-generated>"},
		{"<eval_with_key>.12", "<inductor-generated>"},
		{"/proc/77/root/app/serve.py", "app/serve.py"},
	}
	for _, c := range cases {
		if got := NormFile(c.in, false); got != c.want {
			t.Errorf("NormFile(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := NormFile("libcuda.so.560.35.03", true); got != "libcuda.so" {
		t.Errorf("lib version: %q", got)
	}
	if got := NormFunc("0x7f259f401d71", true, "libc.so"); got != "<unknown in libc.so>" {
		t.Errorf("address: %q", got)
	}
	if got := NormFunc("pybind11::cpp_function::initialize<bool, c10d::Work>(pybind11::name const)::{lambda(c10d::Work*)#1}", true, "x"); got != "pybind11::cpp_function::initialize<…>(…)::{lambda(…)#1}" {
		t.Errorf("c++: %q", got)
	}
	if got := NormFunc("torch_dynamo_resume_in_forward_at_120", false, ""); got != "forward" {
		t.Errorf("resume: %q", got)
	}
	if got := NormFunc("ExternKernel.__str__", false, ""); got != "__str__" {
		t.Errorf("qualified: %q", got)
	}
	// A short path resolves to the one longer path of the same input.
	n := newNormalizer([]*Process{{Threads: []Thread{{Frames: st("f", "/x/site-packages/sglang/srt/utils/common.py")}}}})
	if got := n.key(record.Frame{Func: "f", File: "utils/common.py"}).File; got != "sglang/srt/utils/common.py" {
		t.Errorf("suffix index: %q", got)
	}
}

func TestRankSet(t *testing.T) {
	cases := []struct {
		in    []string
		total int
		want  string
	}{
		{[]string{"TP0", "TP1", "TP2", "TP3", "TP4", "TP5", "TP6", "TP7"}, 8, "ranks 0-7 (8/8)"},
		{[]string{"rank5"}, 8, "rank 5 (1/8)"},
		{[]string{"TP0", "TP2", "TP3"}, 0, "ranks 0,2-3"},
		{[]string{"PP2 TP1", "PP3 TP1"}, 4, "ranks PP2 TP1, PP3 TP1 (2/4)"},
	}
	for _, c := range cases {
		if got := RankSet(c.in, c.total); got != c.want {
			t.Errorf("RankSet(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}
