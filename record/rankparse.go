package record

// Rank indices are printed in two ways: as whole tokens in process names
// and logger headers ("Worker_TP3", "[… DP7 TP7]"), and embedded in
// titles and file names ("sglang::scheduler_PP2_TP1", "dump_rank3.txt").
// Both readers set fields through rankIndex, so a name means the same
// index wherever it is read.

// rankIndex returns the field of r that a component name sets: DP, PP,
// TP, EP, or the global rank for "rank"; nil for any other name.
func rankIndex(r *Rank, name string) *int {
	switch name {
	case "TP":
		return &r.TP
	case "DP":
		return &r.DP
	case "PP":
		return &r.PP
	case "EP":
		return &r.EP
	case "rank", "RANK", "Rank":
		return &r.Global
	}
	return nil
}

// ParseRankComponent reads one whole upper-case component token, "TP3",
// "DP0", "PP1" or "EP2", into r. It reports whether tok is a known
// component; "PCP", "DCP" and "CP" are known but have no field in Rank.
// Generic so the log reader's hot path passes bytes without a copy.
func ParseRankComponent[T string | []byte](tok T, r *Rank) bool {
	k := 0
	for k < len(tok) && tok[k] >= 'A' && tok[k] <= 'Z' {
		k++
	}
	if k == 0 || k == len(tok) {
		return false
	}
	n := 0
	for _, c := range []byte(tok[k:]) {
		if c < '0' || c > '9' {
			return false
		}
		if n < 1e12 {
			n = n*10 + int(c-'0')
		}
	}
	switch string(tok[:k]) {
	case "TP":
		r.TP = n
	case "DP":
		r.DP = n
	case "PP":
		r.PP = n
	case "EP":
		r.EP = n
	case "PCP", "DCP", "CP":
	default:
		return false
	}
	return true
}

// ScanRankTokens reads the DP/PP/TP/EP/rank indices that a title, prefix
// or file name carries anywhere in it ("sglang::scheduler_PP2_TP1",
// "VLLM::Worker_TP3", "rank3", "dump_rank-3.txt"): a name that starts
// the text or follows a character that is not a letter or digit, an
// optional "_", "=" or "-", then digits. Later tokens win; indices above
// 2^20 are ignored. It reports whether it set any.
func ScanRankTokens(s string, r *Rank) bool {
	found := false
	for i := 0; i < len(s); i++ {
		if i > 0 && isAlnum(s[i-1]) {
			continue
		}
		for _, name := range rankNames {
			if len(s)-i < len(name)+1 || s[i:i+len(name)] != name {
				continue
			}
			j := i + len(name)
			if s[j] == '_' || s[j] == '=' || s[j] == '-' {
				j++
			}
			n, e := 0, j
			for e < len(s) && s[e] >= '0' && s[e] <= '9' {
				if n <= 1<<20 {
					n = n*10 + int(s[e]-'0')
				}
				e++
			}
			if e == j {
				continue
			}
			if n <= 1<<20 {
				*rankIndex(r, name) = n
				found = true
			}
			i = e - 1
			break
		}
	}
	return found
}

var rankNames = [...]string{"DP", "PP", "TP", "EP", "rank", "RANK", "Rank"}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c|0x20 >= 'a' && c|0x20 <= 'z'
}
