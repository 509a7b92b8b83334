package watch

import (
	"context"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// gpuBusyPercent is the utilisation above which a silent boot is taken to
// be working (a long kernel, an autotune) rather than hung.
const gpuBusyPercent = 10

// gpuUtil asks whichever GPU tool is installed for the highest utilisation
// over all devices. ok is false when no tool is installed or none answered;
// silence alone then decides.
func gpuUtil(ctx context.Context) (percent int, tool string, ok bool) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	probes := []struct {
		tool string
		args []string
		re   *regexp.Regexp
	}{
		{"nvidia-smi", []string{"--query-gpu=utilization.gpu", "--format=csv,noheader,nounits"}, regexp.MustCompile(`(?m)^\s*(\d+)\s*$`)},
		{"rocm-smi", []string{"--showuse", "--csv"}, regexp.MustCompile(`(?m)^card\d+,(\d+)`)},
		{"amd-smi", []string{"metric", "--usage", "--json"}, regexp.MustCompile(`"gfx_activity"\s*:\s*(?:\{\s*"value"\s*:\s*)?(\d+)`)},
	}
	for _, p := range probes {
		path, err := exec.LookPath(p.tool)
		if err != nil {
			continue
		}
		out, err := exec.CommandContext(ctx, path, p.args...).Output()
		if err != nil {
			continue
		}
		found := false
		for _, m := range p.re.FindAllStringSubmatch(string(out), -1) {
			if v, err := strconv.Atoi(strings.TrimSpace(m[1])); err == nil {
				found = true
				percent = max(percent, v)
			}
		}
		if found {
			return percent, p.tool, true
		}
	}
	return 0, "", false
}
