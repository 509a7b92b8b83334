package stacks

import "fmt"

// Verdict is the one line a person reads first: the most important
// finding, then where the workers are (Where.Text).
func (a *Analysis) Verdict() string {
	w := a.Where.Text
	if w == "" {
		w = "no stacks found"
	}
	if len(a.Findings) > 0 {
		f := a.Findings[0]
		return fmt.Sprintf("%s: %s; %s", f.Rule, f.Title, w)
	}
	return w
}
