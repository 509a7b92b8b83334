package diagnose

import (
	"hash/maphash"
	"slices"
	"strconv"
	"strings"

	"github.com/bringup-tool/bringup/record"
)

// An engine prints the workaround for an error on lines of its own around
// it: SGLang's "To work around this error, add --disable-piecewise-cuda-graph
// …" under its piecewise CUDA-graph error, its "Use a shorter input or enable
// --allow-auto-truncate." before the scheduler dies, vLLM's advice to raise
// gpu_memory_utilization or lower max_model_len. The parser reads those
// lines as records of their own, so the error's message does not hold them:
// the log's reader notes every line that offers a workaround (gated by
// adviceLiterals), and the floor gives each to the nearest error that the
// same process printed, a few lines away at most.

// adviceLiterals gate the lines read for a workaround (the advice patterns
// of printed.go then say what it is); each is 12 bytes or more, so the
// parser's scan finds them all in its one strided pass.
var adviceLiterals = []string{
	"work around this", "suppress this exception", "suppress_errors", "Reducing block sizes", "allow-auto-truncate",
	"Try increasing", "Try decreasing", "Try reducing", "Try setting ", "try increasing", "try decreasing", "try reducing", "try setting ",
	"onsider setting", "onsider increasing", "onsider decreasing", "onsider reducing", "onsider using ",
	"please try to", "Please try to", "lease increase", "lease decrease", "lease reduce ", "lease install", "lease upgrade",
	"You need to ", "you need to ", "ou may need to", "ou might need to", "is recommended to", "To allow overriding",
	": Please set", ". Please set",
}

// adviceLine is a line of a log that offers a workaround.
type adviceLine struct {
	line   int
	rank   string // as printed: the process that printed it
	advice string // the sentence offered
	text   string // the line
}

type adviceKey struct {
	rank, advice string
}

// maxAdviceLines bounds the advice lines kept per log; adviceWindow is how
// many lines from an error a workaround the same process printed is its.
const (
	maxAdviceLines = 256
	adviceWindow   = 8
)

// noteAdvice adds the lines of rec that offer a workaround to as, once per
// process and advice (a crash loop prints it on every try: the first is
// kept), skipping source lines a traceback quotes. rank is rec.Rank.String(),
// which the caller keeps per rank rather than formats per record.
func noteAdvice(as []adviceLine, rec *record.Record, rank string, seen map[adviceKey]bool) []adviceLine {
	if rec.Level == record.LevelDebug || len(as) >= maxAdviceLines {
		return as
	}
	// A record printed again by the same process offers nothing new (a
	// crash loop): only the first is read.
	k := adviceKey{rank, "\x00" + strconv.FormatUint(maphash.String(keySeed, rec.Text), 36)}
	if seen[k] {
		return as
	}
	if len(seen) < maxMemoTexts {
		seen[k] = true
	}
	// The lines that hold a literal (the gate's literals decide, with the
	// scan or without it), found with one search per literal.
	text := rec.Text
	var starts []int // byte offsets of those lines' starts
	for _, lit := range adviceLiterals {
		for off := 0; ; {
			k := strings.Index(text[off:], lit)
			if k < 0 {
				break
			}
			k += off
			st := strings.LastIndexByte(text[:k], '\n') + 1
			if !slices.Contains(starts, st) {
				starts = append(starts, st)
			}
			nl := strings.IndexByte(text[k:], '\n')
			if nl < 0 {
				break
			}
			off = k + nl + 1
		}
	}
	slices.Sort(starts)
	for _, st := range starts {
		if len(as) >= maxAdviceLines {
			break
		}
		i := strings.Count(text[:st], "\n") // the line's index in the record
		end := strings.IndexByte(text[st:], '\n')
		rest := ""
		if end < 0 {
			end = len(text)
		} else {
			end += st
			rest = text[end+1:]
		}
		t := strings.TrimSpace(text[st:end])
		if st > 0 {
			prev := text[:st-1]
			if strings.HasPrefix(strings.TrimSpace(prev[strings.LastIndexByte(prev, '\n')+1:]), `File "`) {
				continue // a source line a traceback quotes
			}
		}
		a := adviceIn(t)
		if a == "" {
			continue
		}
		a = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(a), "."))
		if strings.HasSuffix(a, ":") {
			// "… by setting:" and the setting on the lines under it.
			var then []string
			for n := range strings.SplitSeq(rest, "\n") {
				if n = strings.TrimSpace(n); n == "" || len(then) == 3 {
					break
				}
				then = append(then, n)
			}
			if len(then) > 0 {
				a += " " + strings.Join(then, "; ")
			}
		}
		k := adviceKey{rank, a}
		if a == "" || seen[k] {
			continue
		}
		seen[k] = true
		as = append(as, adviceLine{line: rec.Line + i, rank: rank, advice: clip(a), text: clip(t)})
	}
	return as
}

// printedNear gives each occurrence of a log the workarounds printed on
// lines around it by the same process, as remedies marked as printed by
// the engine: each advice line goes to the nearest error at most
// adviceWindow lines away whose rank agrees (equal, or one of them not
// known), and only when the error's own message does not hold it.
// Occurrences that only wrap or repeat another are not owners, unless no
// other error was found.
func printedNear(occs []occurrence, onlyWrappers bool) map[int][]string {
	var out map[int][]string
	byLog := map[*logResult][]int{}
	for i := range occs {
		o := &occs[i]
		if len(o.log.advice) == 0 || o.dupOf > 0 || (o.wrapper && !onlyWrappers) {
			continue
		}
		byLog[o.log] = append(byLog[o.log], i)
	}
	for lg, idx := range byLog {
		slices.SortFunc(idx, func(a, b int) int { return occs[a].line - occs[b].line })
		for _, a := range lg.advice {
			best, dist := -1, adviceWindow+1
			k, _ := slices.BinarySearchFunc(idx, a.line, func(i, line int) int { return occs[i].line - line })
			// Errors that start before the line (a few: spans overlap
			// rarely), then those that start after it.
			for j := k - 1; j >= 0 && j >= k-16; j-- {
				o := &occs[idx[j]]
				if !ranksAgree(o.rank.String(), a.rank) {
					continue
				}
				d := a.line - o.end
				if d <= 0 {
					d = 0 // inside its lines
				}
				if d < dist {
					best, dist = idx[j], d
				}
			}
			for j := k; j < len(idx) && j < k+16; j++ {
				o := &occs[idx[j]]
				if o.line-a.line > adviceWindow {
					break
				}
				if !ranksAgree(o.rank.String(), a.rank) {
					continue
				}
				if d := o.line - a.line; d < dist {
					best, dist = idx[j], d
				}
			}
			if best < 0 {
				continue
			}
			o := &occs[best]
			if strings.Contains(o.text(), a.advice) {
				continue // printed() offers it from the message already
			}
			if out == nil {
				out = map[int][]string{}
			}
			r := "Printed by " + printedBy(a.advice) + " next to the error (" + lg.input.Path + ":" + strconv.Itoa(a.line) + "): " + a.advice
			if len(out[best]) < maxPrinted && !slices.ContainsFunc(out[best], func(s string) bool { return strings.HasSuffix(s, "): "+a.advice) }) {
				out[best] = append(out[best], r)
			}
		}
	}
	return out
}

// ranksAgree: two ranks as printed are the same process, or one is not known.
func ranksAgree(a, b string) bool {
	return a == b || a == "" || b == ""
}

// printedBy names who printed a workaround: PyTorch when it names a torch
// setting, else the engine.
func printedBy(advice string) string {
	if strings.Contains(advice, "torch.") || strings.Contains(advice, "TORCH") {
		return "PyTorch"
	}
	return "the engine"
}
