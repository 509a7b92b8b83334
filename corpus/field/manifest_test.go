// Package field holds no code: its test keeps MANIFEST.md, the table of
// every case in this folder, in step with the cases' sidecars (the one
// place each fact is written) and checks every sidecar against its log.
package field

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

var update = flag.Bool("update", false, "rewrite MANIFEST.md from the sidecars")

// sidecar is X.expect.yaml: what the thread of X.log established.
type sidecar struct {
	Source      string   `yaml:"source"`
	Engine      string   `yaml:"engine"`
	Versions    string   `yaml:"versions"`
	Class       string   `yaml:"class"`
	Fatal       bool     `yaml:"fatal"`
	Root        string   `yaml:"root"`
	RaisedIn    string   `yaml:"raised_in"`
	Phase       string   `yaml:"phase"`
	Ranks       []string `yaml:"ranks"`
	Cause       string   `yaml:"cause"`
	Remedy      string   `yaml:"remedy"`
	RemedyWords []string `yaml:"remedy_words"`
	Inferred    []string `yaml:"inferred"`
}

var phases = map[string]bool{"import": true, "distributed-init": true, "load": true, "dynamo": true, "aot-autograd": true,
	"inductor": true, "inductor-codegen": true, "post-grad-pass": true, "triton-compile": true, "triton-launcher-build": true,
	"cache-load": true, "cache-save": true, "profile": true, "cudagraph": true, "runtime": true, "unknown": true}

func cell(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return strings.ReplaceAll(s, "|", `\|`)
}

func TestManifest(t *testing.T) {
	logs, _ := filepath.Glob("*.log")
	sort.Strings(logs)
	if len(logs) == 0 {
		t.Fatal("no cases")
	}
	var b bytes.Buffer
	b.WriteString("# corpus/field — MANIFEST\n\n")
	b.WriteString("Generated from the `*.expect.yaml` sidecars by `go test ./corpus/field -update`; edit the sidecars, not this table. ")
	b.WriteString("How the cases were taken and what each key means: [README.md](README.md). `(inferred: …)` names the fields that are our reading, not the thread's.\n\n")
	fatal, classes := 0, map[string]int{}
	var rows bytes.Buffer
	for _, l := range logs {
		name := strings.TrimSuffix(l, ".log")
		data, err := os.ReadFile(name + ".expect.yaml")
		if err != nil {
			t.Errorf("%s: no sidecar: %v", l, err)
			continue
		}
		var s sidecar
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		if err := dec.Decode(&s); err != nil {
			t.Errorf("%s.expect.yaml: %v", name, err)
			continue
		}
		text, _ := os.ReadFile(l)
		if s.Fatal && (s.Root == "" || !bytes.Contains(text, []byte(s.Root))) {
			t.Errorf("%s: root %q is not in the log", name, s.Root)
		}
		if s.RaisedIn != "" && !bytes.Contains(text, []byte(s.RaisedIn)) {
			t.Errorf("%s: raised_in %q is not in the log", name, s.RaisedIn)
		}
		if !phases[s.Phase] {
			t.Errorf("%s: phase %q is not one of the corpus's phases", name, s.Phase)
		}
		if !strings.HasPrefix(s.Source, "https://github.com/") {
			t.Errorf("%s: source %q is not a thread", name, s.Source)
		}
		if s.Fatal {
			fatal++
		}
		classes[s.Class]++
		inf := ""
		if len(s.Inferred) > 0 {
			inf = " (inferred: " + strings.Join(s.Inferred, ", ") + ")"
		}
		fmt.Fprintf(&rows, "| `%s` | %s | %s / %s | %s | %v | %s | %s | %s%s |\n", l, s.Source, cell(s.Engine), cell(s.Versions),
			cell(s.Class), s.Fatal, cell(s.Phase), cell(s.Cause), cell(s.Remedy), inf)
	}
	fmt.Fprintf(&b, "%d cases (%d fatal, %d not), %d classes.\n\n", len(logs), fatal, len(logs)-fatal, len(classes))
	b.WriteString("| file | source | engine / versions | class | fatal | phase | cause (per thread) | remedy |\n|---|---|---|---|---|---|---|---|\n")
	b.Write(rows.Bytes())
	if *update {
		if err := os.WriteFile("MANIFEST.md", b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	have, _ := os.ReadFile("MANIFEST.md")
	if !bytes.Equal(have, b.Bytes()) {
		t.Errorf("MANIFEST.md is out of date: go test ./corpus/field -update")
	}
}
