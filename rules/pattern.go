package rules

import (
	"regexp"

	"github.com/bringup-tool/bringup/internal/lazyre"
)

// pattern is one regular expression of a rule. A rule loaded from YAML
// compiles its patterns when it is loaded (a bad one is an error naming
// the rule); a rule of the generated table (builtin_gen.go), whose
// patterns compiled when the table was generated, compiles each the
// first time a subject gets that far: most rules never fire in a run, and
// compiling all ~400 patterns was the largest part of the start-up after
// the YAML. Safe for concurrent use.
type pattern struct{ lazyre.Regexp }

// init sets the expression and, unless lazy, compiles it.
func (p *pattern) init(expr string, lazy bool) error {
	p.Init(expr)
	if lazy {
		return nil
	}
	return p.Compile()
}

// get is the compiled expression. A lazy pattern's expression compiled
// when builtin_gen.go was generated from the same text, so it cannot fail
// here (TestBuiltinGenerated compiles every one).
func (p *pattern) get() *regexp.Regexp { return p.Get() }
