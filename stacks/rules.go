package stacks

import (
	"sort"
	"strings"

	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/rules"
)

// Conclude matches the analysis's signals against a rule set (the same
// knowledge base diagnose uses; stack signatures live in rules/stacks.yaml)
// and collects findings, one per rule with every rank that hit it.
func Conclude(set *rules.Set, v rules.Versions) func([]Signal) []record.Finding {
	return func(sigs []Signal) []record.Finding {
		col := rules.NewCollector()
		// Ranks of one job mostly share stacks: match each distinct
		// (fact, fields, frames) once.
		memo := map[string][]*rules.Rule{}
		for _, s := range sigs {
			sub := Subject(s)
			k := memoKey(s)
			hits, ok := memo[k]
			if !ok {
				hits = set.Match(sub, v)
				memo[k] = hits
			}
			for _, r := range hits {
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

// Subject is a signal as the rules engine sees it. A stack has no message
// text: Text stays empty so text rules about log lines never match a
// thread header; the description is in the evidence.
func Subject(s Signal) rules.Subject {
	return rules.Subject{Frames: s.Frames, Fact: s.Fact, Fields: s.Fields, Evidence: s.Evidence}
}

// memoKey is everything rule matching depends on: fact, fields, and the
// frames' functions and files.
func memoKey(s Signal) string {
	var b strings.Builder
	b.WriteString(s.Fact)
	keys := make([]string, 0, len(s.Fields))
	for k := range s.Fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		b.WriteString("\x00" + k + "=" + s.Fields[k])
	}
	for _, f := range s.Frames {
		b.WriteString("\x00" + f.Func + "\x02" + f.File)
	}
	return b.String()
}
