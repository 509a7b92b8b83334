// Package lazyre is a regular expression that compiles the first time it
// is used. The tables of wordings (rules' patterns, the fatal lines, the
// frame-to-phase table) hold hundreds of expressions, and a run uses few
// of them: compiled at start-up they were most of a short run's work and
// its garbage. A table's test compiles every row (Compile), so a bad
// expression fails there, not in a user's run.
package lazyre

import (
	"regexp"
	"sync"
)

// Regexp is an expression compiled on first use; safe for concurrent use.
// The zero value is set with Init; New returns one set.
type Regexp struct {
	expr string
	once sync.Once
	re   *regexp.Regexp
	err  error
}

// New returns a Regexp for expr, not yet compiled.
func New(expr string) *Regexp { return &Regexp{expr: expr} }

// Init sets the expression of a Regexp not used yet.
func (r *Regexp) Init(expr string) { r.expr = expr }

// Compile compiles the expression now, once, and reports whether it is
// valid.
func (r *Regexp) Compile() error {
	r.once.Do(func() { r.re, r.err = regexp.Compile(r.expr) })
	return r.err
}

// Get is the compiled expression. An expression that does not compile is
// a programming error (the table's test compiles every row): it panics.
func (r *Regexp) Get() *regexp.Regexp {
	if err := r.Compile(); err != nil {
		panic("lazyre: " + err.Error())
	}
	return r.re
}

// String is the expression.
func (r *Regexp) String() string { return r.expr }

// MatchString reports whether s holds a match.
func (r *Regexp) MatchString(s string) bool { return r.Get().MatchString(s) }

// FindStringIndex is regexp's FindStringIndex.
func (r *Regexp) FindStringIndex(s string) []int { return r.Get().FindStringIndex(s) }
