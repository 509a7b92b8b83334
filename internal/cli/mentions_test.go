package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// A remedy that names a command bringup does not have ("bringup capture
// PID") sends the user into a wall. TestMentionedCommandsExist reads every
// `bringup …` a rule or a doc tells the user to run and checks it against
// the real command tree: the command and subcommands exist, and each flag
// given after them is one of theirs.

// repoRoot is the repository root, found from this file.
func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// mention is one `bringup …` invocation found in a file.
type mention struct {
	file string
	line int
	text string // from "bringup" to where the invocation ends
	next string // the raw word after "bringup WORD", to tell a sentence from a command
}

var (
	fenceRE = regexp.MustCompile("(?s)```[^\n]*\n(.*?)```")
	spanRE  = regexp.MustCompile("`([^`\n]+)`")
	// bringupRE finds "bringup WORD": the program, not a word in a sentence
	// that starts with it (those are told apart in invocation).
	bringupRE = regexp.MustCompile(`\bbringup ([a-z][a-z0-9-]*)`)
)

// snippets returns the parts of a file that are commands or code: in
// Markdown the fenced blocks and the `code spans`; in a rule file the
// whole text (remedies are quoted prose that names commands). What a doc
// announces for later is left out: a section headed "Not yet", and a line
// saying flags "will move" somewhere.
func snippets(path, text string) []struct {
	line int
	text string
} {
	type sn = struct {
		line int
		text string
	}
	lineOf := func(off int) int { return strings.Count(text[:off], "\n") + 1 }
	var out []sn
	if !strings.HasSuffix(path, ".md") {
		for i, l := range strings.Split(text, "\n") {
			out = append(out, sn{i + 1, l})
		}
		return out
	}
	blank := []byte(text)
	// Announcements of what does not exist yet: a "Not yet" section, a
	// paragraph saying something "will move".
	future := false
	off := 0
	blankOut := func(from, to int) {
		for i := from; i < to; i++ {
			if blank[i] != '\n' {
				blank[i] = ' '
			}
		}
	}
	for _, para := range strings.SplitAfter(text, "\n\n") {
		for _, l := range strings.SplitAfter(para, "\n") {
			if strings.HasPrefix(l, "#") {
				future = strings.Contains(strings.ToLower(l), "not yet")
			}
		}
		if future || strings.Contains(para, "will move") {
			blankOut(off, off+len(para))
		}
		off += len(para)
	}
	text = string(blank)
	for _, m := range fenceRE.FindAllStringSubmatchIndex(text, -1) {
		for i, l := range strings.Split(text[m[2]:m[3]], "\n") {
			out = append(out, sn{lineOf(m[2]) + i, l})
		}
		for i := m[0]; i < m[1]; i++ {
			if blank[i] != '\n' {
				blank[i] = ' '
			}
		}
	}
	rest := string(blank)
	for _, m := range spanRE.FindAllStringSubmatchIndex(rest, -1) {
		out = append(out, sn{lineOf(m[2]), rest[m[2]:m[3]]})
	}
	return out
}

// argLike says whether a token after "bringup WORD" reads as an argument
// of a command (so WORD is a command) rather than the next word of a
// sentence ("bringup never follows a symlink").
func argLike(tok string) bool {
	switch {
	case tok == "":
		return true
	case strings.HasPrefix(tok, "-"), strings.HasPrefix(tok, "<"), strings.HasPrefix(tok, "$"), strings.HasPrefix(tok, "["):
		return true
	case strings.ContainsAny(tok, "/.=0123456789"):
		return true
	}
	up := strings.TrimRight(tok, ",;:)'\"`")
	return up != "" && strings.ToUpper(up) == up && strings.ToLower(up) != up // PID, DIR, FILE
}

// articles before "bringup" make it a noun, not a command.
var articles = map[string]bool{"the": true, "a": true, "an": true, "this": true, "that": true, "your": true, "which": true}

// ends says whether a character closes an invocation inside prose.
func ends(c byte) bool { return strings.IndexByte(",;|)'\"`", c) >= 0 }

func findMentions(t *testing.T, root string) []mention {
	var files []string
	for _, pat := range []string{"rules/*.yaml", "docs/*.md"} {
		m, err := filepath.Glob(filepath.Join(root, pat))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 5 {
		t.Fatalf("found only %d rule and doc files under %s", len(files), root)
	}
	var out []mention
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, f)
		for _, sn := range snippets(f, string(b)) {
			for _, loc := range bringupRE.FindAllStringIndex(sn.text, -1) {
				// "the bringup on HOST …": a sentence about a bringup.
				if prev := strings.Fields(sn.text[:loc[0]]); len(prev) > 0 && articles[strings.ToLower(prev[len(prev)-1])] {
					continue
				}
				rest := sn.text[loc[0]:]
				end := len(rest)
				for i := 0; i < len(rest); i++ {
					if ends(rest[i]) || strings.HasPrefix(rest[i:], " or ") || strings.HasPrefix(rest[i:], " — ") ||
						strings.HasPrefix(rest[i:], " && ") || strings.HasPrefix(rest[i:], "  #") || strings.HasPrefix(rest[i:], " # ") {
						end = i
						break
					}
				}
				m := mention{file: rel, line: sn.line, text: strings.TrimSpace(rest[:end])}
				if f := strings.Fields(rest); len(f) > 2 {
					m.next = f[2]
				}
				if f := strings.Fields(rest); len(f) == 2 || len(f) > 1 && ends(f[1][len(f[1])-1]) {
					m.next = "" // "(bringup capture)": the invocation ends with its word
				}
				out = append(out, m)
			}
		}
	}
	return out
}

// check says what is wrong with one invocation ("" when it runs).
func check(root *cobra.Command, text, next string) string {
	toks := strings.Fields(text)[1:] // past "bringup"
	cmd := root
	i := 0
	for ; i < len(toks); i++ {
		var next *cobra.Command
		for _, c := range cmd.Commands() {
			if c.Name() == toks[i] || c.HasAlias(toks[i]) {
				next = c
			}
		}
		if next == nil {
			break
		}
		cmd = next
	}
	if cmd == root {
		if !argLike(next) {
			return "" // a sentence about bringup, not a command
		}
		return "no such command: bringup " + strings.TrimRight(toks[0], ",;:)'\"`")
	}
	for ; i < len(toks); i++ {
		tok := toks[i]
		if tok == "--" {
			break // what follows is the child command's
		}
		if !strings.HasPrefix(tok, "-") || tok == "-" || strings.HasPrefix(tok, "-"+"-"+"-") {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimLeft(tok, "-"), "=")
		name = strings.TrimRight(name, ".…:")
		if name == "" || strings.Contains(name, "…") {
			continue
		}
		var f *pflag.Flag
		if strings.HasPrefix(tok, "--") {
			f = cmd.Flags().Lookup(name)
			if f == nil {
				f = cmd.InheritedFlags().Lookup(name)
			}
		} else {
			for _, c := range name { // -o, and short flags run together (-vo)
				if f = cmd.Flags().ShorthandLookup(string(c)); f == nil {
					f = cmd.InheritedFlags().ShorthandLookup(string(c))
				}
				if f == nil {
					break
				}
			}
		}
		if f == nil && name != "help" && name != "h" {
			return "bringup " + cmd.CommandPath()[len("bringup "):] + " has no flag " + tok
		}
	}
	return ""
}

func TestMentionedCommandsExist(t *testing.T) {
	root := NewRoot()
	root.InitDefaultHelpFlag()
	for _, c := range root.Commands() {
		c.InitDefaultHelpFlag()
	}
	ms := findMentions(t, repoRoot(t))
	checked := 0
	for _, m := range ms {
		if msg := check(root, m.text, m.next); msg != "" {
			t.Errorf("%s:%d: %q: %s", m.file, m.line, m.text, msg)
		}
		checked++
	}
	if checked < 50 {
		t.Errorf("only %d bringup invocations found in rules/ and docs/: the extraction is broken", checked)
	}
	t.Logf("%d bringup invocations checked", checked)
}

// TestMentionCheckCatches proves the check fails on what it must catch.
func TestMentionCheckCatches(t *testing.T) {
	root := NewRoot()
	for text, want := range map[string]string{
		"bringup capture PID":                 "no such command",
		"bringup capture":                     "no such command",
		"bringup trace --html DIR":            "",
		"bringup trace --htm DIR":             "has no flag --htm",
		"bringup trace --top 5 -o out.txt x/": "",
		"bringup trace -q x":                  "has no flag -q",
		"bringup stacks --pid 1 --count 3":    "",
		"bringup never follows a symlink":     "",
		"bringup runs show --json 3":          "",
	} {
		next := ""
		if f := strings.Fields(text); len(f) > 2 {
			next = f[2]
		}
		got := check(root, text, next)
		if want == "" && got != "" || want != "" && !strings.Contains(got, want) {
			t.Errorf("check(%q) = %q, want %q", text, got, want)
		}
	}
	// The invocation ends where the prose around it resumes.
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "rules"), 0o755)
	os.MkdirAll(filepath.Join(dir, "docs"), 0o755)
	os.WriteFile(filepath.Join(dir, "rules", "x.yaml"), []byte("remedy: 'Capture it (bringup capture PID, or py-spy dump --pid PID)'\n"), 0o644)
	for i := range 5 {
		os.WriteFile(filepath.Join(dir, "docs", string(rune('a'+i))+".md"), []byte("Run `bringup trace --html DIR x` or\n```\n$ bringup stacks --pid 1 --count 2\n```\n"+
			"\n> The flags will move to `bringup stacks`\n> (`bringup stacks --srun JOBID`) later.\n\n| `the bringup on HOST is old` | x |\n\n## Not yet\n\n- `bringup diagnose --srun`\n"), 0o644)
	}
	ms := findMentions(t, dir)
	var texts []string
	bad := 0
	for _, m := range ms {
		texts = append(texts, m.text)
		if check(root, m.text, m.next) != "" {
			bad++
		}
	}
	if bad != 1 {
		t.Errorf("%d of %q fail the check, want 1 (bringup capture PID)", bad, texts)
	}
	joined := strings.Join(texts, "\n")
	for _, want := range []string{"bringup capture PID", "bringup trace --html DIR x", "bringup stacks --pid 1 --count 2"} {
		if !strings.Contains(joined, want+"\n") && !strings.HasSuffix(joined, want) {
			t.Errorf("mentions %q lack %q", texts, want)
		}
	}
}
