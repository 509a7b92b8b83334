package pyproc

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestPermission checks that a capture the kernel refuses says ErrPermission
// with the fix. As root it re-runs this test binary as user nobody against
// a root-owned Python; otherwise it tries pid 1.
func TestPermission(t *testing.T) {
	if os.Getuid() != 0 {
		if st, err := os.Stat("/proc/1"); err != nil || st.Sys().(*syscall.Stat_t).Uid == uint32(os.Getuid()) {
			t.Skip("not root and pid 1 is ours: nothing to be refused")
		}
		_, err := Capture(1)
		if !errors.Is(err, ErrPermission) {
			t.Fatalf("Capture(1) as uid %d: %v, want ErrPermission", os.Getuid(), err)
		}
		return
	}
	py := anyPython(t)
	cmd, _ := startTarget(t, py)
	// The test binary must be executable by nobody: copy it somewhere open.
	dir, err := os.MkdirTemp("", "pyproc-perm")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "pyproc.test")
	if err := copyFile(os.Args[0], bin); err != nil {
		t.Fatal(err)
	}
	helper := exec.Command(bin, "-test.run=^TestPermissionHelper$", "-test.v")
	helper.Dir = dir
	helper.Env = append(os.Environ(), "PYPROC_PERMISSION_PID="+strconv.Itoa(cmd.Process.Pid))
	helper.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := helper.CombinedOutput()
	if err != nil {
		t.Fatalf("helper as nobody failed: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "CAP_SYS_PTRACE") || !strings.Contains(string(out), "ptrace_scope") {
		t.Errorf("the error does not name the fixes:\n%s", out)
	}
	t.Logf("as nobody:\n%s", out)
}

// TestPermissionHelper runs only inside TestPermission's child process.
func TestPermissionHelper(t *testing.T) {
	pidStr := os.Getenv("PYPROC_PERMISSION_PID")
	if pidStr == "" {
		t.Skip("helper for TestPermission")
	}
	pid, _ := strconv.Atoi(pidStr)
	_, err := Capture(pid)
	if !errors.Is(err, ErrPermission) {
		t.Fatalf("Capture(%d) as uid %d: %v, want ErrPermission", pid, os.Getuid(), err)
	}
	fmt.Println("Capture:", err)
	// The memory reader itself, below /proc, reports the same.
	err = ProcessMemory{PID: pid}.Read(0x400000, make([]byte, 8))
	if !errors.Is(err, ErrPermission) {
		t.Fatalf("process_vm_readv as uid %d: %v, want ErrPermission", os.Getuid(), err)
	}
	fmt.Println("process_vm_readv:", err)
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
