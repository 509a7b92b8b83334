package store

import (
	"fmt"
	"sort"
	"strings"
)

// Unset is how a matrix or comparison shows a variable a run did not set.
const Unset = "(unset)"

// Matrix is runs grouped by the values of some settings, with the count of
// each outcome: the "hung 5/5" table.
type Matrix struct {
	Schema string      `json:"schema"` // bringup.runs-matrix/v1
	By     []string    `json:"by"`
	Rows   []MatrixRow `json:"rows"`
}

// MatrixRow is one combination of settings.
type MatrixRow struct {
	Values   []string       `json:"values"` // one per By, Unset when not set
	Runs     int            `json:"runs"`
	Outcomes map[string]int `json:"outcomes"`
	IDs      []int64        `json:"ids"`
}

// Summary is the outcomes as people read them, most frequent first:
// "hung 5/5", "ready 3/5, failed 2/5".
func (m MatrixRow) Summary() string {
	type oc struct {
		name string
		n    int
	}
	var ocs []oc
	for k, n := range m.Outcomes {
		ocs = append(ocs, oc{k, n})
	}
	sort.Slice(ocs, func(i, j int) bool {
		if ocs[i].n != ocs[j].n {
			return ocs[i].n > ocs[j].n
		}
		return ocs[i].name < ocs[j].name
	})
	var parts []string
	for _, o := range ocs {
		parts = append(parts, fmt.Sprintf("%s %d/%d", o.name, o.n, m.Runs))
	}
	return strings.Join(parts, ", ")
}

// settingValue is a run's value for a matrix/compare key: a requested
// environment variable, or, for the pseudo-key "command", the command line.
func settingValue(r *Run, key string) string {
	if key == "command" {
		return strings.Join(r.Command, " ")
	}
	if v, ok := r.Env[key]; ok {
		return v
	}
	return Unset
}

// BuildMatrix groups runs by the values of the by settings (requested env
// vars, or "command"). Rows are sorted by their values.
func BuildMatrix(runs []*Run, by []string) *Matrix {
	m := &Matrix{Schema: "bringup.runs-matrix/v1", By: by}
	index := map[string]*MatrixRow{}
	for _, r := range runs {
		vals := make([]string, len(by))
		for i, k := range by {
			vals[i] = settingValue(r, k)
		}
		key := strings.Join(vals, "\x00")
		row := index[key]
		if row == nil {
			row = &MatrixRow{Values: vals, Outcomes: map[string]int{}}
			index[key] = row
		}
		row.Runs++
		row.Outcomes[r.Outcome]++
		row.IDs = append(row.IDs, r.ID)
	}
	for _, row := range index {
		sort.Slice(row.IDs, func(i, j int) bool { return row.IDs[i] < row.IDs[j] })
		m.Rows = append(m.Rows, *row)
	}
	sort.Slice(m.Rows, func(i, j int) bool {
		return strings.Join(m.Rows[i].Values, "\x00") < strings.Join(m.Rows[j].Values, "\x00")
	})
	return m
}

// Comparison lines runs up side by side.
type Comparison struct {
	Schema string  `json:"schema"` // bringup.runs-compare/v1
	IDs    []int64 `json:"ids"`
	// Settings are the requested variables (and the command) whose values
	// differ between the runs; identical settings are left out.
	Settings []CompareRow `json:"settings"`
	Outcome  CompareRow   `json:"outcome"`
	Duration CompareRow   `json:"duration"`
	// Phases: per phase name, the longest time any rank spent in it.
	Phases   []CompareRow `json:"phases"`
	Findings []CompareRow `json:"findings"` // per rule: severity and count, "" when absent
}

// CompareRow is one thing compared, one value per run.
type CompareRow struct {
	Name   string   `json:"name"`
	Values []string `json:"values"`
	Differ bool     `json:"differ"`
}

func newRow(name string, vals []string) CompareRow {
	d := false
	for _, v := range vals[1:] {
		if v != vals[0] {
			d = true
		}
	}
	return CompareRow{Name: name, Values: vals, Differ: d}
}

// Compare lines up runs: differing settings, outcome, phase times, findings.
func Compare(runs []*Run) *Comparison {
	c := &Comparison{Schema: "bringup.runs-compare/v1"}
	keys := map[string]bool{}
	for _, r := range runs {
		c.IDs = append(c.IDs, r.ID)
		for k := range r.Env {
			keys[k] = true
		}
	}
	sorted := []string{"command"}
	var envKeys []string
	for k := range keys {
		envKeys = append(envKeys, k)
	}
	sort.Strings(envKeys)
	sorted = append(sorted, envKeys...)
	per := func(f func(r *Run) string) []string {
		vals := make([]string, len(runs))
		for i, r := range runs {
			vals[i] = f(r)
		}
		return vals
	}
	for _, k := range sorted {
		row := newRow(k, per(func(r *Run) string { return settingValue(r, k) }))
		if row.Differ {
			c.Settings = append(c.Settings, row)
		}
	}
	c.Outcome = newRow("outcome", per(func(r *Run) string {
		if r.ExitCode != nil {
			return fmt.Sprintf("%s (exit %d)", r.Outcome, *r.ExitCode)
		}
		return r.Outcome
	}))
	c.Duration = newRow("duration", per(func(r *Run) string { return fmt.Sprintf("%.1fs", r.Duration().Seconds()) }))

	var phaseNames []string
	seenPhase := map[string]bool{}
	for _, r := range runs {
		for _, p := range r.Timeline {
			if !seenPhase[p.Name] {
				seenPhase[p.Name] = true
				phaseNames = append(phaseNames, p.Name)
			}
		}
	}
	for _, name := range phaseNames {
		c.Phases = append(c.Phases, newRow(name, per(func(r *Run) string {
			best, found, open := 0.0, false, false
			for _, p := range r.Timeline {
				if p.Name == name {
					found = true
					open = open || p.Open
					sec := p.Seconds
					if o, ok := r.OpenSeconds(p); ok && o > sec {
						sec = o // open until the run ended
					}
					if sec > best {
						best = sec
					}
				}
			}
			switch {
			case !found:
				return "-"
			case open:
				return fmt.Sprintf("%.1fs (open)", best)
			}
			return fmt.Sprintf("%.1fs", best)
		})))
	}

	var rules []string
	seenRule := map[string]bool{}
	for _, r := range runs {
		for _, f := range r.Findings {
			if !seenRule[f.Rule] {
				seenRule[f.Rule] = true
				rules = append(rules, f.Rule)
			}
		}
	}
	sort.Strings(rules)
	for _, rule := range rules {
		c.Findings = append(c.Findings, newRow(rule, per(func(r *Run) string {
			for _, f := range r.Findings {
				if f.Rule == rule {
					return fmt.Sprintf("%s ×%d", f.Severity, max(f.Count, 1))
				}
			}
			return "-"
		})))
	}
	return c
}
