package stacks

import "strings"

// Process roles: what a process of a boot is when it is not a worker.
// Helpers (the multiprocessing resource tracker and forkserver, Inductor's
// compile-worker subprocesses, Ray's own processes, torchrun's elastic
// agent) are never ranks, outliers or the place a hang is; coordinators
// (an engine's API server and engine core) are not compared with workers
// when workers were captured too, and are the worker when they are all
// there is (vLLM runs the model inside the engine core at TP=1).
const (
	RoleResourceTracker = "resource-tracker"
	RoleForkserver      = "forkserver"
	RoleCompileWorker   = "compile-worker"
	RoleRay             = "ray"
	RoleElasticAgent    = "elastic-agent"
	RoleEngineHelper    = "engine-helper"
	RoleAPIServer       = "api-server"
	RoleEngineCore      = "engine-core"
)

// RoleLabel is a role as a person reads it.
func RoleLabel(role string) string {
	switch role {
	case RoleResourceTracker:
		return "multiprocessing resource tracker"
	case RoleForkserver:
		return "multiprocessing forkserver"
	case RoleCompileWorker:
		return "Inductor compile worker"
	case RoleRay:
		return "Ray process"
	case RoleElasticAgent:
		return "torchrun elastic agent"
	case RoleEngineHelper:
		return "engine helper process"
	case RoleAPIServer:
		return "engine API server"
	case RoleEngineCore:
		return "engine core"
	}
	return role
}

// IsHelper reports whether a role is a helper: a process that is never a
// worker.
func IsHelper(role string) bool {
	switch role {
	case "", RoleAPIServer, RoleEngineCore:
		return false
	}
	return true
}

// IsCoordinator reports whether a role is an engine's API server or engine
// core: not a worker when workers were captured too.
func IsCoordinator(role string) bool { return role == RoleAPIServer || role == RoleEngineCore }

// roleSite is a frame that marks a role: a file (suffix match on the
// package-relative path) and, when set, a function.
type roleSite struct {
	role, file, fn string
}

// roleFrames are frames of a process's main thread that say what it is.
// Only the worker side of each helper is listed: a rank that waits for
// its compile workers has subproc_pool.py frames too, but never
// SubprocMain's loop or the compile worker's __main__.
var roleFrames = []roleSite{
	{RoleResourceTracker, "multiprocessing/resource_tracker.py", "main"},
	{RoleForkserver, "multiprocessing/forkserver.py", "main"},
	{RoleCompileWorker, "torch/_inductor/compile_worker/__main__.py", ""},
	{RoleCompileWorker, "torch/_inductor/compile_worker/subproc_pool.py", "SubprocMain.main"},
	{RoleRay, "ray/_private/workers/default_worker.py", ""},
	{RoleRay, "ray/dashboard/", ""},
	{RoleRay, "ray/_private/log_monitor.py", ""},
	{RoleRay, "ray/autoscaler/_private/monitor.py", ""},
	{RoleRay, "ray/_private/runtime_env/agent/", ""},
	{RoleElasticAgent, "torch/distributed/elastic/agent/server/", ""},
	{RoleElasticAgent, "torch/distributed/launcher/api.py", "launch_agent"},
	{RoleEngineHelper, "sglang/srt/managers/detokenizer_manager.py", "run_detokenizer_process"},
	{RoleAPIServer, "vllm/entrypoints/openai/api_server.py", ""},
	{RoleAPIServer, "vllm/entrypoints/cli/serve.py", ""},
	{RoleAPIServer, "vllm/entrypoints/launcher.py", "serve_http"},
	{RoleAPIServer, "sglang/srt/entrypoints/http_server.py", "launch_server"},
	{RoleAPIServer, "sglang/launch_server.py", ""},
	{RoleEngineCore, "vllm/v1/engine/core.py", "run_engine_core"},
}

// roleNames are command-line or process-title fragments that say what a
// process is (py-spy prints the title, live captures the command line).
var roleNames = []struct{ role, text string }{
	{RoleResourceTracker, "multiprocessing.resource_tracker"},
	{RoleForkserver, "multiprocessing.forkserver"},
	{RoleCompileWorker, "torch/_inductor/compile_worker"},
	{RoleCompileWorker, "torch._inductor.compile_worker"},
	{RoleRay, "ray::IDLE"},
	{RoleRay, "/raylet"},
	{RoleRay, "gcs_server"},
	{RoleRay, "ray/_private/workers/default_worker.py"},
	{RoleRay, "ray/dashboard/"},
	{RoleRay, "ray/_private/log_monitor.py"},
	{RoleRay, "ray/autoscaler/_private/monitor.py"},
	{RoleElasticAgent, "torch.distributed.run"},
	{RoleElasticAgent, "torch.distributed.launch"},
	{RoleElasticAgent, "/torchrun "},
	{RoleEngineHelper, "sglang::detokenizer"},
	{RoleAPIServer, "::APIServer"},
	{RoleEngineCore, "::EngineCore"},
}

// roleOf says what a process is from its title or command line, its
// rank's role word and its main thread's frames; "" for a worker (or a
// process nothing is known of).
func roleOf(p *Process, norm *normalizer) string {
	if p.Role != "" {
		return p.Role
	}
	name := p.Name
	if strings.HasPrefix(name, "torchrun ") || strings.HasSuffix(name, "/torchrun") {
		return RoleElasticAgent
	}
	for _, rn := range roleNames {
		if strings.Contains(name, rn.text) {
			return rn.role
		}
	}
	switch p.RankInfo.Role {
	case "APIServer":
		return RoleAPIServer
	case "EngineCore":
		return RoleEngineCore
	}
	var main *Thread
	for i := range p.Threads {
		t := &p.Threads[i]
		if t.Main || t.Name == "MainThread" {
			main = t
			break
		}
	}
	if main == nil {
		return ""
	}
	// A forked child's stack keeps its parent's frames under its own
	// entry (multiprocessing's Process._bootstrap): only the child's own
	// part says what it is (a worker forked from the engine core is not
	// the engine core).
	own := main.Frames
	for i, f := range own {
		if k := norm.key(f); !f.Native && k.Func == "_bootstrap" && fileIs(k.File, "multiprocessing/process.py") {
			own = own[:i+1]
			break
		}
	}
	for _, f := range own {
		if f.Native {
			continue
		}
		k := norm.key(f)
		if !roleFile(k.File) {
			continue
		}
		for _, rs := range roleFrames {
			// The function is compared without its class: py-spy prints
			// co_name ("main" for SubprocMain.main), which is why only
			// names a rank's own frames never have are listed.
			if inPath(k.File, rs.file) && (rs.fn == "" || k.Func == NormFunc(rs.fn, false, "")) {
				return rs.role
			}
		}
	}
	// A compile pool's worker forked from the compile-worker process (or,
	// in older torch, from the rank itself) keeps its parent's Inductor
	// frames under concurrent.futures' worker loop.
	if hasFrameIn(main, norm, "concurrent/futures/process.py", "_process_worker") && hasFile(main, norm, "torch/_inductor/") {
		return RoleCompileWorker
	}
	return ""
}

// roleFile is a quick test that a file can be one of roleFrames'.
func roleFile(file string) bool {
	return strings.Contains(file, "multiprocessing/") || strings.Contains(file, "torch/") || strings.Contains(file, "ray/") ||
		strings.Contains(file, "vllm/") || strings.Contains(file, "sglang/")
}

func hasFrameIn(t *Thread, norm *normalizer, file, fn string) bool {
	for _, f := range t.Frames {
		if k := norm.key(f); !f.Native && fileIs(k.File, file) && k.Func == fn {
			return true
		}
	}
	return false
}

func hasFile(t *Thread, norm *normalizer, dir string) bool {
	for _, f := range t.Frames {
		if k := norm.key(f); !f.Native && inPath(k.File, dir) {
			return true
		}
	}
	return false
}

// inPath: a package-relative file is want (a file, suffix-matched) or lies
// under want (a directory, ending in '/').
func inPath(file, want string) bool {
	if strings.HasSuffix(want, "/") {
		i := strings.Index(file, want)
		return i == 0 || (i > 0 && file[i-1] == '/')
	}
	return fileIs(file, want)
}
