package compiles

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzMetricsSubset: decoding the subset metricsSubset keeps gives the
// same metricsRec, and the same success, as decoding the whole record
// (dynamo_config aside when it is dropped).
func FuzzMetricsSubset(f *testing.F) {
	for _, s := range []string{
		`{"co_name": "forward", "co_filename": "/m.py", "co_firstlineno": 10, "cache_size": 1, "guard_count": 3, "graph_op_count": 7, "fail_type": null, "dynamo_config": "{\"recompile_limit\": 8}", "duration_us": 1500, "unused": [1, {"a": 2}], "restart_reasons": ["x"]}`,
		`{"CO_NAME": "f", "Co_Filename": "g", "co_name": "h", "co_name": 5}`,
		`{"co\u005fname": "esc", "c\u00f6_name": 1, "fail_type": "BackendCompilerFailed", "fail_reason": "boom", "fail_user_frame_lineno": "x"}`,
		`{"dynamo_config": 5}`, `{"dynamo_config": null, "duration_us": "slow"}`, `{}`, `null`, `[1]`, `{"cache_size": 1.5}`,
		`{"ſtack": 1, "\u212aey": 2, "gc_time_us": 3e3}`,
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, b []byte, drop bool) {
		if !json.Valid(b) {
			return // the scanner hands over validated metadata only
		}
		var whole, part metricsRec
		errWhole := json.Unmarshal(b, &whole)
		sub, ok := metricsSubset(b, nil, drop)
		if !ok {
			return // not an object: metrics decodes the whole record
		}
		errPart := json.Unmarshal(sub, &part)
		if (errWhole == nil) != (errPart == nil) {
			t.Fatalf("%q: whole record error %v, subset %q error %v", b, errWhole, sub, errPart)
		}
		if errWhole != nil {
			return
		}
		if drop {
			whole.DynamoConfig, part.DynamoConfig = nil, nil
		}
		if !reflect.DeepEqual(whole, part) {
			t.Fatalf("%q: subset %q decodes differently:\nwhole  %+v\nsubset %+v", b, sub, whole, part)
		}
	})
}
