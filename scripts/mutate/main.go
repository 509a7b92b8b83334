// Command mutate applies, one at a time, the mutations listed in
// mutations.yaml beside it to a copy of one file (through go test's
// -overlay, so the working tree is never written), runs the tests of the
// package that should notice, and reports each mutation as killed (a test
// failed), survived (every test passed: a hole in the tests) or stale (its
// text is no longer in the file exactly once: update the list).
//
//	go run ./scripts/mutate            # every mutation
//	go run ./scripts/mutate -only NAME # those whose name contains NAME
//
// It exits 1 when any mutation survived or is stale.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Mutation is one change that some test must notice.
type Mutation struct {
	Name string `yaml:"name"`
	File string `yaml:"file"` // relative to the repository root
	Old  string `yaml:"old"`  // must occur exactly once in File
	New  string `yaml:"new"`
	Pkg  string `yaml:"pkg"` // the package whose tests must fail, e.g. ./rules
	Run  string `yaml:"run"` // optional -run pattern to keep the check short
}

func main() {
	only := flag.String("only", "", "run only the mutations whose name contains this")
	flag.Parse()
	_, self, _, _ := runtime.Caller(0)
	root := filepath.Clean(filepath.Join(filepath.Dir(self), "..", ".."))
	list, err := os.ReadFile(filepath.Join(filepath.Dir(self), "mutations.yaml"))
	if err != nil {
		fail(err)
	}
	var ms []Mutation
	if err := yaml.Unmarshal(list, &ms); err != nil {
		fail(fmt.Errorf("mutations.yaml: %w", err))
	}
	tmp, err := os.MkdirTemp("", "bringup-mutate-")
	if err != nil {
		fail(err)
	}
	defer os.RemoveAll(tmp)
	bad := 0
	for i, m := range ms {
		if *only != "" && !strings.Contains(m.Name, *only) {
			continue
		}
		verdict := check(root, tmp, i, m)
		if verdict != "killed" {
			bad++
		}
		fmt.Printf("%-9s %s (%s)\n", verdict, m.Name, m.File)
	}
	if bad > 0 {
		fmt.Printf("%d mutation(s) survived or are stale\n", bad)
		os.Exit(1)
	}
}

func check(root, tmp string, i int, m Mutation) string {
	src := filepath.Join(root, m.File)
	data, err := os.ReadFile(src)
	if err != nil || bytes.Count(data, []byte(m.Old)) != 1 {
		return "stale"
	}
	mut := filepath.Join(tmp, fmt.Sprintf("m%d-%s", i, filepath.Base(m.File)))
	if err := os.WriteFile(mut, bytes.Replace(data, []byte(m.Old), []byte(m.New), 1), 0o644); err != nil {
		fail(err)
	}
	ov, _ := json.Marshal(map[string]map[string]string{"Replace": {src: mut}})
	ovPath := filepath.Join(tmp, fmt.Sprintf("m%d.json", i))
	if err := os.WriteFile(ovPath, ov, 0o644); err != nil {
		fail(err)
	}
	args := []string{"test", "-count=1", "-overlay", ovPath}
	if m.Run != "" {
		args = append(args, "-run", m.Run)
	}
	cmd := exec.Command("go", append(args, m.Pkg)...)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err == nil {
		return "survived"
	}
	if bytes.Contains(out, []byte("[build failed]")) || bytes.Contains(out, []byte("[setup failed]")) {
		fmt.Fprintf(os.Stderr, "%s: the mutant does not build:\n%s", m.Name, out)
		return "stale"
	}
	return "killed"
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "mutate:", err)
	os.Exit(2)
}
