package diagnose

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/bringup-tool/bringup/probe"
	"github.com/bringup-tool/bringup/record"
)

// InputKindProbe is the Kind of the input that stands for a run's probe
// reports (RUN_DIR/probe).
const InputKindProbe = "probe"

// ProbeInput is the exception probe's reports of one boot.
type ProbeInput struct {
	Dir      string // RUN_DIR/probe
	Reports  []probe.Report
	Problems []record.Skip
}

// ReadProbe reads the probe reports of a run directory; nil when it holds
// no probe directory.
func ReadProbe(runDir string) *ProbeInput {
	dir := filepath.Join(runDir, probe.SubDir)
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		return nil
	}
	reports, problems := probe.ReadDir(runDir)
	return &ProbeInput{Dir: dir, Reports: reports, Problems: problems}
}

// isProbeDir: a directory that is a probe deployment (its site/ and code/
// are the probe's own Python, its JSON files reports, none of them logs).
func isProbeDir(path string) bool {
	if filepath.Base(path) != probe.SubDir {
		return false
	}
	for _, sub := range []string{"site", "code"} {
		if fi, err := os.Lstat(filepath.Join(path, sub)); err == nil && fi.IsDir() {
			return true
		}
	}
	m, _ := filepath.Glob(filepath.Join(path, "loaded-*.json"))
	return len(m) > 0
}

// addProbe puts the probe's findings into d: an input for the reports,
// its findings first among those of their severity, and a def-line
// finding of the log made specific by the probe's explanation of the same
// exception (the instruction, the code object, the module it ran on).
func addProbe(d *Diagnosis, p *ProbeInput) {
	if p == nil {
		return
	}
	in := Input{Path: p.Dir, Kind: InputKindProbe}
	for _, r := range p.Reports {
		in.Records += int64(len(r.Records))
	}
	if len(p.Problems) > 0 {
		var msgs []string
		for _, pr := range p.Problems {
			msgs = append(msgs, pr.String())
		}
		in.Skipped = int64(len(p.Problems))
		in.Error = strings.Join(msgs, "; ")
	}
	d.Inputs = append(d.Inputs, in)
	found := probe.Findings(p.Reports)
	if len(found) == 0 {
		return
	}
	for i := range d.Findings {
		f := &d.Findings[i]
		if f.Rule != defLineRule {
			continue
		}
		for _, pf := range found {
			if pf.Rule == probe.RuleGenerated && pf.Root != "" && sameException(f, pf) {
				f.Cause = strings.TrimRight(f.Cause, "\n") + "\n\nThe probe named the raiser: " + pf.Root + "."
				if pf.Title == probe.TitleNoPosition {
					// The probe's fact wins over the log's reading.
					f.RaisedIn = pf.RaisedIn
					f.Cause += " The probe shows torch._dynamo was not loaded in this process: this code has no source position at its def line, but Dynamo did not generate it, so what is said above of compiled code does not apply."
				}
				f.References = append(f.References, "docs/probe.md")
				break
			}
		}
	}
	var out []record.Finding
	for _, sev := range []record.Severity{record.SeverityError, record.SeverityWarning, record.SeverityInfo} {
		for _, pf := range found {
			if pf.Severity == sev {
				out = append(out, pf)
			}
		}
		for _, f := range d.Findings {
			if f.Severity == sev {
				out = append(out, f)
			}
		}
	}
	for _, f := range d.Findings { // any other severity, as it was
		if f.Severity != record.SeverityError && f.Severity != record.SeverityWarning && f.Severity != record.SeverityInfo {
			out = append(out, f)
		}
	}
	d.Findings = out
	for i := range d.Errors {
		for _, pf := range found {
			if pf.Severity == record.SeverityError && strings.HasPrefix(pf.Root, d.Errors[i].Exception+": "+firstMsgLine(d.Errors[i].Message)) {
				d.Errors[i].Rules = append(d.Errors[i].Rules, pf.Rule)
				break
			}
		}
	}
}

// defLineRule is the log's rule for an exception reported at a def line.
const defLineRule = "inlined-callee-def-line"

func firstMsgLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// sameException: the log finding's exception is the one the probe
// recorded (its evidence quotes the exception line the probe's root starts
// with).
func sameException(f *record.Finding, pf record.Finding) bool {
	exc, _, _ := strings.Cut(pf.Root, " raised by ")
	for _, e := range f.Evidence {
		if strings.Contains(e.Text, exc) {
			return true
		}
	}
	return f.Root != "" && strings.HasPrefix(exc, f.Root)
}

// probeVerdict is the verdict for a probe finding: its one-line headline.
func probeVerdict(phase, where string, f record.Finding) string {
	return fmt.Sprintf("FAILED%s%s: %s [%s]", phase, where, f.Root, f.Rule)
}
