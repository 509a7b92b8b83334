package probe

import (
	"bytes"
	"strings"
	"testing"
)

// TestRunExitStatus: Run gives the boot's own exit status, 128+N for a
// boot killed by signal N, the probe's environment to the boot, and an
// error for a boot that cannot start.
func TestRunExitStatus(t *testing.T) {
	spec, err := ParseSpec("any")
	if err != nil {
		t.Fatal(err)
	}
	dep, err := Inject(t.TempDir(), spec, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		script string
		code   int
	}{
		{"exit 0", 0},
		{"exit 3", 3},
		{"kill -KILL $$", 128 + 9},
	} {
		code, sc, err := dep.Run([]string{"/bin/sh", "-c", c.script}, strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{})
		if err != nil || code != c.code || sc == nil {
			t.Errorf("%q: code %d, scanner %v, err %v; want %d", c.script, code, sc != nil, err, c.code)
		}
	}
	var out bytes.Buffer
	if _, _, err := dep.Run([]string{"/bin/sh", "-c", `printf %s "$PYTHONPATH"`}, nil, &out, &out); err != nil || !strings.HasPrefix(out.String(), dep.Site) {
		t.Errorf("boot's PYTHONPATH %q (err %v): want %s first", out.String(), err, dep.Site)
	}
	if _, _, err := dep.Run([]string{t.TempDir() + "/no-such-boot"}, nil, nil, nil); err == nil {
		t.Error("a boot that cannot start: no error")
	}
	if _, _, err := dep.Run(nil, nil, nil, nil); err == nil {
		t.Error("no command: no error")
	}
}
