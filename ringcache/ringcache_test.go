package ringcache

import (
	"math/rand/v2"
	"slices"
	"testing"
)

type entry struct {
	key string
	val int
}

func find(r *Ring[entry], key string) (int, bool) {
	e := r.Find(func(e *entry) bool { return e.key == key })
	if e == nil {
		return 0, false
	}
	return e.val, true
}

// TestOldestReplacedFirst: a ring of three keeps the last three distinct
// entries put, whatever was hit in between.
func TestOldestReplacedFirst(t *testing.T) {
	r := New[entry](3)
	for i, k := range []string{"a", "b", "c"} {
		r.Put(entry{k, i})
	}
	if v, ok := find(&r, "a"); !ok || v != 0 {
		t.Fatalf("a: %d %v", v, ok)
	}
	r.Put(entry{"d", 3}) // replaces a, the oldest put, though a was just hit
	if _, ok := find(&r, "a"); ok {
		t.Errorf("a still held after a fourth put into three slots")
	}
	for _, k := range []string{"b", "c", "d"} {
		if _, ok := find(&r, k); !ok {
			t.Errorf("%s lost", k)
		}
	}
	if r.Len() != 3 || r.Size() != 3 {
		t.Errorf("len %d size %d", r.Len(), r.Size())
	}
	r.Reset()
	if _, ok := find(&r, "d"); ok || r.Len() != 0 {
		t.Errorf("Reset kept entries")
	}
}

// TestPredictsTheFollower: ranks printing in turn (a, b, c, a, b, c…)
// are found with one compare each once the order is learned.
func TestPredictsTheFollower(t *testing.T) {
	r := New[entry](8)
	order := []string{"r0", "r1", "r2", "r3"}
	for i, k := range order {
		r.Put(entry{k, i})
	}
	compares := 0
	for round := 0; round < 5; round++ {
		for _, k := range order {
			e := r.Find(func(e *entry) bool { compares++; return e.key == k })
			if e == nil || e.key != k {
				t.Fatalf("round %d: %s not found", round, k)
			}
		}
		if round == 0 {
			compares = 0 // the first round teaches the order
		}
	}
	if want := 4 * len(order); compares != want {
		t.Errorf("%d compares for 4 learned rounds of %d, want %d", compares, len(order), want)
	}
}

// TestZeroRing: the zero value holds nothing and does not panic.
func TestZeroRing(t *testing.T) {
	var r Ring[entry]
	if p := r.Put(entry{"a", 1}); p.key != "a" {
		t.Errorf("Put returned %+v", p)
	}
	if _, ok := find(&r, "a"); ok || r.Len() != 0 {
		t.Errorf("a zero ring remembered")
	}
}

// TestSameAsModel: random puts and lookups answer as a plain list of the
// last Size distinct keys put.
func TestSameAsModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, size := range []int{1, 2, 3, 8} {
		r := New[entry](size)
		var model []entry
		for op := 0; op < 5000; op++ {
			k := string(rune('a' + rng.IntN(12)))
			got, ok := find(&r, k)
			i := slices.IndexFunc(model, func(e entry) bool { return e.key == k })
			if ok != (i >= 0) || ok && got != model[i].val {
				t.Fatalf("size %d op %d: %s found %v (%d), model %v", size, op, k, ok, got, model)
			}
			if !ok {
				r.Put(entry{k, op})
				model = append(model, entry{k, op})
				if len(model) > size {
					model = model[1:]
				}
			}
		}
	}
}

func BenchmarkFindTurns(b *testing.B) {
	r := New[entry](8)
	keys := []string{"worker.py:267", "gpu_model_runner.py:1234", "core.py:88", "metrics.py:455"}
	for i, k := range keys {
		r.Put(entry{k, i})
	}
	for i := 0; i < b.N; i++ {
		k := keys[i%len(keys)]
		if r.Find(func(e *entry) bool { return e.key == k }) == nil {
			b.Fatal(k)
		}
	}
}

// TestAdd: Add hands out the oldest entry's slot, still holding it (the
// zero entry while a slot is empty), whatever was hit; what the caller
// writes there is then held like a Put.
func TestAdd(t *testing.T) {
	r := New[entry](2)
	for _, c := range []struct{ put, old string }{{"a", ""}, {"b", ""}, {"c", "a"}, {"d", "b"}, {"e", "c"}} {
		if c.old != "" {
			find(&r, c.old) // a hit does not save the oldest
		}
		e := r.Add()
		if e.key != c.old {
			t.Fatalf("Add for %s holds %q, want %q", c.put, e.key, c.old)
		}
		*e = entry{c.put, len(c.put)}
		if v, ok := find(&r, c.put); !ok || v != 1 {
			t.Fatalf("%s not held after Add", c.put)
		}
		if _, ok := find(&r, c.old); ok && c.old != "" {
			t.Fatalf("%s still held after the Add that replaced it", c.old)
		}
	}
	var z Ring[entry]
	z.Add().key = "x"
	if _, ok := find(&z, "x"); ok || z.Len() != 0 {
		t.Fatal("a zero Ring kept an entry")
	}
}

// TestProbeOrder: over random puts and lookups, Probe(0..Len-1) visits
// every held slot once, first the follower of the last hit (the last hit
// itself when that slot is empty), then the others from the last hit on
// in ring order; Find returns the first match in that order.
func TestProbeOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, size := range []int{1, 2, 3, 5, 8} {
		r := New[entry](size)
		for op := 0; op < 3000; op++ {
			n := r.Len()
			var got []int
			for k := 0; k < n; k++ {
				got = append(got, r.Probe(k))
			}
			if n > 0 {
				g := r.slots[r.last].follow
				if g >= n {
					g = r.last
				}
				want := []int{g}
				for k := 0; k < n; k++ {
					if at := (r.last + k) % n; at != g {
						want = append(want, at)
					}
				}
				if !slices.Equal(got, want) {
					t.Fatalf("size %d op %d (last %d, n %d): probes %v, want %v", size, op, r.last, n, got, want)
				}
			}
			k := string(rune('a' + rng.IntN(2*size)))
			first := -1
			for _, at := range got {
				if r.At(at).key == k {
					first = at
					break
				}
			}
			e := r.Find(func(e *entry) bool { return e.key == k })
			switch {
			case first < 0 && e != nil, first >= 0 && e != r.At(first):
				t.Fatalf("size %d op %d: Find(%s) is not the first match of the probe order", size, op, k)
			case e == nil:
				r.Put(entry{k, op})
			}
		}
	}
}
