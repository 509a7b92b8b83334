package stacks

import (
	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/rules"
)

// Conclude matches the analysis's signals against a rule set (the same
// knowledge base diagnose uses; stack signatures live in rules/stacks.yaml)
// and collects findings, one per rule with every rank that hit it.
func Conclude(set *rules.Set, v rules.Versions) func([]Signal) []record.Finding {
	return func(sigs []Signal) []record.Finding {
		col := rules.NewCollector()
		for _, s := range sigs {
			sub := rules.Subject{Text: s.Text, Frames: s.Frames, Fact: s.Fact, Fields: s.Fields, Evidence: s.Evidence}
			for _, r := range set.Match(sub, v) {
				col.Add(r, sub)
			}
		}
		return col.Findings()
	}
}

// Versions are what the dumps tell about versions: the Python version
// py-spy printed. Torch and engine versions are not in a stack dump;
// callers that know them (diagnose, watch, --torch) add them.
func Versions(procs []*Process) rules.Versions {
	v := rules.Versions{}
	for _, p := range procs {
		if p.Python != "" {
			v["python"] = p.Python
			break
		}
	}
	return v
}
