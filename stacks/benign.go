package stacks

// Benign idle threads (stack-dumps.md §6.6) are auxiliary threads parked
// in a wait: they are in every dump and say nothing about a hang, so they
// are folded last. The list comes from the real dumps in the corpus.

type waitSite struct{ file, fn string }

// idleLeaves are innermost Python frames of a thread that is parked.
var idleLeaves = []waitSite{
	{"threading.py", "wait"},
	{"threading.py", "_wait_for_tstate_lock"},
	{"threading.py", "join"},
	{"queue.py", "get"},
	{"selectors.py", "select"},
	{"selectors.py", "poll"},
	{"socket.py", "accept"},
	{"socketserver.py", "serve_forever"},
	{"zmq/sugar/socket.py", "recv"},
	{"zmq/sugar/socket.py", "recv_multipart"},
	{"zmq/sugar/poll.py", "poll"},
	{"concurrent/futures/thread.py", "_worker"},
	{"multiprocessing/connection.py", "wait"},
	{"multiprocessing/connection.py", "_recv_bytes"},
	{"multiprocessing/connection.py", "poll"},
	{"asyncio/base_events.py", "_run_once"},
}

// auxFrames anywhere in a non-main thread mark a known auxiliary thread:
// tqdm's monitor, SGLang's watchdog (which runs py-spy on its own process),
// vLLM's worker monitor.
var auxFrames = []waitSite{
	{"tqdm/_monitor.py", "run"},
	{"", "pyspy_dump_schedulers"},
	{"", "_watchdog_thread"},
	{"", "watchdog_thread"},
	{"", "_watchdog_once"},
	{"", "monitor_workers"},
	{"", "MultiprocWorkerMonitor"},
}

func fileIs(file, want string) bool {
	n := len(file) - len(want)
	return n >= 0 && file[n:] == want && (n == 0 || file[n-1] == '/')
}

// isBenign reports whether a thread is an idle auxiliary thread.
func isBenign(t *Thread, keys []Key, main bool) bool {
	if main {
		return false
	}
	if len(t.Frames) == 0 {
		return true // a thread state with no Python frame (a C++ worker)
	}
	for _, k := range keys {
		for _, a := range auxFrames {
			if k.Func == a.fn && (a.file == "" || fileIs(k.File, a.file)) {
				return true
			}
		}
	}
	// The innermost Python frame decides; native frames under it (libc
	// waits in --native dumps) do not.
	for i, f := range t.Frames {
		if f.Native {
			continue
		}
		for _, w := range idleLeaves {
			if keys[i].Func == w.fn && fileIs(keys[i].File, w.file) {
				return true
			}
		}
		return false
	}
	return false
}
