// Package ingest knows which parser an input belongs to. Each format package
// (enginelog, pytrace, torchtrace, stackdump) registers a Format with a cheap
// sniff over the first bytes of an input; Detect picks the most confident.
// Adding a format is one file and one Register call.
package ingest

import (
	"io"
	"os"
	"sort"
	"sync"
)

// HeadSize is how many leading bytes a sniffer is shown.
const HeadSize = 64 << 10

// Format is one input format bringup can read.
type Format struct {
	Name string // "enginelog", "torchtrace", "stackdump", …
	// Sniff says how sure it is (0 = not mine, 100 = certainly mine) that an
	// input with this path and these first bytes is in this format.
	Sniff func(path string, head []byte) int
}

var (
	mu      sync.RWMutex
	formats []Format
)

// Register adds a format. Call it from the format package's init.
func Register(f Format) {
	mu.Lock()
	defer mu.Unlock()
	formats = append(formats, f)
	sort.SliceStable(formats, func(i, j int) bool { return formats[i].Name < formats[j].Name })
}

// Detect returns the name of the most confident format, or "" when none
// claims the input.
func Detect(path string, head []byte) string {
	mu.RLock()
	defer mu.RUnlock()
	best, bestScore := "", 0
	for _, f := range formats {
		if s := f.Sniff(path, head); s > bestScore {
			best, bestScore = f.Name, s
		}
	}
	return best
}

// Head reads up to HeadSize bytes from the start of a file.
func Head(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, HeadSize)
	n, err := io.ReadFull(f, buf)
	if err == io.ErrUnexpectedEOF || err == io.EOF {
		err = nil
	}
	return buf[:n], err
}
