// Package probe owns bringup's in-process probe: the sitecustomize.py that
// bringup injects into a boot (embedded here, so the product stays one Go
// binary), the spec that selects exceptions, the reports each Python process
// writes (schema bringup.probe/v1), and what they say in words.
//
// Deployment: Inject writes the loader sitecustomize.py into
// <run dir>/probe/site and the probe into <run dir>/probe/code, and returns
// the environment that puts the loader first on PYTHONPATH and tells it the
// spec, caps and output directory (BRINGUP_PROBE). Every Python process of
// the boot that honours PYTHONPATH loads it, fork, spawn and forkserver
// children included; it chains to a sitecustomize it shadows. Each process
// writes loaded-<pid>-<stamp>.json when it loads and
// probe-<pid>-<stamp>.json when it has something to say, into
// <run dir>/probe. ReadDir reads them back, Explain and Findings say what
// they mean, and Scan names the Python processes that did not load it.
package probe

import (
	_ "embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The probe in two files: the loader site imports, and the probe it loads
// from marshalled code cached per Python version (so the probe is compiled
// once per boot, not once per process).
var (
	//go:embed py/sitecustomize.py
	loaderSource []byte
	//go:embed py/bringup_probe.py
	probeSource []byte
)

// EnvVar carries the probe's configuration into the boot.
const EnvVar = "BRINGUP_PROBE"

// Caps bound what the probe does in a process. Zero fields take the
// defaults of DefaultCaps.
type Caps struct {
	Records  int // records per capture path (at raise; where reported)
	Frames   int // frames kept per stack (innermost 3/4, outermost 1/4)
	EventMS  int // time per recorded event, then the stack is cut
	TotalMS  int // time the raise path may spend in a process, then it stops
	Bytes    int // size of one report file
	Items    int // children, parameters, keys, argv entries kept per list
	StrBytes int // characters kept per string
}

// DefaultCaps are the caps docs/probe.md states.
var DefaultCaps = Caps{Records: 16, Frames: 64, EventMS: 50, TotalMS: 2000, Bytes: 256 << 10, Items: 32, StrBytes: 500}

// DefaultKnobs are the environment variables each report carries: the
// engines' and PyTorch's knobs and the ones that say which rank a process
// is. A name ending in * is a prefix.
var DefaultKnobs = []string{
	"VLLM_*", "SGLANG_*", "ATOM_*", "TORCH*", "TORCHDYNAMO_*", "TORCHINDUCTOR_*", "PYTORCH_*",
	"CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "NCCL_*", "RCCL_*",
	"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "PYTHONPATH", "R4D_*",
}

// Redacted: a knob whose name holds one of these is recorded as
// "<redacted>" (VLLM_API_KEY, HF_TOKEN through a prefix).
var Redacted = []string{"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH"}

// Options are what Inject needs besides the spec.
type Options struct {
	Caps  Caps
	Knobs []string // nil: DefaultKnobs; names given here are added to them
}

// Deployment is a probe written into a run directory.
type Deployment struct {
	Dir    string // <run dir>/probe: where the processes write
	Site   string // Dir/site: the directory put first on PYTHONPATH
	Code   string // Dir/code: the probe and its compiled code per Python version
	Spec   Spec
	config string
}

// SubDir is the probe's directory inside a run directory.
const SubDir = "probe"

const probeFile = "bringup_probe.py"

// Inject writes sitecustomize.py into runDir/probe/site (creating runDir
// if needed, and both directories below it, neither of which may be a
// symbolic link; the file is written to a temporary name and renamed, never
// through a link) and returns the deployment whose Env puts it into a boot.
// The site directory may hold nothing else: every module in it would shadow
// one of the boot's.
func Inject(runDir string, spec Spec, opt Options) (Deployment, error) {
	if len(spec.Selectors) == 0 {
		return Deployment{}, errors.New("probe: empty spec")
	}
	abs, err := filepath.Abs(runDir)
	if err != nil {
		return Deployment{}, err
	}
	dir := filepath.Join(abs, SubDir)
	site := filepath.Join(dir, "site")
	code := filepath.Join(dir, "code")
	if strings.ContainsAny(site, ":\n\x00") {
		return Deployment{}, fmt.Errorf("probe: run directory %q holds ':' or a newline, which PYTHONPATH cannot carry", abs)
	}
	if err := mkdirNoFollow(abs, false); err != nil {
		return Deployment{}, err
	}
	if err := mkdirNoFollow(dir, true); err != nil {
		return Deployment{}, err
	}
	for _, d := range []string{site, code} {
		if err := mkdirNoFollow(d, true); err != nil {
			return Deployment{}, err
		}
	}
	if err := writeFileNoFollow(code, probeFile, probeSource); err != nil {
		return Deployment{}, err
	}
	if err := writeFileNoFollow(site, "sitecustomize.py", loaderSource); err != nil {
		return Deployment{}, err
	}
	entries, err := os.ReadDir(site)
	if err != nil {
		return Deployment{}, fmt.Errorf("probe: %w", err)
	}
	for _, e := range entries {
		if n := e.Name(); n != "sitecustomize.py" && n != "__pycache__" {
			return Deployment{}, fmt.Errorf("probe: %s holds %s: everything there is importable by the boot; give a fresh run directory", site, n)
		}
	}
	d := Deployment{Dir: dir, Site: site, Code: code, Spec: spec}
	d.config = config(dir, spec, opt)
	return d, nil
}

// config is the BRINGUP_PROBE value: key=value lines (the spec already
// split into selectors, so Python parses no grammar of its own).
func config(dir string, spec Spec, opt Options) string {
	c := opt.Caps
	def := DefaultCaps
	pick := func(v, d int) int {
		if v > 0 {
			return v
		}
		return d
	}
	var b strings.Builder
	line := func(k, v string) { b.WriteString(k + "=" + v + "\n") }
	line("v", "1")
	line("out", dir)
	line("code", filepath.Join(dir, "code", probeFile))
	line("spec", spec.String())
	for _, s := range spec.Selectors {
		line("sel", s.String())
	}
	line("max_records", strconv.Itoa(pick(c.Records, def.Records)))
	line("max_frames", strconv.Itoa(pick(c.Frames, def.Frames)))
	line("max_event_ms", strconv.Itoa(pick(c.EventMS, def.EventMS)))
	line("max_total_ms", strconv.Itoa(pick(c.TotalMS, def.TotalMS)))
	line("max_bytes", strconv.Itoa(pick(c.Bytes, def.Bytes)))
	line("max_items", strconv.Itoa(pick(c.Items, def.Items)))
	line("max_str", strconv.Itoa(pick(c.StrBytes, def.StrBytes)))
	seen := map[string]bool{}
	for _, k := range append(append([]string(nil), DefaultKnobs...), opt.Knobs...) {
		if k != "" && !seen[k] && !strings.ContainsAny(k, "\n=") {
			seen[k] = true
			line("knob", k)
		}
	}
	for _, r := range Redacted {
		line("redact", r)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// Env is the environment change that puts the probe into a boot whose
// PYTHONPATH is currently pythonPath ("" for none): the site directory
// first (no empty entry, which would add the working directory), and the
// configuration.
func (d Deployment) Env(pythonPath string) []string {
	pp := d.Site
	if pythonPath != "" {
		pp += string(os.PathListSeparator) + pythonPath
	}
	return []string{"PYTHONPATH=" + pp, EnvVar + "=" + d.config}
}

// Environ is base (an os.Environ-style list) with Env applied: PYTHONPATH
// and BRINGUP_PROBE replaced, everything else kept in order.
func (d Deployment) Environ(base []string) []string {
	pythonPath := ""
	out := make([]string, 0, len(base)+2)
	for _, kv := range base {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "PYTHONPATH":
			pythonPath = v
		case EnvVar:
		default:
			out = append(out, kv)
		}
	}
	return append(out, d.Env(pythonPath)...)
}

// mkdirNoFollow creates dir (its parent must exist) or accepts an existing
// directory; a symbolic link there is refused. With own false (the run
// directory the caller named) parents are created and a link is followed.
func mkdirNoFollow(dir string, own bool) error {
	stat := os.Stat
	if own {
		stat = os.Lstat
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("probe: %w", err)
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	fi, err := stat(dir)
	if err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		return fmt.Errorf("probe: %s is a symbolic link; not writing through it", dir)
	}
	if !fi.IsDir() {
		return fmt.Errorf("probe: %s is not a directory", dir)
	}
	return nil
}

// writeFileNoFollow writes dir/name atomically relative to dir opened
// without following a link: a temporary file created exclusively, then
// renamed over name.
func writeFileNoFollow(dir, name string, data []byte) error {
	dfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("probe: open %s: %w", dir, err)
	}
	defer unix.Close(dfd)
	tmp := fmt.Sprintf(".%s.%d.tmp", name, os.Getpid())
	flags := unix.O_WRONLY | unix.O_CREAT | unix.O_EXCL | unix.O_NOFOLLOW | unix.O_CLOEXEC
	fd, err := unix.Openat(dfd, tmp, flags, 0o644)
	if errors.Is(err, unix.EEXIST) {
		_ = unix.Unlinkat(dfd, tmp, 0)
		fd, err = unix.Openat(dfd, tmp, flags, 0o644)
	}
	if err != nil {
		return fmt.Errorf("probe: create %s/%s: %w", dir, tmp, err)
	}
	f := os.NewFile(uintptr(fd), filepath.Join(dir, tmp))
	_, werr := f.Write(data)
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		_ = unix.Unlinkat(dfd, tmp, 0)
		return fmt.Errorf("probe: write %s: %w", filepath.Join(dir, name), err)
	}
	if err := unix.Renameat(dfd, tmp, dfd, name); err != nil {
		_ = unix.Unlinkat(dfd, tmp, 0)
		return fmt.Errorf("probe: rename into %s: %w", filepath.Join(dir, name), err)
	}
	return nil
}
