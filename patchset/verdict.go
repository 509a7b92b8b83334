package patchset

import (
	"fmt"
	"strings"
)

// Verdict is the one-line summary that heads the text report.
func (r *Report) Verdict() string {
	counts := map[string]int{}
	for _, p := range r.Patches {
		counts[p.State]++
	}
	var parts []string
	for _, s := range []string{"applied", "not-applied", "partial", "drifted", "missing", "invalid"} {
		if counts[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[s], s))
		}
	}
	word := "consistent"
	if !r.Consistent() {
		word = "NOT consistent"
	}
	noun := "patches"
	if len(r.Patches) == 1 {
		noun = "patch"
	}
	return fmt.Sprintf("%s: %d %s — %s", word, len(r.Patches), noun, strings.Join(parts, ", "))
}

// JournalRefused says the journal will not be acted on (Journal says why).
func (r *Report) JournalRefused() bool { return r.journalErr != nil }

// Unreadable says the target is missing because it could not be read (a
// symlink on the way, not a regular file).
func (t TargetReport) Unreadable() bool { return t.unread }
