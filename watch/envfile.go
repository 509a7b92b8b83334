package watch

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// ParseEnvFile reads NAME=VALUE lines (blank lines and # comments skipped,
// an optional "export " prefix, one pair of matching quotes around the
// value removed) into env. Errors name name:line.
func ParseEnvFile(r io.Reader, name string, env map[string]string) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		k, v, ok := strings.Cut(line, "=")
		k = strings.TrimSpace(k)
		if !ok || !ValidEnvName(k) {
			return fmt.Errorf("%s:%d: %q is not NAME=VALUE", name, n, cut(line, 60))
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		env[k] = v
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s:%d: %v", name, n+1, err)
	}
	return nil
}

// ValidEnvName reports whether k is a portable environment variable name.
func ValidEnvName(k string) bool {
	if k == "" {
		return false
	}
	for i, c := range k {
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
