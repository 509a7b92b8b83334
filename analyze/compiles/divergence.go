package compiles

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// maxStatusDivergences bounds the per-compile status disagreements listed.
const maxStatusDivergences = 20

// divergence compares the inputs with each other, as tlparse's
// --all-ranks-html does, plus missing and empty ranks and per-compile
// status. Each check only speaks when at least two inputs carry the data.
func divergence(res *Result) {
	names, by := runInputs(res)
	for _, run := range names {
		divergenceRun(res, run, by[run])
	}
}

// divergenceRun compares the inputs of one run.
func divergenceRun(res *Result, run string, inputs []Input) {
	first := len(res.Divergence)
	defer func() {
		for i := first; i < len(res.Divergence); i++ {
			res.Divergence[i].Run = run
		}
	}()
	inRun := map[string]bool{}
	for _, in := range inputs {
		inRun[in.Path] = true
	}
	var live []Input
	fileRanks := map[int]bool{}
	maxRank := -1
	for _, in := range inputs {
		st := res.Counts[in.Path]
		if in.RankFrom == "file_name" {
			fileRanks[in.Rank] = true
			if in.Rank > maxRank {
				maxRank = in.Rank
			}
		}
		if st == nil || st.Records == 0 {
			if len(inputs) > 1 {
				res.Divergence = append(res.Divergence, Divergence{Kind: DivEmptyRank,
					Summary: fmt.Sprintf("%s wrote no trace records (%s is empty or unreadable): that process died, hung before compiling, or never traced", in.Label, base(in.Path)),
					Groups:  []DivGroup{{Ranks: rankList(in), Labels: []string{in.Label}, Value: "empty"}}})
			}
			continue
		}
		live = append(live, in)
	}
	if len(fileRanks) > 0 && len(inputs) > 1 {
		var missing []int
		for r := 0; r < maxRank; r++ {
			if !fileRanks[r] {
				missing = append(missing, r)
			}
		}
		if len(missing) > 0 {
			res.Divergence = append(res.Divergence, Divergence{Kind: DivMissingRank,
				Summary: fmt.Sprintf("no trace file for rank %s (ranks up to %d are present)", joinInts(missing), maxRank),
				Groups:  []DivGroup{{Ranks: missing, Labels: []string{}, Value: "missing"}}})
		}
	}
	if len(live) < 2 {
		return
	}
	value := func(kind, summary string, f func(in Input) (string, bool)) {
		groups := groupBy(live, f)
		if len(groups) > 1 {
			res.Divergence = append(res.Divergence, Divergence{Kind: kind, Summary: summary, Groups: groups})
		}
	}
	value(DivCompileIDs, "Diverging compilation IDs across ranks: ranks compiled different graphs, which may lead to hangs or timeouts in collectives",
		func(in Input) (string, bool) {
			ids := append([]string(nil), res.Counts[in.Path].CompileIDs...)
			sort.Slice(ids, func(i, j int) bool { return idLess(ids[i], ids[j]) })
			return strings.Join(ids, " "), true
		})
	graphs := func(in Input) (string, bool) {
		return fmt.Sprintf("%d graphs", res.Counts[in.Path].Events["dynamo_output_graph"]), true
	}
	value(DivGraphCount, "Ranks produced different numbers of Dynamo graphs", graphs)
	// One letter per lookup in log order (H hit, M miss, B bypass), per
	// cache kind: tlparse's ✅/❌/❓ pattern, readable in a terminal.
	cachePat := map[string]map[string][]byte{}
	for _, ce := range res.Cache {
		m := cachePat[ce.Path]
		if m == nil {
			m = map[string][]byte{}
			cachePat[ce.Path] = m
		}
		m[ce.Kind] = append(m[ce.Kind], strings.ToUpper(ce.Outcome[:1])[0])
	}
	value(DivCache, "Diverging cache hit/miss patterns across ranks: some ranks recompiled what others loaded from cache",
		func(in Input) (string, bool) {
			var parts []string
			for _, k := range []string{CacheFXGraph, CacheAOTAutograd} {
				if seq := cachePat[in.Path][k]; len(seq) > 0 {
					parts = append(parts, k+" "+string(seq))
				}
			}
			if len(parts) == 0 {
				return "no cache lookups", true
			}
			return strings.Join(parts, "; "), true
		})
	anyColl := false
	coll := map[string][]string{}
	for _, c := range res.Collectives {
		if !inRun[c.Path] {
			continue
		}
		anyColl = true
		ops := make([]string, len(c.Ops))
		for i, op := range c.Ops {
			ops[i] = shortOp(op)
		}
		coll[c.Path] = append(coll[c.Path], "["+c.CompileID+"] "+strings.Join(ops, " "))
	}
	if anyColl {
		value(DivCollectives, "Diverging collective operation sequences across ranks: mismatched collectives are the classic cause of a distributed hang",
			func(in Input) (string, bool) {
				ops := coll[in.Path]
				if len(ops) == 0 {
					return "(none)", true
				}
				return strings.Join(ops, "; "), true
			})
	}
	exec := map[string][]string{}
	for _, e := range res.ExecutionOrders {
		if inRun[e.Path] {
			exec[e.Path] = e.Order
		}
	}
	if len(exec) >= 2 {
		value(DivExecOrder, "Graph execution order differs across ranks",
			func(in Input) (string, bool) {
				o, ok := exec[in.Path]
				return strings.Join(o, ", "), ok
			})
	}
	runtimeDivergence(res, run, live, value)
	statusDivergence(res, live)
}

// runtimeDivergence groups inputs by their tensor-meta fingerprints and,
// when every input with estimates compiled the same number of graphs,
// compares the estimated runtime of each graph (tlparse's runtime and
// tensor-meta analyses).
func runtimeDivergence(res *Result, run string, live []Input, value func(kind, summary string, f func(Input) (string, bool))) {
	per := map[string][]GraphRuntime{}
	for _, r := range res.Runtimes {
		per[r.Path] = append(per[r.Path], r)
	}
	var with []Input
	for _, in := range live {
		if len(per[in.Path]) > 0 {
			with = append(with, in)
		}
	}
	if len(with) < 2 {
		return
	}
	value(DivTensorMeta, "Ranks exhibit divergent inductor tensor metadata (op outputs' shapes, strides or dtypes differ)",
		func(in Input) (string, bool) {
			rs, ok := per[in.Path]
			if !ok {
				return "", false
			}
			var fp []string
			for _, r := range rs {
				fp = append(fp, "["+r.CompileID+"] "+r.TensorMeta)
			}
			return strings.Join(fp, " "), true
		})
	n := len(per[with[0].Path])
	for _, in := range with[1:] {
		if len(per[in.Path]) != n {
			note := "Runtime analysis not available: ranks have different numbers of compiled graphs"
			if run != "" {
				note = run + ": " + note
			}
			if res.RuntimeNote != "" {
				note = res.RuntimeNote + "; " + note
			}
			res.RuntimeNote = note
			return
		}
	}
	for g := 0; g < n; g++ {
		d := RuntimeDelta{Run: run, Graph: g, CompileID: per[with[0].Path][g].CompileID}
		for i, in := range with {
			ms := per[in.Path][g].EstimatedMs
			if i == 0 || ms < d.FastestMs {
				d.Fastest, d.FastestMs = in.Label, ms
			}
			if i == 0 || ms > d.SlowestMs {
				d.Slowest, d.SlowestMs = in.Label, ms
			}
		}
		d.DeltaMs = d.SlowestMs - d.FastestMs
		res.RuntimeDeltas = append(res.RuntimeDeltas, d)
	}
}

// statusDivergence lists compile ids that failed (or never finished) on
// some inputs and finished on others.
func statusDivergence(res *Result, live []Input) {
	type key struct{ id string }
	byID := map[string]map[string]string{} // id -> path -> status
	var ids []string
	inRun := map[string]bool{}
	for _, in := range live {
		inRun[in.Path] = true
	}
	for _, c := range res.Compiles {
		if c.Occurrence > 0 || !inRun[c.Path] {
			continue
		}
		m := byID[c.ID]
		if m == nil {
			m = map[string]string{}
			byID[c.ID] = m
			ids = append(ids, c.ID)
		}
		m[c.Path] = c.Status
	}
	n := 0
	for _, id := range ids {
		m := byID[id]
		if len(m) < 2 {
			continue
		}
		var in []Input
		for _, x := range live {
			if _, ok := m[x.Path]; ok {
				in = append(in, x)
			}
		}
		groups := groupBy(in, func(x Input) (string, bool) { return m[x.Path], true })
		if len(groups) < 2 {
			continue
		}
		if n++; n > maxStatusDivergences {
			break
		}
		res.Divergence = append(res.Divergence, Divergence{Kind: DivCompileStatus,
			Summary: fmt.Sprintf("compile %s ended differently across ranks", id), Groups: groups})
	}
}

// groupBy groups inputs by a value, in first-seen order; inputs for which
// f says false are left out.
func groupBy(inputs []Input, f func(Input) (string, bool)) []DivGroup {
	var groups []DivGroup
	idx := map[string]int{}
	for _, in := range inputs {
		v, ok := f(in)
		if !ok {
			continue
		}
		i, seen := idx[v]
		if !seen {
			i = len(groups)
			idx[v] = i
			groups = append(groups, DivGroup{Ranks: []int{}, Labels: []string{}, Value: v})
		}
		g := &groups[i]
		if in.Rank >= 0 {
			g.Ranks = appendInt(g.Ranks, in.Rank)
		}
		g.Labels = append(g.Labels, in.Label)
	}
	for i := range groups {
		if len(groups[i].Value) > 2000 {
			groups[i].Value = groups[i].Value[:2000] + "…"
		}
	}
	return groups
}

func rankList(in Input) []int {
	if in.Rank < 0 {
		return []int{}
	}
	return []int{in.Rank}
}

func joinInts(list []int) string {
	s := make([]string, len(list))
	for i, n := range list {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, ", ")
}

// shortOp trims "torch.ops._c10d_functional.all_reduce_.default" to
// "all_reduce_".
func shortOp(op string) string {
	op = strings.TrimSuffix(op, ".default")
	if i := strings.LastIndexByte(op, '.'); i >= 0 {
		op = op[i+1:]
	}
	return op
}

// idLess orders compile ids numerically part by part ("0/2" < "0/10").
func idLess(a, b string) bool {
	pa := strings.FieldsFunc(a, func(r rune) bool { return r == '/' || r == '_' || r == '!' })
	pb := strings.FieldsFunc(b, func(r rune) bool { return r == '/' || r == '_' || r == '!' })
	for i := 0; i < len(pa) && i < len(pb); i++ {
		if pa[i] == pb[i] {
			continue
		}
		na, ea := strconv.Atoi(pa[i])
		nb, eb := strconv.Atoi(pb[i])
		if ea == nil && eb == nil {
			return na < nb
		}
		return pa[i] < pb[i]
	}
	return len(pa) < len(pb)
}
