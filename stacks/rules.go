package stacks

import (
	"regexp"
	"sort"
	"strings"
	"sync"

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
		type hit struct {
			r      *rules.Rule
			anchor int
		}
		memo := map[string][]hit{}
		// The phase a finding is in, as its first subject's frames say
		// it (a collective wait while other ranks compile is in the
		// compiling side's phase).
		phase := map[string]string{}
		for _, s := range sigs {
			sub := Subject(s)
			k := memoKey(s)
			hits, ok := memo[k]
			if !ok {
				for _, r := range set.Match(sub, v) {
					hits = append(hits, hit{r, anchorOf(r, sub.Frames)})
				}
				memo[k] = hits
			}
			for _, h := range hits {
				col.Add(h.r, sub)
				if _, ok := phase[h.r.ID]; !ok {
					phase[h.r.ID] = framesPhase(s)
				}
				if s.anchors != nil && h.anchor >= 0 {
					s.anchors[h.r.ID] = h.anchor
				}
			}
		}
		out := col.Findings()
		for i := range out {
			if ph := phase[out[i].Rule]; ph != "" && isCompilePhase(out[i].Phase) {
				out[i].Phase = ph
			}
		}
		return out
	}
}

// framesPhase is the compile phase of a signal's frames: for a
// divergence, the other side's when it is compiling (the side waited
// for), else its own.
func framesPhase(s Signal) string {
	if s.Fact == "stacks.divergence" {
		if ph := s.Fields["other_phase"]; ph != "" {
			return ph
		}
	}
	return s.Fields["phase"]
}

// isCompilePhase: a rule phase the frames can make more precise.
func isCompilePhase(p string) bool { return p == "dynamo" || p == "inductor" }

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

// anchorOf is the index of the frame a matched rule names: the frame its
// first frame pattern matched (the top-level frames, else those of the
// first alternative whose frames all match), else the outermost frame of
// its repeated-frame pattern; -1 when it names none (a rule on fields).
func anchorOf(r *rules.Rule, st record.Stack) int {
	m := r.Match
	if i := firstOf(m.Frames, st); i >= 0 || len(m.Frames) > 0 {
		return i
	}
	for _, alt := range m.Any {
		if i := firstOf(alt.Frames, st); i >= 0 {
			return i
		}
	}
	for _, fr := range append([]*rules.FrameRepeat{m.FrameRepeat}, anyRepeats(m.Any)...) {
		if fr == nil {
			continue
		}
		re := pattern(fr.Pattern)
		for i := len(st) - 1; re != nil && i >= 0; i-- {
			if re.MatchString(st[i].Func + " (" + st[i].File + ")") {
				return i
			}
		}
	}
	return -1
}

func anyRepeats(alts []rules.Match) []*rules.FrameRepeat {
	var out []*rules.FrameRepeat
	for _, a := range alts {
		out = append(out, a.FrameRepeat)
	}
	return out
}

// firstOf matches frame patterns as the rules engine does (an ordered
// subsequence, innermost first) and returns the index of the frame the
// first pattern matched, or -1.
func firstOf(pats []string, st record.Stack) int {
	if len(pats) == 0 {
		return -1
	}
	first, j := -1, 0
	for i, f := range st {
		if j == len(pats) {
			break
		}
		re := pattern(pats[j])
		if re != nil && re.MatchString(f.Func+" ("+f.File+")") {
			if j == 0 {
				first = i
			}
			j++
		}
	}
	if j < len(pats) {
		return -1
	}
	return first
}

var patterns sync.Map // string -> *regexp.Regexp (nil: does not compile)

func pattern(p string) *regexp.Regexp {
	if re, ok := patterns.Load(p); ok {
		return re.(*regexp.Regexp)
	}
	re, err := regexp.Compile(p)
	if err != nil {
		re = nil
	}
	patterns.Store(p, re)
	return re
}

// logSignatures are the log rules that name a hang by a guess (the log
// went silent in a phase) whose proof is a stack signature, each with the
// stack rules that show it. A stack signature is error-level only when
// the stacks show it: with stacks at hand the log rule stands only when
// one of these matched them, and with none it is a warning that says
// what to capture.
var logSignatures = map[string][]string{
	"implicit-fallback-format-hang": {"inductor-implicit-fallback-operator-str", "inductor-implicit-fallback-log-handler"},
}

// ShownBy returns the stack rules whose findings confirm the log rule
// logRule (nil: logRule does not describe a stack signature).
func ShownBy(logRule string) []string { return logSignatures[logRule] }
