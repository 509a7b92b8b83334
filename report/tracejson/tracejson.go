// Package tracejson writes the bringup.trace/v1 document (a
// compiles.Result) as a stream.
package tracejson

import (
	"bufio"
	"encoding/json"
	"io"
	"reflect"
	"runtime"
	"strings"
	"sync"

	"github.com/bringup-tool/bringup/analyze/compiles"
)

// WriteJSON writes res as the bringup.trace/v1 document, streaming: one
// top-level key per line and one array element per line, each marshalled
// on its own, so a result with hundreds of thousands of phases never
// exists as one big byte slice (json.Marshal would double peak memory).
// The document is the same JSON as json.Marshal(res).
func WriteJSON(w io.Writer, res *compiles.Result) error {
	bw := bufio.NewWriterSize(w, 256<<10)
	v := reflect.ValueOf(res).Elem()
	t := v.Type()
	bw.WriteString("{")
	first := true
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" || name == "" {
			continue
		}
		if strings.Contains(opts, "omitempty") && isEmpty(v.Field(i)) {
			continue
		}
		if !first {
			bw.WriteString(",")
		}
		first = false
		key, _ := json.Marshal(name)
		bw.WriteString("\n")
		bw.Write(key)
		bw.WriteString(": ")
		fv := v.Field(i)
		if fv.Kind() == reflect.Slice && !fv.IsNil() {
			bw.WriteString("[")
			if err := writeElements(bw, fv); err != nil {
				return err
			}
			if fv.Len() > 0 {
				bw.WriteString("\n")
			}
			bw.WriteString("]")
			continue
		}
		b, err := json.Marshal(fv.Interface())
		if err != nil {
			return err
		}
		bw.Write(b)
	}
	bw.WriteString("\n}\n")
	return bw.Flush()
}

// jsonChunk is how many array elements one goroutine marshals at a time.
const jsonChunk = 512

// writeElements writes the elements of a slice, one per line, each
// preceded by ",\n" (the first by "\n"). Long slices (the phases and
// compiles of a huge trace: most of a 50 MB document) are marshalled in
// chunks on GOMAXPROCS goroutines and written in order; at most two chunks
// per goroutine are in flight, so memory stays bounded.
func writeElements(bw *bufio.Writer, fv reflect.Value) error {
	n := fv.Len()
	marshal := func(buf []byte, from, to int) ([]byte, error) {
		for j := from; j < to; j++ {
			if j > 0 {
				buf = append(buf, ',')
			}
			buf = append(buf, '\n')
			b, err := json.Marshal(fv.Index(j).Interface())
			if err != nil {
				return buf, err
			}
			buf = append(buf, b...)
		}
		return buf, nil
	}
	workers := runtime.GOMAXPROCS(0)
	if n <= jsonChunk || workers < 2 {
		b, err := marshal(nil, 0, n)
		bw.Write(b)
		return err
	}
	type chunk struct {
		from, to int
		buf      []byte
		err      error
		done     chan struct{}
	}
	order := make(chan *chunk, 2*workers) // chunks in output order
	jobs := make(chan *chunk, 2*workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range jobs {
				c.buf, c.err = marshal(nil, c.from, c.to)
				close(c.done)
			}
		}()
	}
	go func() {
		for from := 0; from < n; from += jsonChunk {
			c := &chunk{from: from, to: min(from+jsonChunk, n), done: make(chan struct{})}
			order <- c
			jobs <- c
		}
		close(order)
		close(jobs)
	}()
	var err error
	for c := range order {
		<-c.done
		if err == nil {
			err = c.err
		}
		if err == nil {
			bw.Write(c.buf)
		}
	}
	wg.Wait()
	return err
}

// isEmpty is encoding/json's omitempty test.
func isEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Pointer, reflect.Interface:
		return v.IsNil()
	}
	return v.IsZero()
}
