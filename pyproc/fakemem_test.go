package pyproc

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"

	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/testsupport/pyenv"
)

// regionMemory is recorded or synthetic memory: a set of byte regions.
// A read must fall inside one region, like a read of mapped pages.
type regionMemory struct {
	regions []region // sorted by addr
}

type region struct {
	Addr uint64 `json:"addr"`
	Data []byte `json:"-"`
	Hex  string `json:"hex"`
}

func (m *regionMemory) Read(addr uint64, p []byte) error {
	i := sort.Search(len(m.regions), func(i int) bool { return m.regions[i].Addr > addr }) - 1
	if i < 0 {
		return badRead("address %#x not recorded", addr)
	}
	r := m.regions[i]
	off := addr - r.Addr
	if off > uint64(len(r.Data)) || uint64(len(p)) > uint64(len(r.Data))-off {
		return badRead("address %#x (+%d) not recorded", addr, len(p))
	}
	copy(p, r.Data[off:])
	return nil
}

// recordingMemory remembers every read a live capture makes, so the same
// walk can be replayed later without the process.
type recordingMemory struct {
	Memory
	mu    sync.Mutex
	reads map[uint64][]byte
}

func (m *recordingMemory) Read(addr uint64, p []byte) error {
	if err := m.Memory.Read(addr, p); err != nil {
		return err
	}
	m.mu.Lock()
	if old := m.reads[addr]; len(old) < len(p) {
		m.reads[addr] = append([]byte(nil), p...)
	}
	m.mu.Unlock()
	return nil
}

// regions merges the recorded reads into non-overlapping regions.
func (m *recordingMemory) regions() []region {
	var addrs []uint64
	for a := range m.reads {
		addrs = append(addrs, a)
	}
	sort.Slice(addrs, func(i, j int) bool { return addrs[i] < addrs[j] })
	var out []region
	for _, a := range addrs {
		d := m.reads[a]
		if n := len(out); n > 0 && a <= out[n-1].Addr+uint64(len(out[n-1].Data)) {
			last := &out[n-1]
			end := a + uint64(len(d))
			if cur := last.Addr + uint64(len(last.Data)); end > cur {
				last.Data = append(last.Data, d[cur-a:]...)
			}
			continue
		}
		out = append(out, region{Addr: a, Data: append([]byte(nil), d...)})
	}
	return out
}

// snapshot is a recorded capture: the anchors, the memory read, and what the
// walk produced from it live.
type snapshot struct {
	Minor    string       `json:"minor"`
	Python   string       `json:"python"`
	Runtime  uint64       `json:"runtime"`
	CodeType uint64       `json:"code_type"`
	StrType  uint64       `json:"str_type"`
	Regions  []region     `json:"regions"`
	Threads  []rawThread  `json:"-"`
	Want     []snapThread `json:"threads"`
}

type snapThread struct {
	Ident  uint64      `json:"ident"`
	Native int         `json:"native"`
	Name   string      `json:"name,omitempty"`
	Frames []snapFrame `json:"frames"`
}

type snapFrame struct {
	Func string `json:"func"`
	File string `json:"file"`
	Line int    `json:"line"`
}

var updateSnapshots = flag.Bool("update-snapshots", false, "re-record testdata/snapshots from live pyenv CPythons")

func loadSnapshot(tb testing.TB, path string) (*snapshot, *regionMemory) {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	var s snapshot
	if err := json.Unmarshal(data, &s); err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	mem := &regionMemory{}
	for _, r := range s.Regions {
		b, err := hex.DecodeString(r.Hex)
		if err != nil {
			tb.Fatalf("%s: %v", path, err)
		}
		mem.regions = append(mem.regions, region{Addr: r.Addr, Data: b})
	}
	return &s, mem
}

// replay walks recorded memory with the generated layout for its version.
func replay(s *snapshot, mem Memory) ([]rawThread, error) {
	lay, err := layoutFor(s.Minor)
	if err != nil {
		return nil, err
	}
	if lay.Debug != nil {
		raw := make([]byte, lay.Debug.Size)
		if err := mem.Read(s.Runtime, raw); err != nil {
			return nil, err
		}
		if err := lay.applyDebugOffsets(raw, 0); err != nil {
			return nil, err
		}
	}
	return newTarget(mem, lay, s.Runtime, s.CodeType, s.StrType).walk()
}

// TestSnapshotReplay runs the walker on memory recorded from real processes
// (testdata/snapshots), so the reader is exercised on every supported
// version even where those CPythons are not installed.
func TestSnapshotReplay(t *testing.T) {
	if *updateSnapshots {
		recordSnapshots(t)
	}
	files, _ := filepath.Glob(filepath.Join("testdata", "snapshots", "*.json"))
	if len(files) == 0 {
		t.Fatal("no testdata/snapshots/*.json (record them with -update-snapshots)")
	}
	for _, f := range files {
		s, mem := loadSnapshot(t, f)
		got, err := replay(s, mem)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if len(got) != len(s.Want) {
			t.Errorf("%s: %d threads, recorded %d", f, len(got), len(s.Want))
			continue
		}
		frames := 0
		for i, w := range s.Want {
			g := got[i]
			if g.ident != w.Ident || g.native != w.Native || g.name != w.Name || len(g.frames) != len(w.Frames) {
				t.Errorf("%s thread %d: got ident %#x native %d name %q %d frames, want %#x %d %q %d", f, i, g.ident, g.native, g.name, len(g.frames), w.Ident, w.Native, w.Name, len(w.Frames))
				continue
			}
			for j, wf := range w.Frames {
				gf := g.frames[j]
				if gf.Func != wf.Func || gf.File != wf.File || gf.Line != wf.Line {
					t.Errorf("%s thread %d frame %d: got %v, want %+v", f, i, j, gf, wf)
				}
				frames++
			}
		}
		if frames < 20 {
			t.Errorf("%s: only %d frames", f, frames)
		}
	}
}

// recordSnapshots captures target.py under each installed CPython through a
// recording memory and writes the snapshots.
func recordSnapshots(t *testing.T) {
	for _, minor := range testedMinors {
		py := pyenv.Python(minor)
		if py == "" {
			t.Logf("CPython %s not installed; its snapshot is not re-recorded", minor)
			continue
		}
		cmd, _ := startTargetAt(t, py, snapshotScript(t))
		pid := cmd.Process.Pid
		rec := &recordingMemory{Memory: ProcessMemory{PID: pid}, reads: map[uint64][]byte{}}
		mapsData, err := os.ReadFile("/proc/" + itoa(pid) + "/maps")
		if err != nil {
			t.Fatal(err)
		}
		exe, _ := os.Readlink("/proc/" + itoa(pid) + "/exe")
		tg, version, err := locate(pid, parseMaps(mapsData), exe, rec)
		if err != nil {
			t.Fatal(err)
		}
		threads, err := tg.walk()
		if err != nil {
			t.Fatal(err)
		}
		s := snapshot{Minor: minor, Python: version, Runtime: tg.runtime, CodeType: tg.codeType, StrType: tg.strType}
		for _, r := range rec.regions() {
			s.Regions = append(s.Regions, region{Addr: r.Addr, Hex: hex.EncodeToString(scrub(r.Data))})
		}
		for _, th := range threads {
			st := snapThread{Ident: th.ident, Native: th.native, Name: th.name}
			for _, f := range th.frames {
				st.Frames = append(st.Frames, snapFrame{f.Func, string(scrub([]byte(f.File))), f.Line})
			}
			s.Want = append(s.Want, st)
		}
		data, _ := json.MarshalIndent(s, "", " ")
		os.MkdirAll(filepath.Join("testdata", "snapshots"), 0o755)
		if err := os.WriteFile(filepath.Join("testdata", "snapshots", minor+".json"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		cmd.Process.Kill()
	}
}

// FuzzWalk feeds random memory to the walker under every generated layout:
// whatever the bytes, it must return (threads or an error), never panic or
// run away.
func FuzzWalk(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "snapshots", "*.json"))
	for _, path := range files {
		s, mem := loadSnapshot(f, path)
		// Seed with the recorded region that holds the runtime anchor.
		for _, r := range mem.regions {
			if s.Runtime >= r.Addr && s.Runtime < r.Addr+uint64(len(r.Data)) {
				d := r.Data
				if len(d) > 4096 {
					d = d[:4096]
				}
				f.Add(d, uint8(0))
			}
		}
	}
	f.Add(make([]byte, 64), uint8(1))
	var minors []string
	for m := range generatedLayouts {
		minors = append(minors, m)
	}
	sort.Strings(minors)
	f.Fuzz(func(t *testing.T, data []byte, pick uint8) {
		const base = 0x10000
		mem := &regionMemory{regions: []region{{Addr: base, Data: data}}}
		lay, _ := layoutFor(minors[int(pick)%len(minors)])
		if lay.Debug != nil {
			raw := make([]byte, lay.Debug.Size)
			if mem.Read(base, raw) == nil {
				if lay.applyDebugOffsets(raw, 0) != nil {
					return
				}
			} else {
				return
			}
		}
		threads, err := newTarget(mem, lay, base, base+8, 0).walk()
		var bad *badReadError
		if err != nil && !errors.As(err, &bad) && err != errNoInterpreter {
			t.Fatalf("unexpected error kind: %v", err)
		}
		_ = threads
	})
}

// snapshotScript copies target.py to a fixed path so recorded file names do
// not depend on where the repository is checked out.
func snapshotScript(t *testing.T) string {
	dir := filepath.Join(os.TempDir(), "pyproc-snapshot")
	os.MkdirAll(dir, 0o755)
	t.Cleanup(func() { os.RemoveAll(dir) })
	// target.py and the self-view module it imports.
	for _, name := range []string{"target.py", "selfview.py"} {
		src, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), src, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "target.py")
}

// scrub replaces the recording machine's home directory in recorded bytes
// with one of the same length (so string objects keep their layout).
func scrub(b []byte) []byte {
	return bytes.ReplaceAll(b, []byte("/root/"), []byte("/home/"))
}

// FuzzWalkCorrupted corrupts memory recorded from real processes (each
// 8-byte chunk of the input XORed into the recorded bytes at a position it
// names), the way a torn read or a wrong layout would: the walker must
// report an error or a stack, never panic.
func FuzzWalkCorrupted(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "snapshots", "*.json"))
	type loaded struct {
		s   *snapshot
		mem *regionMemory
	}
	var snaps []loaded
	for _, path := range files {
		s, mem := loadSnapshot(f, path)
		snaps = append(snaps, loaded{s, mem})
	}
	if len(snaps) == 0 {
		f.Skip("no snapshots")
	}
	f.Add(uint8(0), []byte{})
	f.Add(uint8(1), []byte{0, 0, 1, 0, 0, 0, 0, 0xff})
	f.Add(uint8(2), []byte{7, 3, 0, 0, 0, 0, 0x10, 0})
	f.Fuzz(func(t *testing.T, pick uint8, patch []byte) {
		l := snaps[int(pick)%len(snaps)]
		// Copy the regions so patches do not leak between runs.
		mem := &regionMemory{}
		total := 0
		for _, r := range l.mem.regions {
			mem.regions = append(mem.regions, region{Addr: r.Addr, Data: append([]byte(nil), r.Data...)})
			total += len(r.Data)
		}
		for i := 0; i+8 <= len(patch) && total > 0; i += 8 {
			pos := int(uint32(patch[i])|uint32(patch[i+1])<<8|uint32(patch[i+2])<<16) % total
			for _, r := range mem.regions {
				if pos < len(r.Data) {
					for k := 0; k < 5 && pos+k < len(r.Data); k++ {
						r.Data[pos+k] ^= patch[i+3+k]
					}
					break
				}
				pos -= len(r.Data)
			}
		}
		_, err := replay(l.s, mem)
		var bad *badReadError
		var uns *unsupportedError
		if err != nil && !errors.As(err, &bad) && !errors.As(err, &uns) && err != errNoInterpreter {
			t.Fatalf("unexpected error kind: %v", err)
		}
	})
}

// flipMemory serves recorded memory, except that the word at addr reads
// alternately as a and b: a thread whose innermost frame keeps returning
// and being called again.
type flipMemory struct {
	Memory
	addr, a, b uint64
	n          int
}

func (m *flipMemory) Read(addr uint64, p []byte) error {
	if err := m.Memory.Read(addr, p); err != nil {
		return err
	}
	if addr <= m.addr && m.addr+8 <= addr+uint64(len(p)) {
		v := m.a
		if m.n%2 == 1 {
			v = m.b
		}
		m.n++
		binary.LittleEndian.PutUint64(p[m.addr-addr:], v)
	}
	return nil
}

// TestPartialThread: a chain that differs on every read is reported as
// Partial with only the outer frames both reads agree on.
func TestPartialThread(t *testing.T) {
	s, mem := loadSnapshot(t, filepath.Join("testdata", "snapshots", "3.12.json"))
	lay, _ := layoutFor("3.12")
	r := reader{mem}
	interp, _ := r.u64(s.Runtime + uint64(lay.RuntimeInterpretersHead))
	ts, _ := r.u64(interp + uint64(lay.InterpThreadsHead))
	cframe, _ := r.u64(ts + uint64(lay.TstateCFrame))
	slot := cframe + uint64(lay.CFrameCurrentFrame)
	inner, err := r.u64(slot)
	if err != nil || inner == 0 {
		t.Fatalf("no current frame in the snapshot: %v", err)
	}
	outer, _ := r.u64(inner + uint64(lay.FramePrevious))
	fm := &flipMemory{Memory: mem, addr: slot, a: inner, b: outer}
	threads, err := newTarget(fm, lay, s.Runtime, s.CodeType, s.StrType).walk()
	if err != nil {
		t.Fatal(err)
	}
	th := threads[0]
	want := s.Want[0].Frames
	if !th.partial {
		t.Fatal("a chain that changes on every read is not marked partial")
	}
	if len(th.frames) != len(want)-1 {
		t.Fatalf("partial thread kept %d frames, want the %d stable outer ones", len(th.frames), len(want)-1)
	}
	for i, f := range th.frames {
		w := want[i+1]
		if f.Func != w.Func || f.Line != w.Line {
			t.Errorf("frame %d: %v, want %+v", i, f, w)
		}
	}
	// The other threads were read whole.
	for _, o := range threads[1:] {
		if o.partial {
			t.Errorf("thread %#x marked partial", o.ident)
		}
	}
}

// patchMemory serves recorded memory with the bytes at some addresses
// replaced on every read: a thread caught in one instant that lasts.
type patchMemory struct {
	Memory
	bytes map[uint64]byte
}

func (m *patchMemory) Read(addr uint64, p []byte) error {
	if err := m.Memory.Read(addr, p); err != nil {
		return err
	}
	for a, b := range m.bytes {
		if a >= addr && a-addr < uint64(len(p)) {
			p[a-addr] = b
		}
	}
	return nil
}

// innermost310 is, in the recorded 3.10 snapshot, the first listed
// thread's f_state address of its innermost frame, and the slot that
// holds that frame (tstate->frame).
func innermost310(t *testing.T) (s *snapshot, mem *regionMemory, lay *Layout, slot, frame uint64) {
	t.Helper()
	s, mem = loadSnapshot(t, filepath.Join("testdata", "snapshots", "3.10.json"))
	lay, err := layoutFor("3.10")
	if err != nil {
		t.Fatal(err)
	}
	r := reader{mem}
	interp, _ := r.u64(s.Runtime + uint64(lay.RuntimeInterpretersHead))
	ts, _ := r.u64(interp + uint64(lay.InterpThreadsHead))
	slot = ts + uint64(lay.TstateFrame)
	if frame, err = r.u64(slot); err != nil || frame == 0 {
		t.Fatalf("no current frame in the 3.10 snapshot: %v", err)
	}
	return s, mem, lay, slot, frame
}

// checkFrames compares a walked stack with the recorded one.
func checkFrames(t *testing.T, got record.Stack, want []snapFrame) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d frames, want %d:\n%s", len(got), len(want), fmtStack(got))
	}
	for i, f := range got {
		if f.Func != want[i].Func || f.Line != want[i].Line {
			t.Errorf("frame %d: %v, want %+v", i, f, want[i])
		}
	}
}

// TestThreadBetweenFrames310: on 3.10 a thread that has just returned
// from (or raised out of, or yielded from) its innermost frame, or is
// entering one, still has that frame linked as tstate->frame for a few
// instructions, in a state other than executing. A target descheduled
// there (as under load) reads the same on every try; its chain is the
// caller's, read whole and settled, never an empty partial thread. A
// frame unwinding to find a handler is still running and is kept.
func TestThreadBetweenFrames310(t *testing.T) {
	s, mem, lay, _, frame := innermost310(t)
	want := s.Want[0].Frames
	for _, c := range []struct {
		name  string
		state int64
		keep  bool // the innermost frame is still the thread's
	}{
		{"created", lay.FrameCreated, false},
		{"suspended", lay.FrameSuspended, false},
		{"returned", lay.FrameReturned, false},
		{"raised", lay.FrameRaised, false},
		{"unwinding", lay.FrameUnwinding, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			pm := &patchMemory{Memory: mem, bytes: map[uint64]byte{frame + uint64(lay.FrameState): byte(int8(c.state))}}
			threads, err := newTarget(pm, lay, s.Runtime, s.CodeType, s.StrType).walk()
			if err != nil {
				t.Fatal(err)
			}
			th := threads[0]
			if th.partial || th.err != nil || th.tries != 1 {
				t.Fatalf("thread paused with its innermost frame %s: partial %v after %d tries (%v), %d frames", c.name, th.partial, th.tries, th.err, len(th.frames))
			}
			w := want[1:]
			if c.keep {
				w = want
			}
			checkFrames(t, th.frames, w)
		})
	}
	// A frame further out that is not executing is a stale link (the chain
	// passes through a returned frame object): never taken.
	r := reader{mem}
	outer, _ := r.u64(frame + uint64(lay.FramePrevious))
	pm := &patchMemory{Memory: mem, bytes: map[uint64]byte{outer + uint64(lay.FrameState): byte(int8(lay.FrameReturned))}}
	threads, err := newTarget(pm, lay, s.Runtime, s.CodeType, s.StrType).walk()
	if err != nil {
		t.Fatal(err)
	}
	if th := threads[0]; th.err == nil || len(th.frames) != 0 {
		t.Fatalf("a chain through a returned outer frame was taken: err %v, %d frames", th.err, len(th.frames))
	}
}

// TestPartialThread310: on 3.10 a chain that differs on every read (the
// thread returns from and calls its innermost frame between any two
// reads) keeps the outer frames every read agrees on, marked partial.
func TestPartialThread310(t *testing.T) {
	s, mem, lay, slot, inner := innermost310(t)
	outer, _ := reader{mem}.u64(inner + uint64(lay.FramePrevious))
	fm := &flipMemory{Memory: mem, addr: slot, a: inner, b: outer}
	threads, err := newTarget(fm, lay, s.Runtime, s.CodeType, s.StrType).walk()
	if err != nil {
		t.Fatal(err)
	}
	th := threads[0]
	if !th.partial || th.tries < threadAttempts {
		t.Fatalf("a chain that changes on every read: partial %v after %d tries", th.partial, th.tries)
	}
	checkFrames(t, th.frames, s.Want[0].Frames[1:])
}
