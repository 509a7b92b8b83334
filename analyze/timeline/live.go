package timeline

import (
	"sort"

	"github.com/bringup-tool/bringup/record"
)

// Current returns the phases so far without closing the open ones (Finish
// does that, once, at the end): the finished phases as Finish lists them,
// then each phase still open with Status record.PhaseUnfinished and a zero End.
// For a live view of a boot (bringup watch); the Builder goes on taking
// records afterwards.
func (b *Builder) Current() []record.Phase {
	out := append([]record.Phase(nil), b.phases...)
	var open []record.Phase
	for _, rs := range b.ranks {
		for _, p := range rs.open {
			if p == nil {
				continue
			}
			q := *p
			q.Status = record.PhaseUnfinished
			open = append(open, q)
		}
	}
	sort.Slice(open, func(i, j int) bool {
		if open[i].Line != open[j].Line {
			return open[i].Line < open[j].Line
		}
		return open[i].Rank < open[j].Rank
	})
	return append(out, open...)
}
