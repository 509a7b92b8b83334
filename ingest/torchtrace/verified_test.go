package torchtrace

import (
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
)

func md5Event(announced, payload string) *Event {
	return &Event{HasPayload: announced, HashInput: []byte(payload), MD5Deferred: true}
}

func hexMD5(s string) string { h := md5.Sum([]byte(s)); return hex.EncodeToString(h[:]) }

// TestVerifiedSameAsCheckMD5: the cache answers what CheckMD5 answers, for
// a repeat (answered by comparison), a payload that differs from the
// remembered one under the same announced MD5, an empty payload, a wrong
// MD5 never remembered, and across the budget reset.
func TestVerifiedSameAsCheckMD5(t *testing.T) {
	v := NewVerified()
	good := "def forward(x):\n    return x + 1"
	cases := []struct {
		ev   *Event
		want bool
	}{
		{md5Event(hexMD5(good), good), true},
		{md5Event(hexMD5(good), good), true},                   // remembered
		{md5Event(hexMD5(good), good+" "), false},              // longer
		{md5Event(hexMD5(good), strings.ToUpper(good)), false}, // same length, other bytes
		{md5Event(hexMD5(""), ""), true},
		{md5Event(hexMD5(""), ""), true},
		{md5Event(hexMD5("a"), "b"), false},
		{md5Event(hexMD5("a"), "b"), false}, // a mismatch is never remembered
		{md5Event(hexMD5(good), good), true},
	}
	for i, c := range cases {
		if got, direct := v.CheckMD5(c.ev), CheckMD5(c.ev); got != c.want || direct != c.want {
			t.Errorf("case %d: cache %v, CheckMD5 %v, want %v", i, got, direct, c.want)
		}
	}
	if _, ok := v.m[hexMD5("a")]; ok {
		t.Error("a payload that did not match was remembered")
	}
	if len(v.m) != 2 {
		t.Errorf("%d payloads remembered, want 2", len(v.m))
	}
	// Filling past the budget forgets and starts again; answers stay right.
	big := strings.Repeat("z", maxVerifiedPayload)
	for i := 0; i < VerifiedBudget/maxVerifiedPayload+3; i++ {
		p := big[:len(big)-i]
		if !v.CheckMD5(md5Event(hexMD5(p), p)) {
			t.Fatalf("payload %d did not match", i)
		}
		if v.bytes > VerifiedBudget {
			t.Fatalf("cache holds %d bytes, budget %d", v.bytes, VerifiedBudget)
		}
	}
	if v.CheckMD5(md5Event(hexMD5(good), good+"!")) {
		t.Error("a changed payload matched after the reset")
	}
	// Too big to remember: checked, not kept.
	huge := strings.Repeat("h", maxVerifiedPayload+1)
	before := v.bytes
	if !v.CheckMD5(md5Event(hexMD5(huge), huge)) || v.bytes != before {
		t.Errorf("payload over maxVerifiedPayload: bytes %d → %d", before, v.bytes)
	}
	var nilCache *Verified
	if !nilCache.CheckMD5(md5Event(hexMD5(good), good)) || nilCache.CheckMD5(md5Event(hexMD5(good), "x")) {
		t.Error("a nil cache does not answer as CheckMD5")
	}
}

// TestVerifiedBacksOff: payloads that never repeat stop being remembered
// for a while once a whole budget of them had no hit, then are again;
// repeated payloads keep being answered by comparison.
func TestVerifiedBacksOff(t *testing.T) {
	v := NewVerified()
	unique := func(i int) *Event {
		p := fmt.Sprintf("%08d", i) + strings.Repeat("u", maxVerifiedPayload-8)
		return md5Event(hexMD5(p), p)
	}
	i := 0
	for ; v.skip == 0; i++ {
		if !v.CheckMD5(unique(i)) {
			t.Fatalf("payload %d did not match", i)
		}
		if i > 2*VerifiedBudget/maxVerifiedPayload {
			t.Fatal("a budget of payloads without a hit did not back off")
		}
	}
	if v.bytes != 0 || len(v.m) != 0 {
		t.Errorf("backing off holds %d bytes in %d payloads", v.bytes, len(v.m))
	}
	for ; v.skip > 0; i++ {
		if !v.CheckMD5(unique(i)) || v.bytes != 0 {
			t.Fatalf("payload %d while backing off: %d bytes held", i, v.bytes)
		}
	}
	if !v.CheckMD5(unique(i)) || v.bytes == 0 {
		t.Error("payloads are not remembered again after backing off")
	}
	// With repeats, a full budget keeps going without a pause.
	w := NewVerified()
	for r := 0; r < 3*VerifiedBudget/maxVerifiedPayload; r++ {
		e := unique(r)
		if !w.CheckMD5(e) || !w.CheckMD5(unique(r)) {
			t.Fatal("no match")
		}
		if w.skip != 0 {
			t.Fatalf("backed off at payload %d although every payload repeated", r)
		}
	}
}
