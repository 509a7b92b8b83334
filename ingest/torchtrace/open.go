package torchtrace

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/bringup-tool/bringup/ingest"
	"github.com/bringup-tool/bringup/input"
)

// Gzip-compressed traces. A trace file may be gzipped (collected with
// gzip, or rotated); it is recognised by its first two bytes, whatever its
// name, and read through a decompressor. Payload references then hold
// offsets in the decompressed stream, like those into a plain file; to
// fetch one, the decompressed trace is copied once per process into a
// temporary file that is unlinked at once (so nothing is left behind, even
// when bringup is killed) and read from there: a report fetches thousands
// of payloads, and a gzip stream cannot seek.

// isGzip says whether b starts with the gzip magic.
func isGzip(b []byte) bool { return len(b) >= 2 && b[0] == 0x1f && b[1] == 0x8b }

// Gzipped says whether the file starts with the gzip magic.
func Gzipped(f io.ReaderAt) bool {
	var magic [2]byte
	n, _ := f.ReadAt(magic[:], 0)
	return n == 2 && isGzip(magic[:])
}

// Gunzip decompresses r (a gzipped trace, Gzipped) for NewScanner.
func Gunzip(r io.Reader) (io.Reader, error) {
	zr, err := gzip.NewReader(bufio.NewReaderSize(r, 64<<10))
	if err != nil {
		return nil, fmt.Errorf("gzip: %w", err)
	}
	return zr, nil
}

// Head reads up to ingest.HeadSize bytes from the start of a trace file,
// decompressed when it is gzipped; a path that is not a regular file is
// refused (input.Open).
func Head(path string) ([]byte, error) {
	f, err := input.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := io.Reader(f)
	if Gzipped(f) {
		if r, err = Gunzip(f); err != nil {
			return nil, err
		}
	}
	buf := make([]byte, ingest.HeadSize)
	n, err := io.ReadFull(r, buf)
	if err == io.ErrUnexpectedEOF || err == io.EOF {
		err = nil
	}
	return buf[:n], err
}

// spool is the decompressed copy of one gzipped trace.
type spool struct {
	once sync.Once
	key  fileKey
	f    *os.File
	err  error
}

// fileKey tells one version of a file from another: a trace rewritten in
// place (a test, a rerun) must not be read from an old copy.
type fileKey struct {
	dev, ino uint64
	size     int64
	mtime    time.Time
}

func keyOf(fi os.FileInfo) fileKey {
	k := fileKey{size: fi.Size(), mtime: fi.ModTime()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		k.dev, k.ino = uint64(st.Dev), st.Ino
	}
	return k
}

var spools = struct {
	sync.Mutex
	m map[string]*spool
}{m: map[string]*spool{}}

// refReader opens what payload references to path index: the file itself,
// or the decompressed copy of a gzipped one. done releases it.
func refReader(path string) (r io.ReaderAt, done func(), err error) {
	f, err := input.Open(path)
	if err != nil {
		return nil, nil, err
	}
	if !Gzipped(f) {
		return f, func() { f.Close() }, nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	key := keyOf(fi)
	spools.Lock()
	sp := spools.m[path]
	if sp == nil || sp.key != key {
		sp = &spool{key: key}
		spools.m[path] = sp
	}
	spools.Unlock()
	sp.once.Do(func() { sp.f, sp.err = decompress(f) })
	if sp.err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, sp.err)
	}
	return sp.f, func() {}, nil
}

// decompress copies a gzipped file, decompressed, into an unlinked
// temporary file.
func decompress(f *os.File) (*os.File, error) {
	zr, err := Gunzip(io.NewSectionReader(f, 0, 1<<62))
	if err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp("", "bringup-trace-*.log")
	if err != nil {
		return nil, fmt.Errorf("cannot make a temporary copy of the decompressed trace: %w", err)
	}
	os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, zr); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("decompressing into a temporary file: %w", err)
	}
	return tmp, nil
}
