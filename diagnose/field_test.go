package diagnose

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/bringup-tool/bringup/record"
)

// fieldExpect is a field-corpus sidecar (corpus/field/X.expect.yaml): what
// the public thread established about X.log.
type fieldExpect struct {
	Source      string   `yaml:"source"`
	Engine      string   `yaml:"engine"`
	Versions    string   `yaml:"versions"`
	Class       string   `yaml:"class"`
	Fatal       bool     `yaml:"fatal"`
	Root        string   `yaml:"root"`      // a substring of the root exception line
	RaisedIn    string   `yaml:"raised_in"` // path suffix of the raising frame, "" when none
	Phase       string   `yaml:"phase"`
	Ranks       []string `yaml:"ranks"`
	Cause       string   `yaml:"cause"`
	Remedy      string   `yaml:"remedy"`
	RemedyWords []string `yaml:"remedy_words"`
	Inferred    []string `yaml:"inferred"` // checks reported but not asserted (phase, ranks, …)
}

// fieldDir is the field corpus: FIELD_DIR, or ../corpus/field.
func fieldDir(t *testing.T) string {
	if d := os.Getenv("FIELD_DIR"); d != "" {
		return d
	}
	d := filepath.Join("..", "corpus", "field")
	if _, err := os.Stat(d); err != nil {
		t.Skipf("no field corpus at %s", d)
	}
	return d
}

// fieldMisses are the checks known to fail, one "file check: why" a line
// in testdata/field-known-misses.txt: reported, not failed; a known miss
// that passes fails the test, so the list only shrinks.
func fieldMisses(t *testing.T) map[string]string {
	out := map[string]string{}
	f, err := os.Open(filepath.Join("testdata", "field-known-misses.txt"))
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		k, why, _ := strings.Cut(l, ":")
		out[strings.TrimSpace(k)] = strings.TrimSpace(why)
	}
	return out
}

// fieldCheck is one check of one corpus file.
type fieldCheck struct {
	name     string // status, root, phase, ranks, remedy, quiet
	ok       bool
	inferred bool
	got      string
}

// checkField diagnoses one corpus file against its sidecar.
func checkField(t *testing.T, logPath string, want fieldExpect) []fieldCheck {
	d, err := Run([]string{logPath}, Options{})
	if err != nil {
		return []fieldCheck{{name: "status", got: err.Error()}}
	}
	inferred := func(c string) bool { return slices.Contains(want.Inferred, c) }
	var top *record.Finding
	for i := range d.Findings {
		if d.Findings[i].Severity == record.SeverityError {
			top = &d.Findings[i]
			break
		}
	}
	if !want.Fatal {
		got := "no error finding"
		if top != nil {
			got = top.Rule + ": " + top.Root
		}
		return []fieldCheck{{name: "quiet", ok: top == nil, got: got}}
	}
	var out []fieldCheck
	out = append(out, fieldCheck{name: "status", ok: d.Status == "failed" && d.HasErrors(), got: d.Status + ": " + d.Verdict})
	if top == nil {
		for _, c := range []string{"root", "phase", "ranks", "remedy"} {
			out = append(out, fieldCheck{name: c, inferred: inferred(c), got: "no error finding"})
		}
		return out
	}
	text := top.Root + "\n" + top.Title
	for _, e := range top.Evidence {
		text += "\n" + e.Text
	}
	// Evidence lines are trimmed: blanks at the ends of a quoted root are
	// not its words.
	out = append(out, fieldCheck{name: "root", ok: strings.Contains(text, strings.TrimSpace(want.Root)), inferred: inferred("root"),
		got: top.Rule + ": " + firstLine(top.Root)})
	out = append(out, fieldCheck{name: "phase", ok: top.Phase == want.Phase, inferred: inferred("phase"),
		got: top.Phase + " (" + top.PhaseWhy + ")"})
	out = append(out, fieldCheck{name: "ranks", ok: sameRanks(top.Ranks, want.Ranks), inferred: inferred("ranks"),
		got: fmt.Sprintf("%q", top.Ranks)})
	if len(want.RemedyWords) > 0 {
		ok := false
		for _, r := range top.Remedy {
			for _, w := range want.RemedyWords {
				ok = ok || strings.Contains(strings.ToLower(r), strings.ToLower(w))
			}
		}
		out = append(out, fieldCheck{name: "remedy", ok: ok, inferred: inferred("remedy"), got: top.Rule})
	}
	return out
}

// TestFieldCorpus diagnoses every file of the field corpus (real failures
// from public threads that no rule was written from at first) and checks
// it against its sidecar: a fatal log is failed with exit 1, its top error
// finding names the root exception, the phase (unless inferred), the
// ranks, and a remedy with one of the sidecar's words; a log with no
// fatal error has no error finding. `go test ./diagnose -run
// TestFieldCorpus -v` prints the accuracy per class (scripts/field-accuracy).
func TestFieldCorpus(t *testing.T) {
	dir := fieldDir(t)
	cases := fieldCases(t)
	misses := fieldMisses(t)
	type tally struct{ files, right, inferred, inferredRight int }
	perClass := map[string]*tally{}
	perCheck := map[string]*tally{}
	total := tally{}
	var wrong []string
	for _, fc := range cases {
		name, logPath, want := fc.name, fc.log, fc.want
		checks := checkField(t, logPath, want)
		cls := perClass[want.Class]
		if cls == nil {
			cls = &tally{}
			perClass[want.Class] = cls
		}
		right := true
		for _, c := range checks {
			ct := perCheck[c.name]
			if ct == nil {
				ct = &tally{}
				perCheck[c.name] = ct
			}
			if !c.inferred {
				ct.files++
				if c.ok {
					ct.right++
				}
			} else {
				ct.inferred++
				if c.ok {
					ct.inferredRight++
				}
			}
			key := name + " " + c.name
			why, known := misses[key]
			switch {
			case c.ok && known:
				t.Errorf("%s: passes now; remove it from testdata/field-known-misses.txt", key)
			case !c.ok && c.inferred:
				t.Logf("%s (inferred, not asserted): got %s, sidecar %q", key, c.got, sidecarValue(want, c.name))
			case !c.ok && known:
				t.Logf("%s: known miss (%s): got %s", key, why, c.got)
			case !c.ok:
				t.Errorf("%s: got %s, sidecar says %q", key, c.got, sidecarValue(want, c.name))
			}
			if !c.ok && !c.inferred {
				right = false
			}
		}
		cls.files++
		total.files++
		if right {
			cls.right++
			total.right++
		} else {
			wrong = append(wrong, name)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "field corpus %s: %d/%d files fully right (checks not marked inferred)\n", dir, total.right, total.files)
	classes := make([]string, 0, len(perClass))
	for c := range perClass {
		classes = append(classes, c)
	}
	sort.Strings(classes)
	fmt.Fprintf(&b, "  %-40s %s\n", "class", "right/files")
	for _, c := range classes {
		fmt.Fprintf(&b, "  %-40s %d/%d\n", c, perClass[c].right, perClass[c].files)
	}
	fmt.Fprintf(&b, "  %-40s %s\n", "check", "right/asserted  (where the sidecar marks it inferred: right/reported)")
	for _, c := range []string{"status", "root", "phase", "ranks", "remedy", "quiet"} {
		if ct := perCheck[c]; ct != nil {
			fmt.Fprintf(&b, "  %-40s %d/%d", c, ct.right, ct.files)
			if ct.inferred > 0 {
				fmt.Fprintf(&b, "  (inferred: %d/%d)", ct.inferredRight, ct.inferred)
			}
			b.WriteString("\n")
		}
	}
	if len(wrong) > 0 {
		fmt.Fprintf(&b, "  not fully right: %s\n", strings.Join(wrong, " "))
	}
	t.Log("\n" + b.String())
}

// sameRanks: the finding's ranks are the sidecar's labels (printed as the
// log prints them: "Worker_TP0", "rank=0", "Rank 3", "EngineCore_1"), one
// for one; a label names the indices it shows ("TP0" is "DP0 TP0").
//
// The sidecars list worker ranks; an engine process that names no worker
// index ("EngineCore DP0" of a single engine, "APIServer pid 12",
// "RayWorkerVllm pid 3") is not one, unless the sidecar lists engine cores.
func sameRanks(got, want []string) bool {
	cores := false
	for _, w := range want {
		cores = cores || strings.HasPrefix(w, "EngineCore")
	}
	var workers []string
	for _, g := range got {
		r, ok := canonRank(g)
		if !cores && (!ok || r.TP < 0 && r.PP < 0 && r.EP < 0 && r.Global < 0) && !slices.Contains(want, g) {
			continue
		}
		workers = append(workers, g)
	}
	got = workers
	if len(got) != len(want) {
		return false
	}
	used := make([]bool, len(got))
	for _, w := range want {
		wr, wok := canonRank(w)
		found := false
		for i, g := range got {
			if used[i] {
				continue
			}
			gr, gok := canonRank(g)
			if wok && gok && sub(wr, gr) || !wok && g == w {
				used[i], found = true, true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func canonRank(label string) (record.Rank, bool) {
	r := record.NoRank
	// TensorRT-LLM prints "[RANK 1]", Gaudi's bridge "[Rank:0]".
	l := strings.NewReplacer("RANK ", "Rank", "Rank ", "Rank", "Rank:", "Rank").Replace(label)
	for _, p := range []string{"EngineCore_", "EngineCore "} { // vLLM's engine cores are per DP rank
		if strings.HasPrefix(l, p) && len(l) > len(p) && l[len(p)] >= '0' && l[len(p)] <= '9' {
			l = "DP" + l[len(p):]
		}
	}
	if strings.HasPrefix(l, "VllmWorker-") {
		l = "rank" + strings.TrimPrefix(l, "VllmWorker-")
	}
	ok := record.ScanRankTokens(l, &r)
	return r, ok
}

// sub: every index a names, b has.
func sub(a, b record.Rank) bool {
	eq := func(x, y int) bool { return x < 0 || x == y }
	return eq(a.DP, b.DP) && eq(a.PP, b.PP) && eq(a.TP, b.TP) && eq(a.EP, b.EP) && eq(a.Global, b.Global)
}

func sidecarValue(e fieldExpect, check string) string {
	switch check {
	case "status":
		return "fatal"
	case "root":
		return e.Root
	case "phase":
		return e.Phase
	case "ranks":
		return strings.Join(e.Ranks, ",")
	case "remedy":
		return strings.Join(e.RemedyWords, "|")
	case "quiet":
		return "not fatal"
	}
	return ""
}
