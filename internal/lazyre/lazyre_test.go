package lazyre

import (
	"sync"
	"testing"
)

// A Regexp compiles once, on first use, from any number of goroutines,
// and a bad expression is an error from Compile and a panic from Get.
func TestCompileOnFirstUse(t *testing.T) {
	r := New(`a(\d+)b`)
	if r.re != nil {
		t.Fatal("compiled before use")
	}
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if !r.MatchString("xa12b") || r.MatchString("ab") {
				t.Error("match")
			}
		}()
	}
	wg.Wait()
	if loc := r.FindStringIndex("xxa1b"); len(loc) != 2 || loc[0] != 2 || loc[1] != 5 {
		t.Errorf("index %v", loc)
	}
	if r.String() != `a(\d+)b` {
		t.Errorf("string %q", r.String())
	}
	var z Regexp
	z.Init(`(`)
	if z.Compile() == nil {
		t.Fatal("bad expression compiled")
	}
	defer func() {
		if recover() == nil {
			t.Error("Get of a bad expression did not panic")
		}
	}()
	z.Get()
}
