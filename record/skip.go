package record

// Skip is input a parser could not use: where (the input's path, empty
// where the containing document already names it; the 1-based line, 0 for
// the input as a whole) and why. The rest of the input is still read.
// Every parser reports its bad input as Skips: engine logs, stack dumps
// (Warning is this type), patch files, TORCH_TRACE files. A v1 document
// whose keys differ ("message" for reason, a list of line numbers) has
// its own wire shape in its renderer or a MarshalJSON.
type Skip struct {
	Path   string `json:"path,omitempty"`
	Line   int    `json:"line"`
	Reason string `json:"reason"`
}

// String is "path:line: reason", leaving out the parts that are not set
// ("line 3: reason" without a path, "path: reason" for the whole input).
func (s Skip) String() string {
	switch {
	case s.Path != "" && s.Line > 0:
		return s.Path + ":" + itoa(s.Line) + ": " + s.Reason
	case s.Path != "":
		return s.Path + ": " + s.Reason
	case s.Line > 0:
		return "line " + itoa(s.Line) + ": " + s.Reason
	}
	return s.Reason
}
