package tracehtml

// A small Chrome DevTools Protocol client over a standard-library websocket,
// enough to open a page in headless Chromium and watch what it does: console
// messages, exceptions, log entries (CSP violations, failed loads) and every
// network request. No dependency: the websocket handshake and framing are
// written here (RFC 6455, client side, text frames only).

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// wsConn is a client websocket connection carrying text messages.
type wsConn struct {
	c  net.Conn
	br *bufio.Reader
	wm sync.Mutex
}

func wsDial(rawURL string) (*wsConn, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	c, err := net.DialTimeout("tcp", u.Host, 10*time.Second)
	if err != nil {
		return nil, err
	}
	keyRaw := make([]byte, 16)
	rand.Read(keyRaw)
	key := base64.StdEncoding.EncodeToString(keyRaw)
	req := fmt.Sprintf("GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n", u.RequestURI(), u.Host, key)
	if _, err := c.Write([]byte(req)); err != nil {
		c.Close()
		return nil, err
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		c.Close()
		return nil, err
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		c.Close()
		return nil, fmt.Errorf("websocket handshake: %s", resp.Status)
	}
	h := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	if resp.Header.Get("Sec-WebSocket-Accept") != base64.StdEncoding.EncodeToString(h[:]) {
		c.Close()
		return nil, errors.New("websocket handshake: bad Sec-WebSocket-Accept")
	}
	return &wsConn{c: c, br: br}, nil
}

// writeText sends one masked text frame (clients must mask).
func (w *wsConn) writeText(p []byte) error {
	w.wm.Lock()
	defer w.wm.Unlock()
	var hdr []byte
	hdr = append(hdr, 0x81) // FIN + text
	switch n := len(p); {
	case n < 126:
		hdr = append(hdr, 0x80|byte(n))
	case n <= 0xFFFF:
		hdr = append(hdr, 0x80|126, byte(n>>8), byte(n))
	default:
		hdr = append(hdr, 0x80|127)
		hdr = binary.BigEndian.AppendUint64(hdr, uint64(n))
	}
	var mask [4]byte
	rand.Read(mask[:])
	hdr = append(hdr, mask[:]...)
	buf := make([]byte, len(p))
	for i := range p {
		buf[i] = p[i] ^ mask[i%4]
	}
	_, err := w.c.Write(append(hdr, buf...))
	return err
}

// readMessage returns the next complete text or binary message, joining
// continuation frames and answering pings.
func (w *wsConn) readMessage() ([]byte, error) {
	var msg []byte
	for {
		var h [2]byte
		if _, err := io.ReadFull(w.br, h[:]); err != nil {
			return nil, err
		}
		fin, op := h[0]&0x80 != 0, h[0]&0x0F
		n := uint64(h[1] & 0x7F)
		switch n {
		case 126:
			var b [2]byte
			if _, err := io.ReadFull(w.br, b[:]); err != nil {
				return nil, err
			}
			n = uint64(binary.BigEndian.Uint16(b[:]))
		case 127:
			var b [8]byte
			if _, err := io.ReadFull(w.br, b[:]); err != nil {
				return nil, err
			}
			n = binary.BigEndian.Uint64(b[:])
		}
		if h[1]&0x80 != 0 { // servers do not mask, but tolerate it
			var m [4]byte
			if _, err := io.ReadFull(w.br, m[:]); err != nil {
				return nil, err
			}
		}
		if n > 256<<20 {
			return nil, fmt.Errorf("websocket frame of %d bytes", n)
		}
		p := make([]byte, n)
		if _, err := io.ReadFull(w.br, p); err != nil {
			return nil, err
		}
		switch op {
		case 0x8:
			return nil, io.EOF
		case 0x9: // ping → pong
			w.wm.Lock()
			w.c.Write(append([]byte{0x8A, 0x80 | byte(len(p)), 0, 0, 0, 0}, p...))
			w.wm.Unlock()
			continue
		case 0xA:
			continue
		}
		msg = append(msg, p...)
		if fin {
			return msg, nil
		}
	}
}

// cdpEvent is one event Chromium sent.
type cdpEvent struct {
	Method    string          `json:"method"`
	Params    json.RawMessage `json:"params"`
	SessionID string          `json:"sessionId"`
}

type cdpReply struct {
	ID     int64           `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// cdpClient multiplexes commands and events over one browser connection.
type cdpClient struct {
	ws      *wsConn
	mu      sync.Mutex
	nextID  int64
	pending map[int64]chan cdpReply
	events  chan cdpEvent
	done    chan struct{}
}

func newCDP(ws *wsConn) *cdpClient {
	c := &cdpClient{ws: ws, pending: map[int64]chan cdpReply{}, events: make(chan cdpEvent, 4096), done: make(chan struct{})}
	go c.readLoop()
	return c
}

func (c *cdpClient) readLoop() {
	defer close(c.done)
	for {
		msg, err := c.ws.readMessage()
		if err != nil {
			return
		}
		var probe struct {
			ID     int64  `json:"id"`
			Method string `json:"method"`
		}
		if json.Unmarshal(msg, &probe) != nil {
			continue
		}
		if probe.Method != "" {
			var ev cdpEvent
			json.Unmarshal(msg, &ev)
			select {
			case c.events <- ev:
			default: // a test that stops reading must not wedge the reader
			}
			continue
		}
		var r cdpReply
		json.Unmarshal(msg, &r)
		c.mu.Lock()
		ch := c.pending[r.ID]
		delete(c.pending, r.ID)
		c.mu.Unlock()
		if ch != nil {
			ch <- r
		}
	}
}

// call sends one command (to a session when sessionID is set) and waits.
func (c *cdpClient) call(ctx context.Context, sessionID, method string, params any) (json.RawMessage, error) {
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	ch := make(chan cdpReply, 1)
	c.pending[id] = ch
	c.mu.Unlock()
	msg := map[string]any{"id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if sessionID != "" {
		msg["sessionId"] = sessionID
	}
	b, _ := json.Marshal(msg)
	if err := c.ws.writeText(b); err != nil {
		return nil, err
	}
	select {
	case r := <-ch:
		if r.Error != nil {
			return nil, fmt.Errorf("%s: %s", method, r.Error.Message)
		}
		return r.Result, nil
	case <-c.done:
		return nil, fmt.Errorf("%s: browser connection closed", method)
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

// browser is one headless Chromium process with its DevTools connection.
type browser struct {
	cmd *exec.Cmd
	cdp *cdpClient
}

var chromiumFlags = []string{
	"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
	"--disable-background-networking", "--disable-component-update", "--disable-sync",
	"--disable-default-apps", "--disable-extensions", "--hide-scrollbars",
}

// chromiumPath finds a Chromium binary or skips the test.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no chromium on PATH: install it (apt-get install -y chromium) to run the browser test")
	return ""
}

func startBrowser(t *testing.T, ctx context.Context) *browser {
	t.Helper()
	bin := chromiumPath(t)
	ud := t.TempDir()
	args := append(append([]string{}, chromiumFlags...), "--user-data-dir="+ud, "--remote-debugging-port=0", "about:blank")
	cmd := exec.Command(bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Skipf("chromium could not start: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	// Chromium writes its port and browser path to DevToolsActivePort.
	var wsURL string
	deadline := time.Now().Add(90 * time.Second) // generous: CI machines can be loaded
	for time.Now().Before(deadline) {
		b, err := os.ReadFile(filepath.Join(ud, "DevToolsActivePort"))
		if lines := strings.Split(strings.TrimSpace(string(b)), "\n"); err == nil && len(lines) == 2 {
			wsURL = "ws://127.0.0.1:" + lines[0] + lines[1]
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if wsURL == "" {
		t.Fatalf("chromium did not open its DevTools port within 90s; stderr:\n%s", stderr.String())
	}
	ws, err := wsDial(wsURL)
	if err != nil {
		t.Fatalf("connect to chromium DevTools at %s: %v", wsURL, err)
	}
	t.Cleanup(func() { ws.c.Close() })
	return &browser{cmd: cmd, cdp: newCDP(ws)}
}

// openTab opens a blank tab and attaches to it: its session id, and how
// to close it.
func (b *browser) openTab(ctx context.Context) (string, func(), error) {
	res, err := b.cdp.call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"})
	if err != nil {
		return "", nil, err
	}
	var target struct {
		TargetID string `json:"targetId"`
	}
	json.Unmarshal(res, &target)
	closeTab := func() {
		b.cdp.call(context.Background(), "", "Target.closeTarget", map[string]any{"targetId": target.TargetID})
	}
	res, err = b.cdp.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true})
	if err != nil {
		closeTab()
		return "", nil, err
	}
	var att struct {
		SessionID string `json:"sessionId"`
	}
	json.Unmarshal(res, &att)
	return att.SessionID, closeTab, nil
}

// pageVisit is what the browser saw while loading one page.
type pageVisit struct {
	Requests []string // every URL the page asked for, including the page itself
	Console  []string // console messages of level error/warning, exceptions, log entries of level error
	Texts    map[string]string
}

// visit opens fileURL in a fresh tab, waits for load, evaluates each
// expression in exprs (name → JS returning a string), optionally saves a
// screenshot, and reports what happened.
func (b *browser) visit(ctx context.Context, fileURL string, exprs map[string]string, screenshot string) (*pageVisit, error) {
	sid, closeTab, err := b.openTab(ctx)
	if err != nil {
		return nil, err
	}
	defer closeTab()

	for _, m := range []string{"Page.enable", "Runtime.enable", "Log.enable", "Network.enable"} {
		if _, err := b.cdp.call(ctx, sid, m, nil); err != nil {
			return nil, err
		}
	}
	if _, err := b.cdp.call(ctx, sid, "Emulation.setDeviceMetricsOverride", map[string]any{"width": 1400, "height": 1000, "deviceScaleFactor": 1, "mobile": false}); err != nil {
		return nil, err
	}
	if _, err := b.cdp.call(ctx, sid, "Page.navigate", map[string]any{"url": fileURL}); err != nil {
		return nil, err
	}
	v := &pageVisit{Texts: map[string]string{}}
	loaded := false
	// After load, keep listening briefly so late errors (timers, deferred
	// scripts) are caught too.
	var settle <-chan time.Time
	for {
		select {
		case ev := <-b.cdp.events:
			if ev.SessionID != sid {
				continue
			}
			v.observe(ev)
			if ev.Method == "Page.loadEventFired" && !loaded {
				loaded = true
				settle = time.After(500 * time.Millisecond)
			}
		case <-settle:
			goto done
		case <-ctx.Done():
			return v, fmt.Errorf("page %s did not load: %w", fileURL, ctx.Err())
		}
	}
done:
	for name, expr := range exprs {
		res, err := b.cdp.call(ctx, sid, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true})
		if err != nil {
			return v, err
		}
		var r struct {
			Result struct {
				Value any `json:"value"`
			} `json:"result"`
			ExceptionDetails *struct {
				Text string `json:"text"`
			} `json:"exceptionDetails"`
		}
		json.Unmarshal(res, &r)
		if r.ExceptionDetails != nil {
			return v, fmt.Errorf("evaluate %s: %s", name, r.ExceptionDetails.Text)
		}
		v.Texts[name] = fmt.Sprint(r.Result.Value)
	}
	if screenshot != "" {
		res, err := b.cdp.call(ctx, sid, "Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": true,
			"clip": map[string]any{"x": 0, "y": 0, "width": 1400, "height": 1700, "scale": 1}})
		if err != nil {
			return v, err
		}
		var shot struct {
			Data string `json:"data"`
		}
		json.Unmarshal(res, &shot)
		png, _ := base64.StdEncoding.DecodeString(shot.Data)
		if err := os.WriteFile(screenshot, png, 0o644); err != nil {
			return v, err
		}
	}
	// Drain what arrived during evaluation.
	for {
		select {
		case ev := <-b.cdp.events:
			if ev.SessionID == sid {
				v.observe(ev)
			}
		default:
			return v, nil
		}
	}
}

func (v *pageVisit) observe(ev cdpEvent) {
	switch ev.Method {
	case "Network.requestWillBeSent":
		var p struct {
			Request struct {
				URL string `json:"url"`
			} `json:"request"`
		}
		json.Unmarshal(ev.Params, &p)
		v.Requests = append(v.Requests, p.Request.URL)
	case "Runtime.consoleAPICalled":
		var p struct {
			Type string `json:"type"`
			Args []struct {
				Value       any    `json:"value"`
				Description string `json:"description"`
			} `json:"args"`
		}
		json.Unmarshal(ev.Params, &p)
		if p.Type == "error" || p.Type == "warning" || p.Type == "assert" {
			var parts []string
			for _, a := range p.Args {
				if a.Value != nil {
					parts = append(parts, fmt.Sprint(a.Value))
				} else {
					parts = append(parts, a.Description)
				}
			}
			v.Console = append(v.Console, "console."+p.Type+": "+strings.Join(parts, " "))
		}
	case "Runtime.exceptionThrown":
		var p struct {
			ExceptionDetails struct {
				Text      string `json:"text"`
				Exception struct {
					Description string `json:"description"`
				} `json:"exception"`
			} `json:"exceptionDetails"`
		}
		json.Unmarshal(ev.Params, &p)
		v.Console = append(v.Console, "exception: "+p.ExceptionDetails.Text+" "+p.ExceptionDetails.Exception.Description)
	case "Log.entryAdded":
		var p struct {
			Entry struct {
				Level  string `json:"level"`
				Source string `json:"source"`
				Text   string `json:"text"`
				URL    string `json:"url"`
			} `json:"entry"`
		}
		json.Unmarshal(ev.Params, &p)
		if p.Entry.Level == "error" || p.Entry.Level == "warning" {
			v.Console = append(v.Console, fmt.Sprintf("log %s (%s): %s %s", p.Entry.Level, p.Entry.Source, p.Entry.Text, p.Entry.URL))
		}
	case "Network.loadingFailed":
		var p struct {
			ErrorText string `json:"errorText"`
		}
		json.Unmarshal(ev.Params, &p)
		v.Console = append(v.Console, "network: loading failed: "+p.ErrorText)
	}
}
