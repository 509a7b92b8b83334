package tracehtml

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"path/filepath"

	"github.com/bringup-tool/bringup/analyze/compiles"
	"github.com/bringup-tool/bringup/ingest/torchtrace"
)

// Shared payloads. A trace repeats payloads: every rank logs the same
// graphs, guards and output code, a restarted process or a concatenated log
// logs them again. Writing each copy into each page made the report as big
// as the trace and its writing a third of the command's CPU. A payload
// that more than one artifact shows is written once, as
// payloads/<md5>.html (named by its MD5, which the trace announced and the
// parser checked), and every page that shows it embeds that page in an
// iframe (same-directory file://, allowed by the pages' frame-src 'self')
// and links it; the frame of an artifact shown closed loads when opened
// (loading="lazy"), so a page of thousands of them opens at once. A
// payload shown once stays inline as before. The metadata
// of payload-less events (compilation_metrics, guards, dynamo_start
// stacks), shown indented, is shared the same way, keyed by its SHA-256.

// contentKey names what artifact a shows, by content: the hex MD5 of a
// payload that matched it, or for a payload-less event the SHA-256 of its
// kind and metadata (the text its page shows is the metadata indented);
// "" when it has none (a payload whose MD5 did not match, metadata that
// cannot be read: those stay inline, with their note).
func contentKey(a *compiles.Artifact) string {
	if !a.Envelope {
		if a.Length > 0 && a.MD5 != [16]byte{} {
			return hex.EncodeToString(a.MD5[:])
		}
		return ""
	}
	meta, ok, err := torchtrace.EnvelopeValue(a.PayloadRef, a.Kind)
	if err != nil || !ok {
		return ""
	}
	h := sha256.New()
	h.Write([]byte(a.Kind))
	h.Write([]byte{0})
	h.Write(meta)
	return hex.EncodeToString(h.Sum(nil))
}

// findShared keys every artifact the pages show by content (reading the
// metadata of payload-less events, on a few goroutines) and keeps the
// keys shown more than once.
func (s *site) findShared() {
	s.keys = make([]string, len(s.res.Artifacts))
	_ = s.parallel(len(s.units), func(i int) error {
		for _, ai := range s.units[i].Artifacts {
			s.keys[ai] = contentKey(&s.res.Artifacts[ai])
		}
		return nil
	})
	s.sharedTimes = map[string]int{}
	for _, u := range s.units {
		for _, ai := range u.Artifacts {
			if k := s.keys[ai]; k != "" {
				s.sharedTimes[k]++
			}
		}
	}
	s.shared = map[string]int{}
	for _, u := range s.units {
		for _, ai := range u.Artifacts {
			k := s.keys[ai]
			if k == "" || !worthSharing(s.res.Artifacts[ai].Length, s.sharedTimes[k]) {
				continue
			}
			if _, ok := s.shared[k]; !ok {
				s.shared[k] = ai
				s.sharedList = append(s.sharedList, k)
			}
		}
	}
	for k := range s.sharedTimes {
		if _, ok := s.shared[k]; !ok {
			delete(s.sharedTimes, k)
		}
	}
}

// worthSharing says whether a text of n bytes shown on times pages is
// better written once: it saves more than a file and a frame cost (a file
// to create, ~600 bytes of frame markup per page). Small repeats stay
// inline.
func worthSharing(n int64, times int) bool {
	return times >= 2 && n >= 512 && n*int64(times-1) >= 16<<10
}

// sharedOf returns the key under which artifact ai is shared, or "".
func (s *site) sharedOf(ai int) string {
	if k := s.keys[ai]; k != "" {
		if _, ok := s.shared[k]; ok {
			return k
		}
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
		if err := pages().ExecuteTemplate(w, "payload_top", v); err != nil {
			return err
		}
		tail, err := s.streamPayload(w, a, filepath.Join(dir, filepath.FromSlash(sharedFull(md5))), filepath.Base(sharedFull(md5)))
		if err != nil {
			return err
		}
		return pages().ExecuteTemplate(w, "payload_bottom", struct {
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
	return s.renderPage(w, "artifact_shared", v)
}
