package probe

import (
	"fmt"
	"regexp"
	"strings"
)

// Spec selects the exceptions the probe records. It is written
//
//	SELECTOR[;SELECTOR...]     SELECTOR = TYPE[:REGEX] | any[:REGEX]
//
// TYPE is a class name (KeyError) or a module-qualified one
// (torch._dynamo.exc.Unsupported); it matches an exception whose class or a
// base class has that name, and Dynamo's stand-in Observed<TYPE> raised
// while it traces. REGEX is searched in str(exception) by Python's re; a
// ';' inside it is written '\;'. A selector that names a type is also
// recorded where the exception is raised (Python 3.12+); a bare "any" only
// where an exception is reported (uncaught, logged with exc_info, printed).
type Spec struct {
	Selectors []Selector
}

// Selector is one TYPE[:REGEX] of a Spec.
type Selector struct {
	Type  string // "any" or a (dotted) class name
	Regex string // "" for none; the portable subset checked by ParseSpec
}

// Any reports whether the selector matches every type.
func (s Selector) Any() bool { return s.Type == "any" }

// AtRaise reports whether the probe records the selector's exceptions where
// they are raised, not only where they are reported.
func (s Selector) AtRaise() bool { return !s.Any() || s.Regex != "" }

// String is the selector as ParseSpec reads it.
func (s Selector) String() string {
	if s.Regex == "" {
		return s.Type
	}
	return s.Type + ":" + s.Regex
}

// String is the spec as ParseSpec reads it.
func (s Spec) String() string {
	parts := make([]string, len(s.Selectors))
	for i, sel := range s.Selectors {
		parts[i] = sel.String()
	}
	return strings.Join(parts, ";")
}

// MaxSpecLen bounds a spec: it travels in an environment variable.
const MaxSpecLen = 4096

// ParseSpec reads a spec. Errors say which selector and why.
func ParseSpec(text string) (Spec, error) {
	if text == "" {
		return Spec{}, fmt.Errorf("empty spec: give a type (KeyError), a type and a message regex (KeyError:in_proj), or any")
	}
	if len(text) > MaxSpecLen {
		return Spec{}, fmt.Errorf("spec is %d bytes, more than %d", len(text), MaxSpecLen)
	}
	for i := 0; i < len(text); i++ {
		if c := text[i]; c < 0x20 || c == 0x7f {
			return Spec{}, fmt.Errorf("spec has a control character (0x%02x) at byte %d", c, i)
		}
	}
	var spec Spec
	for n, part := range splitSelectors(text) {
		sel, err := parseSelector(part)
		if err != nil {
			return Spec{}, fmt.Errorf("selector %d %q: %v", n+1, part, err)
		}
		spec.Selectors = append(spec.Selectors, sel)
	}
	return spec, nil
}

// splitSelectors splits on ';' not escaped by a backslash.
func splitSelectors(s string) []string {
	var parts []string
	start := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++ // the next byte is escaped
		case ';':
			parts = append(parts, s[start:i])
			start = i + 1
		}
	}
	return append(parts, s[start:])
}

func parseSelector(s string) (Selector, error) {
	typ, rx, hasRx := strings.Cut(s, ":")
	typ = strings.TrimSpace(typ)
	if typ == "" {
		return Selector{}, fmt.Errorf("no exception type (use a class name such as KeyError, or any)")
	}
	if typ != "any" && !validTypeName(typ) {
		return Selector{}, fmt.Errorf("%q is not a Python class name (letters, digits, _ and dots, e.g. KeyError or torch._dynamo.exc.Unsupported)", typ)
	}
	if hasRx {
		if rx == "" {
			return Selector{}, fmt.Errorf("empty message regex after ':' (drop the ':' to match every message)")
		}
		if err := checkRegex(rx); err != nil {
			return Selector{}, fmt.Errorf("message regex: %v", err)
		}
	}
	return Selector{Type: typ, Regex: rx}, nil
}

func validTypeName(s string) bool {
	for _, seg := range strings.Split(s, ".") {
		if seg == "" || len(seg) > 200 {
			return false
		}
		for i := 0; i < len(seg); i++ {
			c := seg[i]
			letter := c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
			if !letter && (i == 0 || c < '0' || c > '9') {
				return false
			}
		}
	}
	return true
}

// checkRegex accepts the regex subset that Go's regexp and Python's re read
// the same way: it must compile in Go, and constructs one of them lacks or
// reads differently are refused with the reason.
func checkRegex(rx string) error {
	if _, err := regexp.Compile(rx); err != nil {
		return err
	}
	inClass := false
	for i := 0; i < len(rx); i++ {
		c := rx[i]
		switch {
		case c == '\\':
			if i+1 >= len(rx) {
				return fmt.Errorf("trailing backslash")
			}
			e := rx[i+1]
			isPunct := e < 0x80 && !isAlnum(e)
			if !isPunct && !strings.ContainsRune("dDwWsSbBAntrf", rune(e)) {
				return fmt.Errorf(`escape \%c at byte %d: use only \d \w \s \b (and their capitals), \A, \n \t \r \f, or an escaped punctuation character`, e, i)
			}
			i++
		case inClass:
			if c == '[' && i+1 < len(rx) && rx[i+1] == ':' {
				return fmt.Errorf("POSIX class [:...:] at byte %d: Python's re has none (write the characters, e.g. [a-z])", i)
			}
			if c == ']' {
				inClass = false
			}
		case c == '[':
			inClass = true
			// A ']' right after '[' or '[^' is a literal in both.
			if i+1 < len(rx) && rx[i+1] == '^' {
				i++
			}
			if i+1 < len(rx) && rx[i+1] == ']' {
				i++
			}
		case c == '(' && i+1 < len(rx) && rx[i+1] == '?':
			if err := checkGroup(rx, i); err != nil {
				return err
			}
		}
	}
	return nil
}

func isAlnum(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

// checkGroup checks a "(?" group at byte i: non-capturing (?:...), named
// (?P<name>...), scoped flags (?i:...), or flags alone (?i) only at the start
// (Python 3.11+ refuses global flags anywhere else). The U flag is Go's only.
func checkGroup(rx string, i int) error {
	rest := rx[i+2:]
	switch {
	case strings.HasPrefix(rest, ":"), strings.HasPrefix(rest, "P<"):
		return nil
	}
	j := 0
	for j < len(rest) && strings.IndexByte("imsU-", rest[j]) >= 0 {
		if rest[j] == 'U' {
			return fmt.Errorf("flag U at byte %d: Python's re has no ungreedy flag (write *? instead)", i+2+j)
		}
		j++
	}
	if j == 0 || j >= len(rest) {
		return fmt.Errorf("group (?%s at byte %d: use (?:...), (?P<name>...), (?i:...) or a leading (?i)", cut(rest, 4), i)
	}
	if rest[j] == ')' {
		if i != 0 {
			return fmt.Errorf("flags (?%s) at byte %d: Python accepts global flags only at the start; use (?%s:...) for a part", rest[:j], i, rest[:j])
		}
		if strings.Contains(rest[:j], "-") {
			return fmt.Errorf("flags (?%s) at byte %d: Python cannot turn a flag off globally", rest[:j], i)
		}
	}
	return nil
}

func cut(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
