package stackdump

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/bringup-tool/bringup/record"
)

// The prefix peeler here is deliberately small: it knows the collector,
// process and logger prefixes that wrap stack dumps in practice
// (log-formats.md §1, §12) and keeps what they say about the rank. When the
// enginelog package exports a peeler, this file should call it instead.

var (
	ansiRE = regexp.MustCompile(`\x1b\[[0-9;?]*[A-Za-z]`)
	// kubectl logs --prefix
	kubectlRE = regexp.MustCompile(`^\[pod/([^/\]]+)/([^\]]+)\] `)
	// docker compose: the service name padded to a common width, then "| ".
	composeRE = regexp.MustCompile(`^([A-Za-z0-9][\w.-]{0,62}?)\s+\|(?: |$)`)
	// vLLM / Ray process prefixes, possibly nested; a damaged first line can
	// lose the opening parenthesis.
	procPrefixRE = regexp.MustCompile(`^\(?([A-Za-z_][\w]*?)(?: rank=(\d+))?(?: ([A-Z]+\d+))? pid=(\d+)(?:, ip=[\d.]+)?\) ?`)
	// vLLM logger header, repeated on every line of a record.
	vllmHeaderRE = regexp.MustCompile(`^(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)\s+\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?\s+\[?[\w./-]+:\d+\](?: |$)`)
	// SGLang logger header: only on the first line of a record.
	sglangHeaderRE = regexp.MustCompile(`^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)?((?: [A-Z]+\d+)*)\] ?`)
	// PyTorch glog header.
	glogRE = regexp.MustCompile(`^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ [^\]]+\] `)
	// rank tokens inside titles, prefixes and file names.
	rankTokRE = regexp.MustCompile(`(?:^|[^A-Za-z0-9])(DP|PP|TP|EP|rank|RANK|Rank)[_=-]?(\d+)`)
)

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
	// record is set when a logger header started a new record here.
	record bool
}

// peel strips \r, ANSI escapes and known prefixes from one line.
func peel(line string, tagCache map[string]record.Rank) peeled {
	line = strings.TrimRight(line, "\r")
	if strings.IndexByte(line, 0x1b) >= 0 {
		line = ansiRE.ReplaceAllString(line, "")
	}
	p := peeled{rank: record.NoRank}
	var stream strings.Builder
	if m := matchIf(strings.HasPrefix(line, "[pod/"), kubectlRE, line); m != nil {
		stream.WriteString(m[0])
		line = line[len(m[0]):]
	} else if m := matchIf(mayCompose(line), composeRE, line); m != nil && !strings.HasPrefix(line, "Process ") && !strings.HasPrefix(line, "Thread ") {
		stream.WriteString(m[1] + "|")
		line = line[len(m[0]):]
	}
	for i := 0; i < 4; i++ {
		if m := matchIf(mayProcPrefix(line), procPrefixRE, line); m != nil {
			stream.WriteString(m[0])
			applyRankTokens(m[1]+" "+m[3], &p.rank)
			if m[2] != "" {
				p.rank.Global, _ = strconv.Atoi(m[2])
			}
			p.rank.PID, _ = strconv.Atoi(m[4])
			p.rank.Role = roleOf(m[1])
			p.tagged = true
			line = line[len(m[0]):]
			continue
		}
		if n, rank := torchrunPrefix(line); n > 0 {
			stream.WriteString(line[:n])
			p.rank.Global = rank
			p.tagged = true
			line = line[n:]
			continue
		}
		break
	}
	c := byte(0)
	if line != "" {
		c = line[0]
	}
	if m := matchIf(c == 'D' || c == 'I' || c == 'W' || c == 'E' || c == 'C', vllmHeaderRE, line); m != nil {
		line = line[len(m[0]):]
	} else if n, tags := sglangHeader(line); n > 0 {
		p.record = true
		if tags != "" {
			// Every line of an SGLang log carries its tag: parse each
			// distinct tag once.
			r, ok := tagCache[tags]
			if !ok {
				r = record.NoRank
				applyRankTokens(tags, &r)
				if len(tagCache) < 4096 {
					tagCache[tags] = r
				}
			}
			r.PID, r.Role = p.rank.PID, p.rank.Role
			mergeTags(&p.rank, r)
			p.tagged = true
		}
		line = line[n:]
	} else if m := matchIf((c == 'I' || c == 'W' || c == 'E' || c == 'F') && len(line) > 1 && line[1] >= '0' && line[1] <= '9', glogRE, line); m != nil {
		p.record = true
		line = line[len(m[0]):]
	}
	p.body = line
	p.stream = stream.String()
	return p
}

// roleOf keeps the role word of a process name: "Worker_TP7" → "Worker".
func roleOf(name string) string {
	if i := strings.IndexByte(name, '_'); i > 0 {
		return name[:i]
	}
	return name
}

// applyRankTokens reads DP/PP/TP/EP/rank indices out of a title, prefix
// or file name ("sglang::scheduler_PP2_TP1", "VLLM::Worker_TP3", "rank3").
// It reports whether it found any.
func applyRankTokens(s string, r *record.Rank) bool {
	found := false
	for _, m := range rankTokRE.FindAllStringSubmatch(s, -1) {
		n, err := strconv.Atoi(m[2])
		if err != nil || n > 1<<20 {
			continue
		}
		found = true
		switch m[1] {
		case "DP":
			r.DP = n
		case "PP":
			r.PP = n
		case "TP":
			r.TP = n
		case "EP":
			r.EP = n
		default:
			r.Global = n
		}
	}
	return found
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
	if applyRankTokens(head, &r) {
		r.Role = roleOf(head)
	}
	return r
}

// mayCompose: a docker compose prefix is a service name, spaces, "|"
// within the first few dozen bytes.
func mayCompose(line string) bool {
	if line == "" || line[0] == ' ' || line[0] == '\t' {
		return false
	}
	head := line
	if len(head) > 72 {
		head = head[:72]
	}
	return strings.IndexByte(head, '|') > 0
}

// mayProcPrefix: "(Name pid=N) " near the start.
func mayProcPrefix(line string) bool {
	head := line
	if len(head) > 120 {
		head = head[:120]
	}
	return strings.Contains(head, " pid=")
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// sglangHeader parses "[YYYY-MM-DD HH:MM:SS( TAGn)*] " by hand (it starts
// every line of an SGLang log, so a regex here is the reader's hot spot);
// it returns the length to cut and the rank tags, or 0.
func sglangHeader(s string) (int, string) {
	const shape = "[dddd-dd-dd dd:dd:dd"
	if len(s) < len(shape)+1 || s[0] != '[' {
		return 0, ""
	}
	for i := 1; i < len(shape); i++ {
		if shape[i] == 'd' {
			if !isDigit(s[i]) {
				return 0, ""
			}
		} else if s[i] != shape[i] {
			return 0, ""
		}
	}
	i := len(shape)
	if i < len(s) && (s[i] == '.' || s[i] == ',') {
		i++
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	}
	tagStart := i
	for i < len(s) && s[i] == ' ' {
		j := i + 1
		for j < len(s) && s[j] >= 'A' && s[j] <= 'Z' {
			j++
		}
		k := j
		for k < len(s) && isDigit(s[k]) {
			k++
		}
		if j == i+1 || k == j {
			break
		}
		i = k
	}
	if i >= len(s) || s[i] != ']' {
		return 0, ""
	}
	tags := s[tagStart:i]
	i++
	if i < len(s) && s[i] == ' ' {
		i++
	}
	return i, tags
}

// torchrunPrefix parses "[default3]:" / "[rank3]:"; 0 when absent.
func torchrunPrefix(s string) (int, int) {
	if len(s) < 4 || s[0] != '[' {
		return 0, 0
	}
	i := 1
	for i < len(s) && (s[i] == '_' || s[i] >= 'a' && s[i] <= 'z' || s[i] >= 'A' && s[i] <= 'Z') {
		i++
	}
	j := i
	n := 0
	for j < len(s) && isDigit(s[j]) && j-i < 7 {
		n = n*10 + int(s[j]-'0')
		j++
	}
	if j == i || j+1 >= len(s) || s[j] != ']' || s[j+1] != ':' {
		return 0, 0
	}
	return j + 2, n
}

// mergeTags copies the indices a header tag set onto r.
func mergeTags(r *record.Rank, t record.Rank) {
	if t.DP >= 0 {
		r.DP = t.DP
	}
	if t.PP >= 0 {
		r.PP = t.PP
	}
	if t.TP >= 0 {
		r.TP = t.TP
	}
	if t.EP >= 0 {
		r.EP = t.EP
	}
	if t.Global >= 0 {
		r.Global = t.Global
	}
}
