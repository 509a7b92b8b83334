package timeline

import "sort"

// Current returns the phases so far without closing the open ones (Finish
// does that, once, at the end): the finished phases as Finish lists them,
// then each phase still open with Status StatusUnfinished and a zero End.
// For a live view of a boot (bringup watch); the Builder goes on taking
// records afterwards.
func (b *Builder) Current() []Phase {
	out := append([]Phase(nil), b.phases...)
	var open []Phase
	for _, rs := range b.ranks {
		for _, p := range rs.open {
			if p == nil {
				continue
			}
			q := *p
			q.Status = StatusUnfinished
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
