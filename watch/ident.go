package watch

import (
	"os"
	"strings"

	"github.com/bringup-tool/bringup/store"
)

// selfIdentity is this bringup process as a later bringup can recognise
// it: pid and start time on this boot of this host, in this pid namespace.
func selfIdentity() store.Watcher {
	pid := os.Getpid()
	id := store.Watcher{PID: pid, BootID: bootID(), PIDNS: pidNS()}
	if p, err := readStat(pid); err == nil {
		id.StartTicks = p.Start
	}
	id.Host, _ = os.Hostname()
	return id
}

func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func pidNS() string {
	s, _ := os.Readlink("/proc/self/ns/pid")
	return s
}

// watcherState says whether the watcher w of a run recorded elsewhere is
// alive ("alive"), certainly gone ("gone"), or cannot be told from here
// (another host or pid namespace: "unknown").
func watcherState(w *store.Watcher, me store.Watcher) string {
	switch {
	case w == nil || w.PID <= 0:
		return "unknown"
	case w.Host != me.Host:
		return "unknown"
	case w.BootID != "" && me.BootID != "" && w.BootID != me.BootID:
		return "gone" // the host rebooted since
	case w.PIDNS != me.PIDNS:
		return "unknown"
	case alive(w.PID, w.StartTicks):
		return "alive"
	}
	return "gone"
}
