package record

// Severity of a finding. Error-level findings make a command exit 1.
type Severity string

const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
	SeverityInfo    Severity = "info"
)

// Weight orders severities: error > warning > info.
func (s Severity) Weight() int {
	switch s {
	case SeverityError:
		return 3
	case SeverityWarning:
		return 2
	case SeverityInfo:
		return 1
	}
	return 0
}

// Evidence is one piece of input that made a rule match.
type Evidence struct {
	Path string `json:"path"`
	Line int    `json:"line"`
	Rank string `json:"rank,omitempty"`
	Text string `json:"text"`
	// Col is where in Text the rule's words matched (bytes; 0 when not
	// known). Not stored: the verdict quotes a long line around it.
	Col int `json:"-"`
}

// Finding is a rule that matched, with what made it match. The same rule on
// many ranks, or many times, is one Finding with all its ranks, a count and a
// few evidence lines.
type Finding struct {
	Rule       string     `json:"rule"`
	Title      string     `json:"title"`
	Severity   Severity   `json:"severity"`
	Phase      string     `json:"phase,omitempty"`
	Cause      string     `json:"cause"`
	Remedy     []string   `json:"remedy"`
	Ranks      []string   `json:"ranks"`
	Count      int        `json:"count"`
	Evidence   []Evidence `json:"evidence"`
	References []string   `json:"references"`
	Confidence string     `json:"confidence,omitempty"`
	// Root is the concrete error behind the finding ("KeyError: 'x'"),
	// RaisedIn where it was raised ("model.py:72 forward"), PhaseWhy what
	// evidence put it in Phase; empty when not known.
	Root     string `json:"root,omitempty"`
	RaisedIn string `json:"raised_in,omitempty"`
	PhaseWhy string `json:"phase_why,omitempty"`
}

// HasError reports whether any of the findings is error-level: what makes
// a command exit 1.
func HasError(fs []Finding) bool {
	for _, f := range fs {
		if f.Severity == SeverityError {
			return true
		}
	}
	return false
}
