package diagnose

import (
	"github.com/bringup-tool/bringup/ingest/pytrace"
	"github.com/bringup-tool/bringup/rules"
)

// printed adds to sub what PyTorch or the engine printed about the error
// next to it (see hints.go).
func printed(sub *rules.Subject, tb *pytrace.Traceback) {}
