package watch

import (
	"strings"

	"github.com/bringup-tool/bringup/diagnose"
	"github.com/bringup-tool/bringup/probe"
	"github.com/bringup-tool/bringup/store"
)

// readProbe reads the probe's reports once the boot is stopped: the
// findings go into the run (and, through Evidence.Probe, into the
// diagnosis, whose verdict then names the instruction, the code object
// and the module), and every Python process that did not load the probe
// is named with the reason, as the env check names a process that did not
// get the requested environment.
func (w *watcher) readProbe() {
	if w.probeDep == nil {
		return
	}
	w.probeScan.Scan()
	reports, problems := probe.ReadDir(w.run.Dir)
	w.probeIn = &diagnose.ProbeInput{Dir: w.probeDep.Dir, Reports: reports, Problems: problems}
	p := w.run.Probe
	p.Loaded, p.NotLoaded, p.Problems = 0, nil, nil
	for _, r := range reports {
		if r.Loaded {
			p.Loaded++
		}
	}
	for _, m := range w.probeDep.Missing(w.probeScan.Python(), reports) {
		p.NotLoaded = append(p.NotLoaded, store.ProbeMissing{PID: m.PID, Process: clipText(strings.Join(m.Cmdline, " "), 200), Reason: m.Reason})
		w.say("%s %s did not load the probe: %s", w.cfg.Style.Red("probe"), m.String(), m.Reason)
	}
	for _, pr := range problems {
		p.Problems = append(p.Problems, pr.String())
		w.say("%s %s", w.cfg.Style.Yellow("probe"), pr.String())
	}
	p.Findings = probe.Findings(reports)
	w.run.Findings = mergeFindings(w.run.Findings, p.Findings)
	n := len(p.Findings)
	w.say("probe: %d Python process(es) loaded it, %d did not; %d distinct exception(s) matching %s recorded in %s", p.Loaded, len(p.NotLoaded), n, p.Spec, p.Dir)
}
