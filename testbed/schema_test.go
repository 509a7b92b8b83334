package testbed

// The parts of bringup's --json documents these tests read. Field names are
// the documented ones (bringup.diagnosis/v1, bringup.trace/v1,
// bringup.stacks/v1, bringup.run/v1); fields are only ever added to them.

type evidence struct {
	Path string `json:"path"`
	Line int    `json:"line"`
	Rank string `json:"rank"`
	Text string `json:"text"`
}

type finding struct {
	Rule     string     `json:"rule"`
	Title    string     `json:"title"`
	Severity string     `json:"severity"`
	Phase    string     `json:"phase"`
	Cause    string     `json:"cause"`
	Remedy   []string   `json:"remedy"`
	Ranks    []string   `json:"ranks"`
	Count    int        `json:"count"`
	Evidence []evidence `json:"evidence"`
	Root     string     `json:"root"`
}

type diagnosis struct {
	Status   string            `json:"status"`
	Verdict  string            `json:"verdict"`
	Versions map[string]string `json:"versions"`
	Findings []finding         `json:"findings"`
	Errors   []struct {
		Exception string `json:"exception"`
		Message   string `json:"message"`
	} `json:"errors"`
	Timeline []struct {
		Rank   string `json:"rank"`
		Phase  string `json:"phase"`
		Status string `json:"status"`
	} `json:"timeline"`
}

type traceDoc struct {
	Inputs []struct {
		Path     string `json:"path"`
		Rank     int    `json:"rank"`
		RankFrom string `json:"rank_from"`
	} `json:"inputs"`
	Ranks []struct {
		Rank        int    `json:"rank"`
		Label       string `json:"label"`
		Compiles    int    `json:"compiles"`
		Failed      int    `json:"failed"`
		Restarted   int    `json:"restarted"`
		Unfinished  int    `json:"unfinished"`
		GraphBreaks int    `json:"graph_breaks"`
		Recompiles  int    `json:"recompiles"`
		CacheHits   int    `json:"cache_hits"`
		CacheMisses int    `json:"cache_misses"`
		OpenPhases  int    `json:"open_phases"`
	} `json:"ranks"`
	Compiles []struct {
		Rank           int      `json:"rank"`
		Path           string   `json:"path"`
		ID             string   `json:"id"`
		Status         string   `json:"status"`
		FailType       string   `json:"fail_type"`
		FailReason     string   `json:"fail_reason"`
		FailUserFrame  string   `json:"fail_user_frame"`
		FellBack       bool     `json:"fell_back"`
		GraphBreaks    int      `json:"graph_breaks"`
		RestartReasons []string `json:"restart_reasons"`
	} `json:"compiles"`
	GraphBreaks []struct {
		Reason     string   `json:"reason"`
		UserFrame  string   `json:"user_frame"`
		GBID       string   `json:"gb_id"`
		GBType     string   `json:"gb_type"`
		Count      int      `json:"count"`
		CompileIDs []string `json:"compile_ids"`
	} `json:"graph_breaks"`
	Recompiles []struct {
		CompileID string   `json:"compile_id"`
		Frame     string   `json:"frame"`
		Reasons   []string `json:"reasons"`
	} `json:"recompiles"`
	Frames []struct {
		Name     string `json:"name"`
		Compiles int    `json:"compiles"`
		Limit    int    `json:"limit"`
		LimitHit bool   `json:"limit_hit"`
	} `json:"frames"`
	Cache []struct {
		Path      string `json:"path"`
		CompileID string `json:"compile_id"`
		Kind      string `json:"kind"`
		Outcome   string `json:"outcome"`
		Reason    string `json:"reason"`
		Differs   *struct {
			Path       string   `json:"path"`
			Components []string `json:"components"`
			SameKey    bool     `json:"same_key"`
		} `json:"differs"`
	} `json:"cache"`
	CacheStats map[string]struct {
		Hit    int `json:"hit"`
		Miss   int `json:"miss"`
		Bypass int `json:"bypass"`
	} `json:"cache_stats"`
	OpenPhases []struct {
		Name string `json:"name"`
	} `json:"open_phases"`
	Divergence []struct {
		Kind string `json:"kind"`
	} `json:"divergence"`
	Versions map[string]string `json:"versions"`
	Findings []finding         `json:"findings"`
}

type stackFrame struct {
	Func   string `json:"func"`
	File   string `json:"file"`
	Line   int    `json:"line"`
	Repeat int    `json:"repeat"`
}

type stacksDoc struct {
	Verdict   string `json:"verdict"`
	Processes []struct {
		PID     int    `json:"pid"`
		Rank    string `json:"rank"`
		Name    string `json:"name"`
		Python  string `json:"python"`
		Source  string `json:"source"`
		Threads []struct {
			TID    int          `json:"tid"`
			Name   string       `json:"name"`
			State  string       `json:"state"`
			Main   bool         `json:"main"`
			Frames []stackFrame `json:"frames"`
		} `json:"threads"`
	} `json:"processes"`
	Buckets []struct {
		ID     int          `json:"id"`
		Count  int          `json:"count"`
		Ranks  []string     `json:"ranks"`
		PIDs   []int        `json:"pids"`
		Frames []stackFrame `json:"frames"`
	} `json:"buckets"`
	Findings []finding `json:"findings"`
}
