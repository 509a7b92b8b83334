package stackdump

import (
	"strings"

	"github.com/bringup-tool/bringup/ingest/enginelog"
	"github.com/bringup-tool/bringup/record"
)

// Stack dumps arrive wrapped in the same collector, process and logger
// prefixes as engine logs (log-formats.md §1, §12), so lines are peeled
// by the engine-log reader's peeler; this file keeps what the stack
// parser needs of the result.

// peeled is one physical line with its wrappers removed.
type peeled struct {
	body string
	// stream identifies the producer of a line (its process prefixes and
	// collector), so line-interleaved output of several processes can be
	// separated again.
	stream string
	rank   record.Rank
	// tagged is set when the line's prefixes carried rank information.
	tagged bool
	// record is set when a logger header started a new record here: the
	// families that print their header on a record's first line (SGLang,
	// ATOM) and glog, whose every line is a record of its own.
	record bool
}

// peel strips \r, ANSI escapes and known prefixes from one line.
func peel(lp *enginelog.LinePeeler, line string) peeled {
	pl := lp.Peel(line)
	return peeled{
		body:   pl.Body,
		stream: pl.Stream,
		rank:   pl.Rank,
		tagged: pl.Tagged,
		record: pl.Logger == "sglang" || pl.Logger == "glog" || pl.Logger == "atom",
	}
}

// roleOf keeps the role word of a process name: "Worker_TP7" → "Worker".
func roleOf(name string) string {
	if i := strings.IndexByte(name, '_'); i > 0 {
		return name[:i]
	}
	return name
}

func rankKnown(r record.Rank) bool {
	return r.DP >= 0 || r.PP >= 0 || r.TP >= 0 || r.EP >= 0 || r.Global >= 0
}

// RankFromTitle reads the rank from a process title or command line such
// as "VLLM::Worker_TP3" or "sglang::scheduler_PP2_TP1"; record.NoRank when
// it names none.
func RankFromTitle(title string) record.Rank {
	r := record.NoRank
	i := strings.Index(title, "::")
	if i < 0 {
		return r
	}
	head := title[i+2:]
	if j := strings.IndexByte(head, ' '); j >= 0 {
		head = head[:j]
	}
	if record.ScanRankTokens(head, &r) {
		r.Role = roleOf(head)
	}
	return r
}
