package tracehtml

import (
	"bufio"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"

	"github.com/bringup-tool/bringup/analyze/compiles"
)

// Shared payloads. A trace repeats payloads: every rank logs the same
// graphs, guards and output code, a restarted process or a concatenated log
// logs them again. Writing each copy into each page made the report as big
// as the trace and its writing a third of the command's CPU. A payload
// that more than one artifact shows is written once, as
// payloads/<md5>.html (named by its MD5, which the trace announced and the
// parser checked), and every page that shows it embeds that page in an
// iframe (same-directory file://, allowed by the pages' frame-src 'self')
// and links it. A payload shown once stays inline as before.

// sharable says whether an artifact's payload can be shared: a real
// payload whose MD5 matched (so the MD5 names its content).
func sharable(a *compiles.Artifact) bool {
	return !a.Envelope && a.Length > 0 && a.MD5 != [16]byte{}
}

// md5Of is the hex MD5 naming a sharable artifact's payload.
func md5Of(a *compiles.Artifact) string { return hex.EncodeToString(a.MD5[:]) }

// findShared counts the payloads the pages show by MD5 and keeps those
// shown more than once.
func (s *site) findShared() {
	s.sharedTimes = map[string]int{}
	for _, u := range s.units {
		for _, ai := range u.Artifacts {
			if a := &s.res.Artifacts[ai]; sharable(a) {
				s.sharedTimes[md5Of(a)]++
			}
		}
	}
	s.shared = map[string]int{}
	for _, u := range s.units {
		for _, ai := range u.Artifacts {
			a := &s.res.Artifacts[ai]
			if !sharable(a) {
				continue
			}
			md5 := md5Of(a)
			if s.sharedTimes[md5] < 2 {
				continue
			}
			if _, ok := s.shared[md5]; !ok {
				s.shared[md5] = ai
				s.sharedList = append(s.sharedList, md5)
			}
		}
	}
	for k, n := range s.sharedTimes {
		if n < 2 {
			delete(s.sharedTimes, k)
		}
	}
}

// sharedOf returns the MD5 under which artifact a is shared, or "".
func (s *site) sharedOf(a *compiles.Artifact) string {
	if !sharable(a) {
		return ""
	}
	md5 := md5Of(a)
	if _, ok := s.shared[md5]; ok {
		return md5
	}
	return ""
}

// sharedPage is the page of a shared payload, relative to the report root;
// sharedFull the file holding it whole when it is longer than MaxInline.
func sharedPage(md5 string) string { return "payloads/" + md5 + ".html" }
func sharedFull(md5 string) string { return "payloads/" + md5 + ".txt" }

type sharedView struct {
	Page  pageMeta
	Name  string
	Times int
}

// writeShared writes the page of one shared payload: the payload escaped,
// at most MaxInline of it, and when longer the whole of it, unescaped,
// beside it.
func (s *site) writeShared(dir, md5 string) error {
	a := &s.res.Artifacts[s.shared[md5]]
	v := sharedView{Page: pageMeta{Title: a.Name, Root: "../", Footer: s.opts.Footer}, Name: a.Name, Times: s.sharedTimes[md5]}
	return writeFile(filepath.Join(dir, filepath.FromSlash(sharedPage(md5))), func(w io.Writer) error {
		if err := pages.ExecuteTemplate(w, "payload_top", v); err != nil {
			return err
		}
		var tail artifactTail
		limit := s.opts.MaxInline
		ew := &escapeWriter{w: w, limit: limit}
		var side *os.File
		var sideBuf *bufio.Writer
		if a.Length > limit {
			var err error
			if side, err = createSide(filepath.Join(dir, filepath.FromSlash(sharedFull(md5)))); err != nil {
				return err
			}
			sideBuf = bufio.NewWriterSize(side, 256<<10)
			ew.full = sideBuf
			tail.Full = filepath.Base(sharedFull(md5))
			tail.Shown = fmtSize(limit)
		}
		if err := fetch(ew, a); err != nil {
			tail.Err = err.Error()
		}
		if side != nil {
			if err := sideBuf.Flush(); err != nil && ew.err == nil {
				ew.err = err
			}
			if err := side.Close(); err != nil && ew.err == nil {
				ew.err = err
			}
		}
		if ew.err != nil {
			return ew.err
		}
		return pages.ExecuteTemplate(w, "payload_bottom", struct {
			artifactTail
			Page pageMeta
		}{tail, v.Page})
	})
}

type sharedHead struct {
	artifactHead
	Src    string // the shared page, relative to the unit page
	Full   string // the whole payload when the page shows only its start
	Times  int
	Height string // a class sizing the frame to the payload
}

// frameHeight picks the frame's height class from the payload's size
// (pages allow no inline style).
func frameHeight(n int64) string {
	switch {
	case n < 400:
		return "fh-s"
	case n < 4000:
		return "fh-m"
	}
	return "fh-l"
}

// writeSharedArtifact writes an artifact whose payload is shared: the
// same heading as an inline one, the shared page embedded and linked.
func (s *site) writeSharedArtifact(w io.Writer, root, md5 string, a *compiles.Artifact, head artifactHead) error {
	v := sharedHead{artifactHead: head, Src: root + sharedPage(md5), Times: s.sharedTimes[md5], Height: frameHeight(a.Length)}
	if a.Length > s.opts.MaxInline {
		v.Full = root + sharedFull(md5)
	}
	return renderPage(w, "artifact_shared", v)
}
