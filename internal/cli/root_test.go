package cli

import (
	"bytes"
	"strings"
	"testing"
)

func TestVersionAndUnknownCommand(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Main([]string{"--version"}, &out, &errb); code != ExitOK {
		t.Fatalf("--version exit %d, stderr %q", code, errb.String())
	}
	if !strings.Contains(out.String(), Version) {
		t.Errorf("--version printed %q, want it to contain %q", out.String(), Version)
	}
	out.Reset()
	errb.Reset()
	if code := Main([]string{"no-such-command"}, &out, &errb); code != ExitUsage {
		t.Fatalf("unknown command exit %d, want %d", code, ExitUsage)
	}
	if !strings.Contains(errb.String(), "no-such-command") {
		t.Errorf("stderr %q does not name the bad command", errb.String())
	}
}
