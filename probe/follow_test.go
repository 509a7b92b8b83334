package probe

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// A raise made while Dynamo traces, in library code, is followed: one
// the library catches itself never reaches other code and is no evidence
// (left out of Distinct and Findings); one that propagates into a user
// frame says so and stays; one raised in user code is not followed.
// Python 3.12+ (recorded where raised); torch is the stand-in next to the
// script.
func TestFollowTraceTimeRaise(t *testing.T) {
	for _, py := range pythons(t) {
		if !py.raise {
			continue
		}
		t.Run(py.minor, func(t *testing.T) {
			b, reports, _ := probed(t, "KeyError", Options{}, cleanEnv(), py.path, testdata(t, filepath.Join("follow", "follow.py")))
			if b.code != 0 || !bytes.Equal(b.stdout, []byte("done\n")) {
				t.Fatalf("exit %d\n%s%s", b.code, b.stdout, b.stderr)
			}
			byMsg := map[string]Record{}
			for _, r := range records(reports) {
				byMsg[r.Message] = r
			}
			lib, user, own := byMsg["'lib_caught'"], byMsg["'user_reached'"], byMsg["'user_raised'"]
			for name, r := range map[string]Record{"lib_caught": lib, "user_reached": user, "user_raised": own} {
				if r.Phase != "trace" || r.SeenAt != "raise" {
					t.Fatalf("%s: phase %q seen at %q; records %+v", name, r.Phase, r.SeenAt, byMsg)
				}
			}
			if !lib.Followed || lib.Reached != nil || lib.HandledIn == nil || lib.HandledIn.Function != "get_or_none" || !lib.CaughtInLibrary() {
				t.Errorf("caught in the library: followed %v reached %+v handled in %+v", lib.Followed, lib.Reached, lib.HandledIn)
			}
			if !user.Followed || user.Reached == nil || user.Reached.Function != "reaches_user" || filepath.Base(user.Reached.File) != "follow.py" || user.CaughtInLibrary() {
				t.Errorf("reaching user code: followed %v reached %+v", user.Followed, user.Reached)
			}
			if own.Followed || own.CaughtInLibrary() {
				t.Errorf("raised in user code was followed: %+v", own)
			}
			if n := CaughtInLibrary(reports); n != 1 {
				t.Errorf("CaughtInLibrary %d, want 1", n)
			}
			var msgs []string
			for _, g := range Distinct(reports) {
				msgs = append(msgs, g.Record.Message)
			}
			if strings.Join(msgs, " ") != "'user_reached' 'user_raised'" {
				t.Errorf("distinct exceptions %v, want the two that reached user code", msgs)
			}
			for _, f := range Findings(reports) {
				if strings.Contains(f.Root, "lib_caught") || strings.Contains(f.Cause, "lib_caught") {
					t.Errorf("a finding for the raise caught in the library: %+v", f)
				}
				if strings.Contains(f.Root, "user_reached") && !strings.Contains(Explain(user).Seen, "propagated into ") {
					t.Errorf("seen %q does not say where it propagated", Explain(user).Seen)
				}
			}
		})
	}
}
