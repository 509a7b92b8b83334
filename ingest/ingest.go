// Package ingest holds what every input format shares: how many leading
// bytes a format's sniff is shown, and reading them. Which formats there are
// and which one an input is in is diagnose's list of input kinds.
package ingest

import (
	"io"
	"os"
)

// HeadSize is how many leading bytes a sniffer is shown.
const HeadSize = 64 << 10

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
