package rules

import (
	"regexp/syntax"
	"unicode/utf8"
)

// requiredOf derives from a regex a set of literals of which at least one
// occurs in every string the regex matches; nil when none can be derived
// (case folding, or a branch with no literal at all).
func requiredOf(expr string) []string {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil
	}
	set := required(re.Simplify())
	for _, l := range set {
		if len(l) < 3 {
			return nil // too unselective to be worth the prefilter
		}
	}
	return set
}

func required(re *syntax.Regexp) []string {
	switch re.Op {
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 {
			return nil
		}
		return []string{string(re.Rune)}
	case syntax.OpCapture, syntax.OpPlus:
		return required(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return required(re.Sub[0])
		}
		return nil
	case syntax.OpAlternate:
		var out []string
		for _, sub := range re.Sub {
			r := required(sub)
			if r == nil {
				return nil
			}
			out = append(out, r...)
		}
		return out
	case syntax.OpConcat:
		var best []string
		consider := func(set []string) {
			if set != nil && score(set) > score(best) {
				best = set
			}
		}
		run := ""
		for _, sub := range re.Sub {
			if sub.Op == syntax.OpLiteral && sub.Flags&syntax.FoldCase == 0 {
				run += string(sub.Rune)
				continue
			}
			if sub.Op == syntax.OpCharClass && len(sub.Rune) == 2 && sub.Rune[0] == sub.Rune[1] && utf8.ValidRune(sub.Rune[0]) {
				run += string(sub.Rune[0]) // an escaped single character such as \.
				continue
			}
			if run != "" {
				consider([]string{run})
				run = ""
			}
			consider(required(sub))
		}
		if run != "" {
			consider([]string{run})
		}
		return best
	}
	return nil
}

// score prefers a set whose shortest literal is longest, then fewer
// alternatives.
func score(set []string) int {
	if set == nil {
		return -1
	}
	min := 1 << 30
	for _, l := range set {
		if len(l) < min {
			min = len(l)
		}
	}
	return min*16 - len(set)
}
