package record

// Skip is input a parser could not use: where (the input's path, empty
// where the containing document already names it; the 1-based line, 0 for
// the input as a whole) and why. The rest of the input is still read.
type Skip struct {
	Path   string `json:"path,omitempty"`
	Line   int    `json:"line"`
	Reason string `json:"reason"`
}
