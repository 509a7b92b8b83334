package compiles

import (
	"bufio"
	"encoding/json"
	"io"
	"reflect"
	"strings"
)

// WriteJSON writes res as the bringup.trace/v1 document, streaming: one
// top-level key per line and one array element per line, each marshalled
// on its own, so a result with hundreds of thousands of phases never
// exists as one big byte slice (json.Marshal would double peak memory).
// The document is the same JSON as json.Marshal(res).
func WriteJSON(w io.Writer, res *Result) error {
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
			for j := 0; j < fv.Len(); j++ {
				if j > 0 {
					bw.WriteString(",")
				}
				bw.WriteString("\n")
				b, err := json.Marshal(fv.Index(j).Interface())
				if err != nil {
					return err
				}
				bw.Write(b)
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
