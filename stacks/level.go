package stacks

import (
	"fmt"
	"strconv"
	"strings"
)

// Level is how alike two stacks must be to share a bucket (after
// panicparse's similarity levels; stack-dumps.md §6.5).
type Level struct {
	Kind LevelKind
	K    int // for LevelLeaf: how many innermost frames
}

type LevelKind uint8

const (
	// LevelExact: same frames, lines, recursion depths and thread state.
	LevelExact LevelKind = iota
	// LevelLines: same frames and lines; recursion depth and state ignored.
	LevelLines
	// LevelFuncs: same (file, function) sequence; lines, depth, state and
	// where a sample landed inside a recursion ignored. The default across
	// ranks: torch versions shift lines, active/idle flickers.
	LevelFuncs
	// LevelLeaf: same innermost K frames: "where are they stuck".
	LevelLeaf
)

// DefaultLevel compares ranks at funcs level.
var DefaultLevel = Level{Kind: LevelFuncs}

// DefaultLeafK is K for "leaf" without a number.
const DefaultLeafK = 8

func (l Level) String() string {
	switch l.Kind {
	case LevelExact:
		return "exact"
	case LevelLines:
		return "lines"
	case LevelFuncs:
		return "funcs"
	case LevelLeaf:
		return "leaf-" + strconv.Itoa(l.K)
	}
	return "?"
}

// ParseLevel reads "exact", "lines", "funcs", "leaf" or "leaf-K".
func ParseLevel(s string) (Level, error) {
	switch s {
	case "exact":
		return Level{Kind: LevelExact}, nil
	case "lines":
		return Level{Kind: LevelLines}, nil
	case "funcs", "":
		return Level{Kind: LevelFuncs}, nil
	case "leaf":
		return Level{Kind: LevelLeaf, K: DefaultLeafK}, nil
	}
	if rest, ok := strings.CutPrefix(s, "leaf-"); ok {
		k, err := strconv.Atoi(rest)
		if err == nil && k > 0 && k <= 1000 {
			return Level{Kind: LevelLeaf, K: k}, nil
		}
	}
	return Level{}, fmt.Errorf("unknown similarity level %q (use exact, lines, funcs or leaf-K, e.g. leaf-8)", s)
}

// signature is the bucket key of a collapsed stack at a level.
func signature(c Collapsed, state string, l Level) string {
	var b strings.Builder
	switch l.Kind {
	case LevelExact:
		b.WriteString(state)
		b.WriteByte('|')
	case LevelFuncs, LevelLeaf:
		c = coarse(c)
	}
	n := 0
	for _, s := range c {
		if l.Kind == LevelLeaf && n >= l.K {
			break
		}
		if s.Region {
			b.WriteString("{region@" + s.Keys[0].File + "};")
			n++
			continue
		}
		if s.Repeat > 1 {
			b.WriteString("{")
		}
		for i, k := range s.Keys {
			b.WriteString(k.Func)
			b.WriteByte('@')
			b.WriteString(k.File)
			if l.Kind <= LevelLines {
				b.WriteByte(':')
				b.WriteString(strconv.Itoa(s.Frames[i].Line))
			}
			b.WriteByte(';')
		}
		if s.Repeat > 1 {
			b.WriteString("}")
			if l.Kind == LevelExact {
				b.WriteString(strconv.Itoa(s.Repeat))
			}
		}
		n++
	}
	return b.String()
}
