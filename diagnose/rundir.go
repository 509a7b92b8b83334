package diagnose

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/bringup-tool/bringup/input"
	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/rules"
)

// InputKindRun is the Kind of a watch run's run.json among the inputs.
const InputKindRun = "run"

// RunFacts is what diagnose takes from a watch run directory's run.json
// (schema bringup.run/v1; `bringup runs show` gives the rest): the run's
// facts, never findings of a log.
type RunFacts struct {
	Schema  string   `json:"schema"`
	ID      int64    `json:"id"`
	Command []string `json:"command"`
	Outcome string   `json:"outcome"`
	Reason  string   `json:"reason,omitempty"`
	Verdict string   `json:"verdict,omitempty"`
	// Started and Ended bound the run; Timeline is its phases as watch
	// measured them (a phase still open when the boot was stopped lasts
	// until the stop).
	Started  time.Time      `json:"started"`
	Ended    time.Time      `json:"ended,omitzero"`
	Timeline []record.Phase `json:"timeline"`
	// Stop: who stopped the boot, when, how many lines it had printed by
	// then and when it last printed before.
	Stop *struct {
		By         string    `json:"by"`
		At         time.Time `json:"at"`
		Line       int64     `json:"line"`
		LastOutput time.Time `json:"last_output,omitzero"`
	} `json:"stop,omitempty"`
	// AfterStop is what the boot printed after the stop, left out of the
	// findings as watch leaves it out (DropAfterStop).
	AfterStop []string `json:"after_stop,omitempty"`
}

// maxRunJSON bounds the run.json read (watch writes a few hundred KiB at
// most: 1024 processes of env_seen).
const maxRunJSON = 64 << 20

// readRunFacts reads dir/run.json when dir is a watch run directory; the
// input entry says why it could not be used.
func readRunFacts(dir string) (*RunFacts, *Input) {
	path := filepath.Join(dir, "run.json")
	if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() {
		return nil, nil
	}
	in := &Input{Path: path, Kind: InputKindRun}
	f, err := input.Open(path)
	if err != nil {
		in.Error = reason(err)
		return nil, in
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxRunJSON+1))
	in.Bytes = int64(len(data))
	switch {
	case err != nil:
		in.Error = reason(err)
		return nil, in
	case len(data) > maxRunJSON:
		in.Error = fmt.Sprintf("larger than %d MiB: not a run.json bringup wrote", maxRunJSON>>20)
		return nil, in
	}
	var rf RunFacts
	if err := json.Unmarshal(data, &rf); err != nil {
		in.Error = "not a run record: " + err.Error()
		return nil, in
	}
	if rf.Schema != "bringup.run/v1" {
		in.Error = fmt.Sprintf("schema %q, want bringup.run/v1", rf.Schema)
		return nil, in
	}
	in.Records = 1
	return &rf, in
}

// applyRun takes a run directory's facts into d: the record as an input
// and a fact, and what the boot printed after watch's or the user's stop
// left out of the findings, as watch does.
func applyRun(d *Diagnosis, dir string, rf *RunFacts, in *Input, set *rules.Set) {
	if in == nil {
		return
	}
	d.Inputs = append(d.Inputs, *in)
	if rf == nil {
		return
	}
	if st := rf.Stop; st != nil {
		logs := map[string]bool{filepath.Join(dir, "output.log"): true}
		byItself := rf.Outcome == "failed" || rf.Outcome == "exited"
		if rf.AfterStop = DropAfterStop(d, logs, st.Line, byItself); len(rf.AfterStop) > 0 {
			Conclude(d)
		}
	}
	runLengths(d, dir, rf)
	if d.Facts == nil {
		d.Facts = map[string]any{}
	}
	d.Facts[in.Path] = rf
}
