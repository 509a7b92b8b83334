package tracehtml

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// The unit pages are most of a report: thousands of pages, each executing
// a dozen html/template templates whose every action is a reflective call
// through an escaper (a third of the report's CPU). The templates those
// pages use are also written out here, by hand, as plain Go that escapes
// exactly as html/template does in each context (text and RCDATA, quoted
// attribute, URL attribute). The templates stay the specification: render
// takes the Go path for them and TestGoRenderSameAsTemplates checks, on the
// corpus reports, the fuzzed fixture and a repeated trace, that both give
// the same bytes. Any other template executes as before.

// renderPage writes template name with data, by its Go twin when it has one.
func (s *site) renderPage(w io.Writer, name string, data any) error {
	if s.opts.templates {
		return pages().ExecuteTemplate(w, name, data)
	}
	bw, ok := w.(*bufio.Writer)
	if !ok {
		bw = bufio.NewWriter(w)
		defer bw.Flush()
	}
	h := &htmlOut{w: bw}
	switch v := data.(type) {
	case unitTop:
		switch name {
		case "unit_top":
			h.unitTop(&v)
			return h.err()
		case "unit_bottom":
			h.raw("</section>\n")
			h.foot(&v.Page)
			return h.err()
		}
	case artifactHead:
		if name == "artifact_open" {
			h.artifactOpen(&v)
			return h.err()
		}
	case artifactTail:
		if name == "artifact_close" {
			h.artifactClose(&v)
			return h.err()
		}
	case sharedHead:
		if name == "artifact_shared" {
			h.artifactShared(&v)
			return h.err()
		}
	}
	return pages().ExecuteTemplate(bw, name, data)
}

type htmlOut struct {
	w       *bufio.Writer
	scratch []byte
}

func (h *htmlOut) err() error {
	if _, err := h.w.Write(nil); err != nil {
		return err
	}
	return nil
}

func (h *htmlOut) raw(s string) { h.w.WriteString(s) }

// htmlSpecial marks the bytes html/template's HTML, attribute and RCDATA
// escapers replace (its htmlReplacementTable); every other byte, invalid
// UTF-8 included, passes through.
var htmlSpecial = [256]string{
	0:    "\uFFFD",
	'"':  "&#34;",
	'&':  "&amp;",
	'\'': "&#39;",
	'+':  "&#43;",
	'<':  "&lt;",
	'>':  "&gt;",
}

// text writes s escaped as html/template escapes a string action in
// element text, RCDATA (<title>) or a quoted attribute value.
func (h *htmlOut) text(s string) {
	start := 0
	for i := 0; i < len(s); i++ {
		if r := htmlSpecial[s[i]]; r != "" {
			h.w.WriteString(s[start:i])
			h.w.WriteString(r)
			start = i + 1
		}
	}
	h.w.WriteString(s[start:])
}

// url writes s as html/template writes an action that starts a URL
// attribute (href, src): a URL with a scheme other than http, https or
// mailto becomes #ZgotmplZ, the URL is normalised (bytes outside RFC
// 3986's reserved and unreserved sets percent-encoded, valid escapes
// kept), then escaped as an attribute.
func (h *htmlOut) url(s string) {
	if protocol, _, ok := strings.Cut(s, ":"); ok && !strings.Contains(protocol, "/") {
		if !strings.EqualFold(protocol, "http") && !strings.EqualFold(protocol, "https") && !strings.EqualFold(protocol, "mailto") {
			s = "#ZgotmplZ"
		}
	}
	isHex := func(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '!', '#', '$', '*', ',', '/', ':', ';', '=', '?', '@', '[', ']', '-', '.', '_', '~':
			h.w.WriteByte(c)
			continue
		case '&':
			h.w.WriteString("&amp;")
			continue
		case '+':
			h.w.WriteString("&#43;")
			continue
		case '%':
			if i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
				h.w.WriteByte(c)
				continue
			}
		default:
			if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' {
				h.w.WriteByte(c)
				continue
			}
		}
		fmt.Fprintf(h.w, "%%%02x", c)
	}
}

// num writes a number as a template prints it: fmt.Sprint, then escaped
// ("1e+21" and "+Inf" carry a '+').
func (h *htmlOut) num(f float64) {
	h.scratch = fmt.Append(h.scratch[:0], f)
	start := 0
	for i, c := range h.scratch {
		if r := htmlSpecial[c]; r != "" {
			h.w.Write(h.scratch[start:i])
			h.w.WriteString(r)
			start = i + 1
		}
	}
	h.w.Write(h.scratch[start:])
}

func (h *htmlOut) int(n int) {
	h.scratch = strconv.AppendInt(h.scratch[:0], int64(n), 10)
	h.w.Write(h.scratch)
}

// head is the "head" template.
func (h *htmlOut) head(p *pageMeta) {
	h.raw("<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n" +
		"<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'self'; script-src 'self'; frame-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'\">\n" +
		"<meta name=\"referrer\" content=\"no-referrer\">\n<title>")
	h.text(p.Title)
	h.raw("</title>\n<link rel=\"stylesheet\" href=\"")
	h.url(p.Root)
	h.raw("assets/report.css\">\n</head>\n<body>\n<header class=\"top\"><h1>")
	h.text(p.Title)
	h.raw("</h1><span class=\"sub\">")
	h.text(p.Subtitle)
	h.raw("</span>")
	if p.Back {
		h.raw("<a href=\"")
		h.url(p.Root)
		h.raw("index.html\">&larr; back to the summary</a>")
	}
	h.raw("</header>\n")
	if len(p.Switch) > 0 {
		h.raw("<nav class=\"ranks\" aria-label=\"ranks\">")
		for _, l := range p.Switch {
			if l.Here {
				h.raw("<strong>")
				h.text(l.Name)
				h.raw("</strong>")
			} else {
				h.raw("<a href=\"")
				h.url(l.Href)
				h.raw("\">")
				h.text(l.Name)
				h.raw("</a>")
			}
		}
		h.raw("</nav>\n")
	}
	h.raw("<main>\n")
}

// foot is the "foot" template.
func (h *htmlOut) foot(p *pageMeta) {
	h.raw("\n<footer>")
	h.text(p.Footer)
	h.raw("</footer>\n</main>\n<script src=\"")
	h.url(p.Root)
	h.raw("assets/report.js\"></script>\n</body>\n</html>\n")
}

func (h *htmlOut) kvs(prefix string, list []kv) {
	for _, x := range list {
		h.raw("<dt>")
		h.raw(prefix)
		h.text(x.K)
		h.raw("</dt><dd>")
		h.text(x.V)
		h.raw("</dd>")
	}
}

// unitTop is the "unit_top" template.
func (h *htmlOut) unitTop(v *unitTop) {
	h.head(&v.Page)
	h.raw("\n<div class=\"verdict ")
	h.text(v.VerdictClass)
	h.raw("\"><span class=\"pill ")
	h.text(v.StatusClass)
	h.raw("\">")
	h.text(v.Status)
	h.raw("</span> ")
	h.text(v.Headline)
	h.raw("\n")
	if len(v.Points) > 0 {
		h.raw("<ul>")
		for _, p := range v.Points {
			h.raw("<li>")
			h.text(p)
			h.raw("</li>")
		}
		h.raw("</ul>")
	}
	h.raw("</div>\n\n<section class=\"card\" id=\"facts\"><h2>At a glance</h2>\n<dl class=\"kv\">")
	h.kvs("", v.Facts)
	h.kvs("link: ", v.Links)
	h.raw("</dl>\n</section>\n\n")
	if v.Timeline != nil {
		h.raw("<section class=\"card\" id=\"phases\"><h2>Phases <span class=\"count\">")
		h.text(v.PhaseNote)
		h.raw("</span></h2>\n")
		h.timeline(v.Timeline)
		h.raw("\n</section>")
	}
	h.raw("\n\n")
	if len(v.Stack) > 0 {
		h.raw("<section class=\"card\" id=\"stack\"><h2>Where it was compiled from <span class=\"count\">")
		h.int(len(v.Stack))
		h.raw(" frames, innermost last, as Python prints it</span></h2>\n<details")
		if len(v.Stack) <= 8 {
			h.raw(" open")
		}
		h.raw("><summary class=\"mono\">")
		h.text(v.Inner.Func)
		h.raw(" (")
		h.text(v.Inner.Where)
		h.raw(")</summary>\n<table><tbody>")
		for _, f := range v.Stack {
			h.raw("<tr><td class=\"mono\">")
			h.text(f.Func)
			h.raw("</td><td class=\"mono\">")
			h.text(f.Where)
			h.raw("</td></tr>")
		}
		h.raw("</tbody></table>\n</details>\n</section>")
	}
	h.raw("\n\n")
	if len(v.Metrics) > 0 {
		h.raw("<section class=\"card\" id=\"metrics\"><h2>Time breakdown <span class=\"count\">from compilation_metrics</span></h2>\n<dl class=\"kv\">")
		h.kvs("", v.Metrics)
		h.raw("</dl>\n</section>")
	}
	h.raw("\n\n<section class=\"card\" id=\"artifacts\"><h2>Graphs, guards, code and other artifacts <span class=\"count\">")
	h.int(len(v.Artifacts))
	h.raw("</span></h2>\n")
	if len(v.Artifacts) > 0 {
		h.raw("<p class=\"toc\">")
		for i := range v.Artifacts {
			h.raw("<a href=\"")
			h.url(v.Artifacts[i].Href)
			h.raw("\">")
			h.text(v.Artifacts[i].Name)
			h.raw("</a>")
		}
		h.raw("</p>")
	} else {
		h.raw("<p class=\"empty\">This unit logged no artifacts.</p>")
	}
	h.raw("\n")
}

// timeline is the "timeline" template.
func (h *htmlOut) timeline(t *timelineView) {
	if t == nil {
		h.raw("<p class=\"empty\">No timing events (chromium_event) in this trace, so there is no timeline.</p>")
		return
	}
	h.raw("<div class=\"timeline\">\n<svg viewBox=\"0 0 ")
	h.num(t.Width)
	h.raw(" ")
	h.num(t.Height)
	h.raw("\" role=\"img\" aria-label=\"compile phases over time\">\n")
	for _, k := range t.Ticks {
		h.raw("<line class=\"grid\" x1=\"")
		h.num(k.X)
		h.raw("\" y1=\"18\" x2=\"")
		h.num(k.X)
		h.raw("\" y2=\"")
		h.num(t.Height)
		h.raw("\"></line><text class=\"axis\" x=\"")
		h.num(k.X)
		h.raw("\" y=\"12\" text-anchor=\"middle\">")
		h.text(k.Label)
		h.raw("</text>\n")
	}
	for _, l := range t.Lanes {
		h.raw("<text class=\"lane-label\" x=\"4\" y=\"")
		h.num(l.LabelY)
		h.raw("\"><title>")
		h.text(l.Full)
		h.raw("</title>")
		h.text(l.Name)
		h.raw("</text>\n")
	}
	for i := range t.Bars {
		b := &t.Bars[i]
		if b.Href != "" {
			h.raw("<a href=\"")
			h.url(b.Href)
			h.raw("\">")
		}
		h.raw("<rect class=\"bar ")
		h.text(b.Class)
		h.raw("\" x=\"")
		h.num(b.X)
		h.raw("\" y=\"")
		h.num(b.Y)
		h.raw("\" width=\"")
		h.num(b.W)
		h.raw("\" height=\"")
		h.num(b.H)
		h.raw("\" rx=\"2\"><title>")
		h.text(b.Title)
		h.raw("</title></rect>")
		if b.Href != "" {
			h.raw("</a>")
		}
		h.raw("\n")
	}
	h.raw("</svg>\n<div class=\"legend\">")
	for _, l := range t.Legend {
		h.raw("<span><i class=\"")
		h.text(l.Class)
		h.raw("\"></i>")
		h.text(l.Name)
		h.raw("</span>")
	}
	h.raw("</div>\n")
	if t.Relative {
		h.raw("<p class=\"note\">These inputs' clocks are far apart (different runs or days), so each lane starts at its own first phase.</p>")
	}
	h.raw("\n")
	if t.Dropped != 0 {
		h.raw("<p class=\"note\">")
		h.int(t.Dropped)
		h.raw(" phases shorter than a pixel were merged into their neighbours; the Perfetto export has every one.</p>")
	}
	h.raw("\n</div>")
}

func (h *htmlOut) detailsOpen(v *artifactHead) {
	h.raw("<details class=\"artifact\" id=\"")
	h.text(v.Anchor)
	h.raw("\"")
	if v.Open {
		h.raw(" open")
	}
	h.raw("><summary>")
	h.text(v.Name)
	h.raw(" <span class=\"meta\">")
	h.text(v.Meta)
	h.raw("</span></summary>")
}

// artifactOpen is the "artifact_open" template.
func (h *htmlOut) artifactOpen(v *artifactHead) {
	h.detailsOpen(v)
	h.raw("<pre>")
}

// artifactClose is the "artifact_close" template.
func (h *htmlOut) artifactClose(v *artifactTail) {
	h.raw("</pre>")
	if v.Full != "" {
		h.raw("<p class=\"note\">&nbsp;Shown: the first ")
		h.text(v.Shown)
		h.raw(". The whole payload is in <a href=\"")
		h.url(v.Full)
		h.raw("\">")
		h.text(v.Full)
		h.raw("</a>.</p>")
	}
	if v.Err != "" {
		h.raw("<p class=\"note\">&nbsp;Could not read this payload: ")
		h.text(v.Err)
		h.raw("</p>")
	}
	h.raw("</details>\n")
}

// artifactShared is the "artifact_shared" template.
func (h *htmlOut) artifactShared(v *sharedHead) {
	h.detailsOpen(&v.artifactHead)
	h.raw("<iframe class=\"payload ")
	h.text(v.Height)
	h.raw("\" src=\"")
	h.url(v.Src)
	h.raw("\" title=\"")
	h.text(v.Name)
	h.raw("\"")
	if !v.Open {
		h.raw(" loading=\"lazy\"")
	}
	h.raw("></iframe><p class=\"note\">&nbsp;Logged ")
	h.int(v.Times)
	h.raw(" times in this trace, written once: <a href=\"")
	h.url(v.Src)
	h.raw("\">open this payload on its own page</a>")
	if v.Full != "" {
		h.raw("; the page shows its start, the whole payload is in <a href=\"")
		h.url(v.Full)
		h.raw("\">a text file</a>")
	}
	h.raw(".</p></details>\n")
}
