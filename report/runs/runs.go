// Package runs renders recorded boots (store.Run) for people and programs:
// the list, one run in full, runs side by side, and the settings × outcome
// matrix. It never decides anything; store computes comparisons and
// matrices.
package runs

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/bringup-tool/bringup/report"
	"github.com/bringup-tool/bringup/store"
)

// JSON writes v indented.
func JSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// RunJSON writes one run as bringup.run/v1 (empty lists as []).
func RunJSON(w io.Writer, r *store.Run) error {
	r.Schema = store.Schema
	if r.Env == nil {
		r.Env = map[string]string{}
	}
	if r.EnvCheck == nil {
		r.EnvCheck = []store.EnvCheck{}
	}
	if r.EnvSeen == nil {
		r.EnvSeen = []store.EnvSeen{}
	}
	for i := range r.EnvCheck {
		if r.EnvCheck[i].Missing == nil {
			r.EnvCheck[i].Missing = []string{}
		}
		if r.EnvCheck[i].Different == nil {
			r.EnvCheck[i].Different = map[string]store.EnvDiff{}
		}
	}
	for _, l := range []*[]store.Silence{&r.Silences} {
		if *l == nil {
			*l = []store.Silence{}
		}
	}
	if r.Timeline == nil {
		r.Timeline = []store.Phase{}
	}
	if r.Logs == nil {
		r.Logs = []string{}
	}
	return JSON(w, r)
}

// ListSchema is the JSON schema of `runs list --json`.
const ListSchema = "bringup.runs/v1"

// ListJSON writes runs as {"schema": "bringup.runs/v1", "runs": [...]}.
func ListJSON(w io.Writer, rs []*store.Run) error {
	if rs == nil {
		rs = []*store.Run{}
	}
	return JSON(w, map[string]any{"schema": ListSchema, "runs": rs})
}

func envString(env map[string]string) string {
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, k+"="+env[k])
	}
	return strings.Join(parts, " ")
}

func cut(s string, n int) string {
	if len([]rune(s)) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// List writes one line per run, newest first.
func List(w io.Writer, rs []*store.Run, st report.Style) error {
	if len(rs) == 0 {
		_, err := fmt.Fprintln(w, "no runs recorded yet (bringup watch -- CMD records one)")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTARTED\tDURATION\tOUTCOME\tENV\tCOMMAND")
	for _, r := range rs {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Started.Local().Format("2006-01-02 15:04:05"),
			r.Duration().Round(time.Second), r.Outcome, cut(envString(r.Env), 50), cut(strings.Join(r.Command, " "), 60))
	}
	return tw.Flush()
}

// Show writes one run in full: verdict first, then settings, env report,
// silences, timeline, findings, files.
func Show(w io.Writer, r *store.Run, st report.Style) error {
	ew := &errWriter{w: w}
	// As watch's closing line puts it: outcome, time, then the reason.
	ew.printf("%s run #%d after %s — %s", st.Bold(strings.ToUpper(r.Outcome)), r.ID, r.Duration().Round(100*time.Millisecond), r.Reason)
	if r.ExitCode != nil {
		ew.printf(" (exit %d)", *r.ExitCode)
	} else if r.Signal != "" {
		ew.printf(" (%s)", r.Signal)
	}
	ew.printf("\n")
	if r.Verdict != "" {
		ew.printf("verdict: %s\n", r.Verdict)
	}
	ew.printf("\ncommand: %s\n", strings.Join(r.Command, " "))
	if r.Cwd != "" {
		ew.printf("cwd:     %s\n", r.Cwd)
	}
	ew.printf("started: %s\n", r.Started.Local().Format(time.RFC3339))
	if len(r.Env) > 0 {
		ew.printf("env:     %s\n", envString(r.Env))
	}
	if len(r.Versions) > 0 {
		ew.printf("versions: %s\n", envString(r.Versions))
	}
	if r.Patches != nil {
		ew.printf("patches: %s — %s (%s)\n", r.Patches.Dir, r.Patches.State, r.Patches.Summary)
	}
	if len(r.EnvCheck) > 0 {
		ew.printf("\n%s\n", st.Bold("environment not as requested"))
		for _, ec := range r.EnvCheck {
			who := fmt.Sprintf("pid %d", ec.PID)
			if ec.Rank != "" {
				who += " " + ec.Rank
			}
			var what []string
			if len(ec.Missing) > 0 {
				what = append(what, "missing "+strings.Join(ec.Missing, ", "))
			}
			keys := make([]string, 0, len(ec.Different))
			for k := range ec.Different {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				what = append(what, fmt.Sprintf("%s=%q (requested %q)", k, ec.Different[k].Got, ec.Different[k].Want))
			}
			ew.printf("  %s (%s): %s\n", st.Red(who), ec.Process, strings.Join(what, "; "))
		}
	}
	if len(r.Silences) > 0 {
		ew.printf("\n%s\n", st.Bold("silences"))
		for _, s := range r.Silences {
			ew.printf("  %s  %.1fs without output", s.At.Local().Format("15:04:05"), s.Seconds)
			if s.GPUBusy != "" {
				ew.printf(", GPU %s", s.GPUBusy)
			}
			if s.StacksPath != "" {
				ew.printf(" → %s", s.StacksPath)
			}
			if s.Summary != "" {
				ew.printf("\n    %s", s.Summary)
			}
			ew.printf("\n")
		}
	}
	if len(r.Timeline) > 0 {
		ew.printf("\n%s\n", st.Bold("timeline"))
		tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
		// Each rank's phases together, in the order they were seen.
		tl := slices.Clone(r.Timeline)
		sort.SliceStable(tl, func(i, j int) bool { return tl[i].Rank < tl[j].Rank })
		for _, p := range tl {
			name := p.Name
			if p.Detail != "" {
				name += " (" + p.Detail + ")"
			}
			status := p.Status
			if status == "" && p.Open {
				status = "open"
			}
			took := fmt.Sprintf("%.1fs", p.Seconds)
			if p.Open {
				// Open until the run ended: its length as far as the log
				// says (often 0 s) understates it. Watch measured it to
				// the stop; an older record is bounded by the run's end.
				took = "-"
				if sec, ok := r.OpenSeconds(p); ok {
					took = fmt.Sprintf("≥%.1fs", sec)
					if r.Stop != nil {
						took = fmt.Sprintf("%.1fs", sec)
						if p.Status == "unfinished" {
							status = "unfinished when stopped"
						}
					}
				}
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", orDash(p.Rank), name, took, status)
		}
		tw.Flush()
	}
	if sp := r.Stop; sp != nil {
		who := "watch"
		if sp.By == store.StopByUser {
			who = "the user"
			if sp.Signal != "" {
				who += " (" + sp.Signal + ")"
			}
		}
		ew.printf("\n%s %s at %s, after output.log line %d", st.Bold("stopped by"), who, sp.At.Local().Format("15:04:05"), sp.Line)
		if !sp.LastOutput.IsZero() && sp.At.After(sp.LastOutput) {
			ew.printf(" (%.1fs after the boot last printed)", sp.At.Sub(sp.LastOutput).Seconds())
		}
		ew.printf("\n")
		for _, a := range sp.After {
			ew.printf("  after the stop, not a finding: %s\n", a)
		}
	}
	if len(r.Survivors) > 0 {
		ew.printf("\n%s\n", st.Bold("processes the lost watch left behind"))
		for _, p := range r.Survivors {
			state := p.State
			switch state {
			case store.SurvivorRunning:
				state = st.Red("still running") + " (bringup runs list --stop-lost stops it)"
			case store.SurvivorStopped:
				state = "stopped by bringup"
			case store.SurvivorGone:
				state = "ended by itself"
			}
			ew.printf("  pid %d (%s): %s\n", p.PID, p.Process, state)
		}
	}
	if len(r.Findings) > 0 {
		ew.printf("\n%s\n", st.Bold("findings"))
		for _, f := range r.Findings {
			ew.printf("  %s %s [%s]", st.Severity(string(f.Severity)), f.Title, f.Rule)
			if len(f.Ranks) > 0 {
				ew.printf(" · %s", strings.Join(f.Ranks, ","))
			}
			ew.printf("\n")
			for i, e := range f.Evidence {
				if i == 3 {
					break
				}
				ew.printf("    %s:%d %s\n", e.Path, e.Line, cut(firstLine(e.Text), 120))
			}
			for i, rem := range f.Remedy {
				if i == 0 {
					ew.printf("    fix: %s\n", rem)
				} else {
					ew.printf("    or:  %s\n", rem)
				}
			}
		}
	}
	ew.printf("\nrun directory: %s (%s of output%s)\n", orDash(r.Dir), Lines(r.Lines), savedNote(r))
	if o := r.Output; o != nil {
		if o.Error != "" {
			ew.printf("output: %s; the boot printed %s\n", st.Red(o.Error), Lines(o.Lines))
		}
		if o.TerminalDropped > 0 {
			ew.printf("terminal: %s not shown (the terminal did not keep up)\n", Lines(o.TerminalDropped))
		}
		for _, c := range o.TerminalClosed {
			ew.printf("terminal: the copy stopped (%s)\n", c)
		}
		if o.RunJSONError != "" {
			ew.printf("run.json: not written (%s): this record is the only one\n", o.RunJSONError)
		}
	}
	if r.CPU != nil {
		ew.printf("cpu: watching %.2fs, the boot %.2fs\n", r.CPU.WatchSeconds, r.CPU.BootSeconds)
	}
	return ew.err
}

// Saved is what reached output.log: "N lines", with ", incomplete" when
// some of the output is not in it.
func Saved(r *store.Run) string {
	if r.Incomplete() {
		return Lines(r.Lines) + " saved; " + r.Output.Error
	}
	return Lines(r.Lines)
}

func savedNote(r *store.Run) string {
	if r.Incomplete() {
		return ", incomplete"
	}
	return ""
}

// Lines is "1 line" or "N lines".
func Lines(n int64) string {
	if n == 1 {
		return "1 line"
	}
	return fmt.Sprintf("%d lines", n)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Compare writes runs side by side: settings that differ, outcome,
// duration, phase times, findings.
func Compare(w io.Writer, c *store.Comparison, st report.Style) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := []string{""}
	for _, id := range c.IDs {
		head = append(head, fmt.Sprintf("#%d", id))
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	row := func(r store.CompareRow) {
		vals := make([]string, len(r.Values))
		for i, v := range r.Values {
			vals[i] = cut(v, 40)
		}
		// A mark, not colour: escape codes would break the column widths.
		name := "  " + r.Name
		if r.Differ {
			name = "≠ " + r.Name
		}
		fmt.Fprintf(tw, "%s\t%s\n", name, strings.Join(vals, "\t"))
	}
	section := func(title string, rows []store.CompareRow) {
		if len(rows) == 0 {
			return
		}
		fmt.Fprintf(tw, "%s\n", title+":")
		for _, r := range rows {
			row(r)
		}
	}
	row(c.Outcome)
	row(c.Duration)
	if len(c.Settings) == 0 {
		fmt.Fprintln(tw, "  (same command and settings)")
	}
	section("settings that differ", c.Settings)
	section("phase times (longest rank)", c.Phases)
	section("findings", c.Findings)
	return tw.Flush()
}

// Matrix writes settings × outcome with counts ("hung 5/5").
func Matrix(w io.Writer, m *store.Matrix, st report.Style) error {
	if len(m.Rows) == 0 {
		_, err := fmt.Fprintln(w, "no runs to tabulate")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "%s\tRUNS\tIDS\tOUTCOME\n", strings.Join(m.By, "\t"))
	for _, r := range m.Rows {
		summary := r.Summary()
		if r.Outcomes[store.OutcomeReady] == r.Runs {
			summary = st.Green(summary)
		} else if r.Outcomes[store.OutcomeReady] == 0 {
			summary = st.Red(summary)
		}
		ids := make([]string, len(r.IDs))
		for i, id := range r.IDs {
			ids[i] = fmt.Sprint(id)
		}
		// OUTCOME last: its colour codes must not shift a column after it.
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", strings.Join(r.Values, "\t"), r.Runs, cut(strings.Join(ids, ","), 40), summary)
	}
	return tw.Flush()
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

func (e *errWriter) printf(format string, a ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, a...)
	}
}
