package watch

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bringup-tool/bringup/store"
)

func TestParseStatOwnProcess(t *testing.T) {
	p, err := readStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if p.PPID != os.Getppid() || p.Start == 0 || p.State == 0 || p.Comm == "" {
		t.Errorf("stat of self: %+v", p)
	}
	// A comm with spaces and parentheses, as a process may name itself.
	line := []byte("4242 (my (odd) name) S 1 4242 4242 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 777 0 0")
	q, err := parseStat(4242, line)
	if err != nil || q.Comm != "my (odd) name" || q.PPID != 1 || q.PGID != 4242 || q.Start != 777 {
		t.Errorf("parseStat = %+v, %v", q, err)
	}
	if _, err := parseStat(1, []byte("1 (x) S 0")); err == nil {
		t.Error("a short stat line parsed")
	}
}

func FuzzParseStat(f *testing.F) {
	if b, err := os.ReadFile("/proc/self/stat"); err == nil {
		f.Add(b)
	}
	f.Add([]byte("4242 (my (odd) name) S 1 4242 4242 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 777 0 0"))
	f.Add([]byte(")("))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := parseStat(1, b)
		if err == nil && p.State == 0 {
			t.Errorf("parsed without a state: %q", b)
		}
	})
}

func TestParseEnviron(t *testing.T) {
	env := parseEnviron([]byte("A=1\x00B=x=y\x00=noname\x00NOEQ\x00EMPTY=\x00"))
	if len(env) != 3 || env["A"] != "1" || env["B"] != "x=y" || env["EMPTY"] != "" {
		t.Errorf("parseEnviron = %v", env)
	}
	self, err := readEnviron(os.Getpid())
	if err != nil || self["PATH"] != os.Getenv("PATH") {
		t.Errorf("environ of self: PATH %q, %v", self["PATH"], err)
	}
}

func FuzzParseEnviron(f *testing.F) {
	if b, err := os.ReadFile("/proc/self/environ"); err == nil {
		f.Add(b)
	}
	f.Add([]byte("A=1\x00B=x=y\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for k := range parseEnviron(b) {
			if k == "" || strings.ContainsAny(k, "=\x00") {
				t.Errorf("bad name %q from %q", k, b)
			}
		}
	})
}

func TestParseEnvFile(t *testing.T) {
	env := map[string]string{"KEEP": "1"}
	in := "# knobs for the GLM trunk\n\nexport VLLM_USE_AOT_COMPILE=0\nVLLM_COMPILE_FULLGRAPH = '0'\nR4D_GLM_COMPILE=\"1\"\nURL=http://x/?a=b\n"
	if err := ParseEnvFile(strings.NewReader(in), "knobs.env", env); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"KEEP": "1", "VLLM_USE_AOT_COMPILE": "0", "VLLM_COMPILE_FULLGRAPH": "0", "R4D_GLM_COMPILE": "1", "URL": "http://x/?a=b"}
	if fmt.Sprint(env) != fmt.Sprint(want) {
		t.Errorf("env = %v, want %v", env, want)
	}
	for _, bad := range []string{"A=1\nnot an assignment\n", "1X=2\n", "=3\n"} {
		err := ParseEnvFile(strings.NewReader(bad), "bad.env", map[string]string{})
		if err == nil || !strings.HasPrefix(err.Error(), "bad.env:") {
			t.Errorf("%q: err %v, want bad.env:LINE", bad, err)
		}
	}
}

func FuzzParseEnvFile(f *testing.F) {
	f.Add("export A=1\n# c\nB='2'\n")
	f.Add("A\n")
	f.Fuzz(func(t *testing.T, s string) {
		env := map[string]string{}
		if err := ParseEnvFile(strings.NewReader(s), "f", env); err == nil {
			for k := range env {
				if !ValidEnvName(k) {
					t.Errorf("accepted name %q", k)
				}
			}
		}
	})
}

// Whatever chunks the pipe delivers, output.log holds exactly the bytes
// printed (a final newline added to an unterminated last line), the
// terminal gets them unchanged, and the line count is the newline count.
func FuzzTee(f *testing.F) {
	f.Add([]byte("a\nb\n"), []byte("c"), []byte("\nd"))
	f.Add([]byte("\x00\xff\n"), []byte{}, []byte("\r\n\r"))
	f.Fuzz(func(t *testing.T, a, b, c []byte) {
		file, err := os.CreateTemp(t.TempDir(), "out")
		if err != nil {
			t.Fatal(err)
		}
		defer file.Close()
		var term bytes.Buffer
		var parsed bytes.Buffer
		tc := newTermCopy(&term, &term, nil, nil, 0)
		defer tc.close(time.Second)
		tee := newTee(file, tc, func(l []byte) {
			if len(l) == 0 || l[len(l)-1] != '\n' {
				t.Errorf("tracker got %q, not whole lines", l)
			}
			parsed.Write(l)
		})
		for _, ch := range [][]byte{a, b, c} {
			if len(ch) > 0 {
				tee.consume(0, ch)
			}
		}
		tee.finish(0)
		tc.drain(time.Second)
		in := append(append(append([]byte{}, a...), b...), c...)
		want := in
		if len(in) > 0 && in[len(in)-1] != '\n' {
			want = append(append([]byte{}, in...), '\n')
		}
		got, _ := os.ReadFile(file.Name())
		if !bytes.Equal(got, want) || !bytes.Equal(parsed.Bytes(), want) || !bytes.Equal(term.Bytes(), in) {
			t.Errorf("in %q: file %q, parsed %q, terminal %q", in, got, parsed.Bytes(), term.Bytes())
		}
		if lines, _ := tee.counts(); lines != int64(bytes.Count(want, []byte{'\n'})) {
			t.Errorf("counted %d lines in %q", lines, want)
		}
	})
}

func TestStatusText(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 23, 0, 0, 0, time.UTC)
	phases := []store.Phase{
		{Rank: "TP0", Name: "dynamo", Start: t0},
		{Rank: "TP0", Name: "inductor", Start: t0.Add(time.Second), Open: true},
		{Rank: "TP1", Name: "inductor", Start: t0.Add(time.Second), Open: true},
		{Rank: "TP2", Name: "dynamo", Start: t0, Open: true},
	}
	got := statusText(83*time.Second, 3200*time.Millisecond, phases, "")
	want := "watch 1m23s · last output 3.2s ago · TP0,TP1 inductor · TP2 dynamo"
	if got != want {
		t.Errorf("status %q\nwant   %q", got, want)
	}
	if got := statusText(1400*time.Millisecond, -1, nil, ""); got != "watch 1.4s · no output yet" {
		t.Errorf("status before any output %q", got)
	}
	var term bytes.Buffer
	s := &statusLine{w: &term, atStart: false}
	s.drawLocked("x")
	if term.Len() != 0 {
		t.Error("status drawn in the middle of a line of the boot's output")
	}
	s.trackLocked([]byte("done\n"))
	s.drawLocked("x")
	s.clearLocked()
	if term.String() != "\r\x1b[K\x1b[2mx\x1b[0m\r\x1b[K" {
		t.Errorf("terminal got %q", term.String())
	}
}

// A silent boot with a busy GPU is not a hang: the real probe runs the
// nvidia-smi found on PATH (here a stand-in script that reports 87%).
func TestSilenceWithBusyGPU(t *testing.T) {
	py := needPython(t)
	bin := t.TempDir()
	smi := filepath.Join(bin, "nvidia-smi")
	if err := os.WriteFile(smi, []byte("#!/bin/sh\necho 87\necho 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	r := boot(t, t.Context(), Config{
		Command: []string{py, "-c", "import time; print('compiling', flush=True); time.sleep(60)"},
		Silence: time.Second, OnSilence: "stop", Timeout: 4 * time.Second,
		Capture: StacksCapture(1, 0, reportStyle()),
	})
	if r.run.Outcome != store.OutcomeTimeout || len(r.run.Silences) != 0 {
		t.Errorf("outcome %q silences %+v: a busy GPU must not count as hung", r.run.Outcome, r.run.Silences)
	}
	if !strings.Contains(r.msgs.String(), "GPU is busy (87% (nvidia-smi))") {
		t.Errorf("messages:\n%s", r.msgs.String())
	}
}
