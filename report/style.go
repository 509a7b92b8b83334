// Package report renders findings and facts for people and programs:
// terminal text (colour only on a terminal), JSON, HTML. A renderer never
// parses and never decides.
package report

import "fmt"

// Style applies ANSI colour when enabled; with Color false every method
// returns its input unchanged, so output piped to a file stays plain.
type Style struct{ Color bool }

func (s Style) wrap(code, text string) string {
	if !s.Color || text == "" {
		return text
	}
	return fmt.Sprintf("\x1b[%sm%s\x1b[0m", code, text)
}

func (s Style) Bold(t string) string   { return s.wrap("1", t) }
func (s Style) Dim(t string) string    { return s.wrap("2", t) }
func (s Style) Red(t string) string    { return s.wrap("31", t) }
func (s Style) Yellow(t string) string { return s.wrap("33", t) }
func (s Style) Green(t string) string  { return s.wrap("32", t) }
func (s Style) Cyan(t string) string   { return s.wrap("36", t) }

// Severity colours a severity word: red error, yellow warning, cyan info.
func (s Style) Severity(sev string) string {
	switch sev {
	case "error":
		return s.Red(s.Bold(sev))
	case "warning":
		return s.Yellow(sev)
	}
	return s.Cyan(sev)
}
