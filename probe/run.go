package probe

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"
)

// Run runs the boot argv with the probe's environment (d.Environ of this
// process's) and the given stdio, following its process tree for Python
// processes (the Scanner returned, read after the boot ended, names them);
// it returns the boot's exit status (128+N for a signal N). SIGTERM and
// SIGHUP sent to this process are passed on; SIGINT and SIGQUIT from a
// terminal reach the boot itself. An error is a boot that could not be
// started or waited for.
func (d Deployment) Run(argv []string, stdin io.Reader, stdout, stderr io.Writer) (int, *Scanner, error) {
	if len(argv) == 0 {
		return 0, nil, errors.New("no command to run")
	}
	c := exec.Command(argv[0], argv[1:]...)
	c.Stdin, c.Stdout, c.Stderr = stdin, stdout, stderr
	c.Env = d.Environ(os.Environ())
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	if err := c.Start(); err != nil {
		return 0, nil, fmt.Errorf("cannot start %s: %v", argv[0], err)
	}
	scanner := NewScanner(c.Process.Pid)
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	scanner.Scan()
	for {
		select {
		case err := <-done:
			var ee *exec.ExitError
			if err != nil && !errors.As(err, &ee) {
				return 0, scanner, err
			}
			ws, _ := c.ProcessState.Sys().(syscall.WaitStatus)
			if ws.Signaled() {
				return 128 + int(ws.Signal()), scanner, nil
			}
			return c.ProcessState.ExitCode(), scanner, nil
		case s := <-sigs:
			if s == syscall.SIGTERM || s == syscall.SIGHUP {
				_ = c.Process.Signal(s)
			}
		case <-tick.C:
			scanner.Scan()
		}
	}
}
