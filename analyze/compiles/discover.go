package compiles

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/bringup-tool/bringup/ingest/torchtrace"
	"github.com/bringup-tool/bringup/input"
)

// maxDepth bounds the directory walk: a TORCH_TRACE directory is flat, but
// people pass its parent too.
const maxDepth = 3

// Discover expands the arguments into trace files. A file argument is read
// as a trace whatever its name (its rank comes from the name when it has
// one); one that is not a regular file (a FIFO, a device) is an error. A
// directory is searched for rank files (dedicated_log_torch_trace_rank_N….log,
// or .log.gz) and other files that sniff as TORCH_TRACE (gzipped ones
// decompressed); everything else is returned as Ignored with a reason,
// except FIFOs, devices and sockets, which are passed over unopened. An
// error means nothing usable was found or an argument cannot be read.
func Discover(args []string) ([]Input, []Ignored, error) {
	var inputs []Input
	var ignored []Ignored
	seen := map[string]bool{}
	add := func(path, root string) {
		if seen[path] {
			return
		}
		seen[path] = true
		in := Input{Path: path, Rank: torchtrace.RankFromName(path), RankFrom: "file_name"}
		if root != "" {
			rel, err := filepath.Rel(root, filepath.Dir(path))
			if err != nil || rel == "." {
				rel = filepath.Base(root)
				if abs, err := filepath.Abs(root); err == nil && (rel == "." || rel == "..") {
					rel = filepath.Base(abs)
				}
			}
			in.group, in.groupName = root+"\x00"+rel, filepath.ToSlash(rel)
		}
		if in.Rank < 0 {
			in.RankFrom = "none"
		}
		if fi, err := os.Stat(path); err == nil {
			in.Bytes = fi.Size()
		}
		inputs = append(inputs, in)
	}
	for _, arg := range args {
		fi, err := os.Stat(arg)
		if err != nil {
			return nil, nil, fmt.Errorf("cannot read %s: %v", arg, err)
		}
		if !fi.IsDir() {
			// A FIFO would block the reader, a device never end.
			if err := input.Check(arg); err != nil {
				return nil, nil, err
			}
			add(arg, "")
			continue
		}
		var found int
		root := filepath.Clean(arg)
		err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				ignored = append(ignored, Ignored{Path: path, Reason: err.Error()})
				if d != nil && d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
			if d.IsDir() {
				if path != root && (strings.HasPrefix(d.Name(), ".") || strings.Count(path[len(root):], string(filepath.Separator)) >= maxDepth) {
					return fs.SkipDir
				}
				return nil
			}
			if !input.Walkable(path, d) {
				return nil // FIFOs, devices, sockets, links to directories
			}
			if torchtrace.RankFromName(path) >= 0 {
				add(path, root)
				found++
				return nil
			}
			head, err := torchtrace.Head(path)
			switch {
			case err != nil:
				ignored = append(ignored, Ignored{Path: path, Reason: err.Error()})
			case len(head) == 0:
				ignored = append(ignored, Ignored{Path: path, Reason: "empty file, not a rank trace (dedicated_log_torch_trace_rank_N.log)"})
			case torchtrace.Sniff(path, head) >= 60:
				add(path, root)
				found++
			default:
				ignored = append(ignored, Ignored{Path: path, Reason: "not a TORCH_TRACE log"})
			}
			return nil
		})
		if err != nil {
			return nil, nil, fmt.Errorf("cannot search %s: %v", arg, err)
		}
		if found == 0 {
			return nil, ignored, fmt.Errorf("no TORCH_TRACE files in %s (expected dedicated_log_torch_trace_rank_N.log files, as written under TORCH_TRACE=<dir>)", arg)
		}
	}
	if len(inputs) == 0 {
		return nil, ignored, fmt.Errorf("no TORCH_TRACE files given")
	}
	sortInputs(inputs)
	return inputs, ignored, nil
}

// sortInputs puts ranked inputs first in rank order, then the rest by path.
func sortInputs(in []Input) {
	sort.SliceStable(in, func(i, j int) bool {
		a, b := in[i], in[j]
		if (a.Rank < 0) != (b.Rank < 0) {
			return a.Rank >= 0
		}
		if a.Rank != b.Rank {
			return a.Rank < b.Rank
		}
		return a.Path < b.Path
	})
}

// label names each input: "rank N" when the rank is known and unique
// ("<run> rank N" when there are several runs), else the file name (or
// the path, when file names repeat).
func labelInputs(in []Input) {
	type runRank struct {
		run  string
		rank int
	}
	rankCount := map[int]int{}
	runRankCount := map[runRank]int{}
	baseCount := map[string]int{}
	for _, x := range in {
		rankCount[x.Rank]++
		runRankCount[runRank{x.Run, x.Rank}]++
		baseCount[filepath.Base(x.Path)]++
	}
	for i := range in {
		x := &in[i]
		switch {
		case x.Rank >= 0 && x.Run != "" && runRankCount[runRank{x.Run, x.Rank}] == 1:
			x.Label = fmt.Sprintf("%s rank %d", x.Run, x.Rank)
		case x.Rank >= 0 && x.Run == "" && rankCount[x.Rank] == 1:
			x.Label = fmt.Sprintf("rank %d", x.Rank)
		case baseCount[filepath.Base(x.Path)] == 1:
			x.Label = filepath.Base(x.Path)
		default:
			x.Label = x.Path
		}
	}
}
