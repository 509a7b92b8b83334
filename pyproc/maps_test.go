package pyproc

import (
	"os"
	"testing"
)

func TestParseMaps(t *testing.T) {
	data := []byte("55d0c0a00000-55d0c0a01000 r--p 00000000 08:01 1234 /usr/bin/python3.12\n" +
		"7f00aa000000-7f00aa100000 r-xp 00100000 08:01 99 /opt/my lib/libpython3.12.so.1.0\n" +
		"7ffd1000-7ffd2000 rw-p 00000000 00:00 0 [stack]\n" +
		"garbage line\n" +
		"7f00-7e00 r--p 0 0 0 /bad/end-before-start\n")
	m := parseMaps(data)
	if len(m) != 3 {
		t.Fatalf("parsed %d mappings, want 3: %+v", len(m), m)
	}
	if m[0].Start != 0x55d0c0a00000 || m[0].Path != "/usr/bin/python3.12" || m[0].Offset != 0 {
		t.Errorf("first mapping %+v", m[0])
	}
	if m[1].Path != "/opt/my lib/libpython3.12.so.1.0" || m[1].Offset != 0x100000 || m[1].Perms != "r-xp" {
		t.Errorf("path with a space: %+v", m[1])
	}
	if b, ok := bias(m, "/usr/bin/python3.12", 0); !ok || b != 0x55d0c0a00000 {
		t.Errorf("bias = %#x %v", b, ok)
	}
	if _, ok := bias(m, "/opt/my lib/libpython3.12.so.1.0", 0); ok {
		t.Error("bias from a mapping at a non-zero file offset")
	}
	// Our own maps parse and include our executable.
	self, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skip(err)
	}
	exe, _ := os.Readlink("/proc/self/exe")
	found := false
	for _, mm := range parseMaps(self) {
		found = found || mm.Path == exe
	}
	if !found {
		t.Errorf("own executable %s not among own mappings", exe)
	}
}

func TestStatPPID(t *testing.T) {
	for in, want := range map[string]int{
		"42 (python3) S 7 42 42 0":     7,
		"43 (my (odd) name) R 1 43 43": 1,
		"44 (x":                        -1,
		"45 (sh) S":                    -1,
	} {
		got, ok := statPPID([]byte(in))
		if (want < 0) == ok || (ok && got != want) {
			t.Errorf("statPPID(%q) = %d %v, want %d", in, got, ok, want)
		}
	}
}

func TestStatStart(t *testing.T) {
	line := "42 (py (x) y) S 7 42 42 0 -1 4194304 100 0 0 0 5 3 0 0 20 0 4 0 987654 1000 50"
	if got := statStart([]byte(line)); got != 987654 {
		t.Errorf("statStart = %d, want 987654", got)
	}
	if statStart([]byte("1 (x) S 0")) != 0 {
		t.Error("short stat must give 0")
	}
}

func FuzzParseMaps(f *testing.F) {
	if self, err := os.ReadFile("/proc/self/maps"); err == nil {
		f.Add(self)
	}
	f.Add([]byte("7f00aa000000-7f00aa100000 r-xp 00100000 08:01 99 /opt/x/libpython3.12.so.1.0\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, m := range parseMaps(data) {
			if m.End < m.Start {
				t.Fatalf("mapping ends before it starts: %+v", m)
			}
		}
		statPPID(data)
		statStart(data)
	})
}
