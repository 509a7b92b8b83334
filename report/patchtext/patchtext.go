// Package patchtext renders a patch series' status for people.
package patchtext

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/bringup-tool/bringup/patchset"
	"github.com/bringup-tool/bringup/report"
)

func paint(st report.Style, s string) string {
	switch s {
	case "applied", "patched":
		return st.Green(s)
	case "drifted", "missing", "invalid", "partial", "unreadable":
		return st.Red(st.Bold(s))
	case "not-applied", "base":
		return st.Cyan(s)
	}
	return s
}

// WriteText renders the report for people: verdict, table, details of
// every problem, env knobs of the applied patches, warnings.
func WriteText(w io.Writer, r *patchset.Report, st report.Style) error {
	fmt.Fprintln(w, st.Bold(r.Verdict()))
	if r.JournalRefused() {
		fmt.Fprintf(w, "%s %s\n", st.Red(st.Bold("journal:")), r.Journal)
	} else if r.Journal != "" {
		fmt.Fprintf(w, "%s %s\n", st.Yellow("journal:"), r.Journal)
	}
	fmt.Fprintln(w)
	// The table goes through a buffer so that rows ending in an empty
	// column do not end in spaces.
	var table bytes.Buffer
	tw := tabwriter.NewWriter(&table, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "PATCH\tSTATUS\tSTATE\tTARGET\tFILE\tACTION")
	for _, p := range r.Patches {
		status := p.Status
		if !p.Active && p.State != "invalid" {
			status += " (inactive)"
		}
		if len(p.Targets) == 0 {
			fmt.Fprintf(tw, "%s\t%s\t%s\t-\t-\t%s\n", p.Name, status, paint(st, p.State), p.Action)
		}
		for i, t := range p.Targets {
			name, s, state, action := p.Name, status, paint(st, p.State), p.Action
			if i > 0 {
				name, s, state, action = "", "", "", ""
			}
			file := string(t.State)
			if !t.Verified && t.State != patchset.StateMissing {
				file += " (unpinned)"
			}
			if t.Unreadable() {
				file = "unreadable"
			}
			if t.Action != "" && len(p.Targets) > 1 {
				action = t.Action
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", name, s, state, t.Path, paint(st, file), action)
		}
	}
	tw.Flush()
	for _, line := range strings.SplitAfter(table.String(), "\n") {
		if line != "" {
			fmt.Fprintln(w, strings.TrimRight(line, " \n"))
		}
	}
	var details []string
	for _, p := range r.Patches {
		if p.Error != "" {
			details = append(details, fmt.Sprintf("%s %s", st.Red("invalid:"), p.Error))
		}
		for _, t := range p.Targets {
			if t.State != patchset.StateDrifted && t.State != patchset.StateMissing {
				continue
			}
			is := "is " + string(t.State)
			if t.Unreadable() {
				is = "cannot be read"
			}
			d := fmt.Sprintf("%s %s: %s %s\n    actual  sha256 %s\n    base    sha256 %s\n    patched sha256 %s", st.Red(string(t.State)+":"), p.Path, t.Path, is, orDash(t.ActualSHA256), orDash(t.BaseSHA256), orDash(t.PatchedSHA256))
			if t.Upstream != nil {
				d += fmt.Sprintf("\n    RECORD  sha256 %s (%s %s, %s)", t.Upstream.SHA256, t.Upstream.Dist, t.Upstream.Version, t.Upstream.Record)
			}
			// One line per statement of the explanation (they are joined
			// with "; " in the JSON detail).
			for _, part := range strings.Split(t.Detail, "; ") {
				if part != "" {
					d += "\n    " + part
				}
			}
			details = append(details, d)
		}
	}
	if len(details) > 0 {
		fmt.Fprintln(w)
		for _, d := range details {
			fmt.Fprintln(w, d)
		}
	}
	if env := r.ActiveEnv(); len(env) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, st.Bold("env knobs of the applied patches:"))
		named := map[string]bool{}
		for _, k := range env {
			if k.Source == "header" {
				named[k.Name] = true
			}
		}
		for _, k := range env {
			if k.Source == "diff" && named[k.Name] {
				continue // the header already explains it
			}
			v := k.Name
			if k.Value != "" {
				v += "=" + k.Value
			}
			note := k.Note
			if k.Source == "diff" {
				note = strings.TrimSpace("read by the patched code, default " + k.Value + " " + note)
				v = k.Name
			}
			fmt.Fprintf(w, "  %-32s %s\n", v, st.Dim(note))
		}
	}
	var warns []string
	warns = append(warns, r.Warnings...)
	for _, p := range r.Patches {
		for _, wn := range p.Warnings {
			warns = append(warns, p.Path+": "+wn)
		}
	}
	if len(warns) > 0 {
		fmt.Fprintln(w)
		for _, wn := range warns {
			fmt.Fprintf(w, "%s %s\n", st.Yellow("warning:"), wn)
		}
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
