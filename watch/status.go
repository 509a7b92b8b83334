package watch

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/bringup-tool/bringup/store"
)

// statusLine is the one-line live status drawn under the boot's output on
// a terminal. It is only ever drawn when the cursor sits at the start of a
// line, so it never overwrites half a line of the boot's output. All
// methods ending in Locked run under the tee's lock.
type statusLine struct {
	w       io.Writer // nil: no status line (not a terminal)
	shown   bool
	atStart bool // the last byte written to the terminal ended a line
}

func (s *statusLine) clearLocked() {
	if s == nil || s.w == nil || !s.shown {
		return
	}
	io.WriteString(s.w, "\r\x1b[K")
	s.shown = false
}

func (s *statusLine) trackLocked(chunk []byte) {
	if s == nil || len(chunk) == 0 {
		return
	}
	s.atStart = chunk[len(chunk)-1] == '\n'
}

func (s *statusLine) drawLocked(text string) {
	if s == nil || s.w == nil || !s.atStart {
		return
	}
	io.WriteString(s.w, "\r\x1b[K\x1b[2m"+text+"\x1b[0m")
	s.shown = true
}

// statusText is the live status: elapsed, silence, current phase per rank.
// A negative silent means the boot has printed nothing yet.
func statusText(elapsed, silent time.Duration, phases []store.Phase, note string) string {
	var b strings.Builder
	if silent < 0 {
		fmt.Fprintf(&b, "watch %s · no output yet", round(elapsed))
	} else {
		fmt.Fprintf(&b, "watch %s · last output %s ago", round(elapsed), round(silent))
	}
	if cur := currentPhases(phases); cur != "" {
		b.WriteString(" · " + cur)
	}
	if note != "" {
		b.WriteString(" · " + note)
	}
	return b.String()
}

// currentPhases is each rank's latest phase, ranks with the same phase
// grouped: "TP0-1 inductor, TP2 dynamo".
func currentPhases(phases []store.Phase) string {
	latest := map[string]store.Phase{}
	for _, p := range phases {
		cur, ok := latest[p.Rank]
		if !ok || !p.Start.Before(cur.Start) {
			latest[p.Rank] = p
		}
	}
	byPhase := map[string][]string{}
	for rank, p := range latest {
		name := p.Name
		if !p.Open && name != "ready" {
			name += " done"
		}
		if rank == "" {
			rank = "engine"
		}
		byPhase[name] = append(byPhase[name], rank)
	}
	var parts []string
	for name, ranks := range byPhase {
		sort.Strings(ranks)
		if len(ranks) > 4 {
			ranks = append(ranks[:3], fmt.Sprintf("+%d", len(ranks)-3))
		}
		parts = append(parts, strings.Join(ranks, ",")+" "+name)
	}
	sort.Strings(parts)
	return strings.Join(parts, " · ")
}

func round(d time.Duration) time.Duration {
	if d < 10*time.Second {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Second)
}
