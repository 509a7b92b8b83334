package rules

import (
	"fmt"
	"strconv"
	"strings"
)

// constraint is a conjunction of comparisons such as ">=2.10,<2.13".
type constraint []cmp

type cmp struct {
	op  string
	ver []int
}

func parseConstraint(s string) (constraint, error) {
	var c constraint
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		op := ""
		for _, o := range []string{">=", "<=", "==", "!=", ">", "<", "="} {
			if strings.HasPrefix(part, o) {
				op = o
				break
			}
		}
		if op == "" {
			return nil, fmt.Errorf("%q: want an operator (<, <=, >, >=, ==, !=) before the version", part)
		}
		v := versionParts(strings.TrimSpace(part[len(op):]))
		if v == nil {
			return nil, fmt.Errorf("%q: no version number after %s", part, op)
		}
		if op == "=" {
			op = "=="
		}
		c = append(c, cmp{op, v})
	}
	return c, nil
}

// versionParts reads the leading dotted numbers of a version as printed:
// "2.10.0+rocm7.0" -> [2 10 0], "0.20.2rc1.dev189" -> [0 20 2]. Local and
// pre-release suffixes are ignored: rules are about release lines.
func versionParts(s string) []int {
	s = strings.TrimPrefix(strings.TrimSpace(s), "v")
	var out []int
	for _, p := range strings.Split(s, ".") {
		end := 0
		for end < len(p) && p[end] >= '0' && p[end] <= '9' {
			end++
		}
		if end == 0 {
			break
		}
		n, err := strconv.Atoi(p[:end])
		if err != nil {
			break
		}
		out = append(out, n)
		if end < len(p) {
			break
		}
	}
	return out
}

func compareVersions(a, b []int) int {
	for i := 0; i < len(a) || i < len(b); i++ {
		x, y := 0, 0
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return 0
}

// allows reports whether a known version satisfies the constraint; a
// version that cannot be read does not block.
func (c constraint) allows(have string) bool {
	v := versionParts(have)
	if v == nil {
		return true
	}
	for _, k := range c {
		r := compareVersions(v, k.ver)
		ok := false
		switch k.op {
		case "<":
			ok = r < 0
		case "<=":
			ok = r <= 0
		case ">":
			ok = r > 0
		case ">=":
			ok = r >= 0
		case "==":
			ok = r == 0
		case "!=":
			ok = r != 0
		}
		if !ok {
			return false
		}
	}
	return true
}
