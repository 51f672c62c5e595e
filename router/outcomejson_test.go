package router

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// outcomeFields is Outcome without its MarshalJSON: encoding/json encodes it by reflection.
type outcomeFields Outcome

func reflected(o *Outcome) ([]byte, error) { return json.Marshal((*outcomeFields)(o)) }

// TestOutcomeJSON checks the hand-written encoding against encoding/json's on the empty
// outcome, on one with every field of every nested type set, and on outcomes with a random half
// of the fields set (so each omitempty is seen both ways). A field added to any of the outcome's
// types without its line in outcomejson.go fails the full case.
func TestOutcomeJSON(t *testing.T) {
	check := func(t *testing.T, o *Outcome) {
		t.Helper()
		want, err := reflected(o)
		if err != nil {
			t.Fatalf("encoding/json: %v", err)
		}
		got, err := o.MarshalJSON()
		if err != nil {
			t.Fatalf("MarshalJSON: %v", err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("got\n%s\nwant\n%s", got, want)
		}
		// Through encoding/json (a nested outcome, the streams' complete event) it is the same.
		if via, err := json.Marshal(o); err != nil || !bytes.Equal(via, want) {
			t.Fatalf("json.Marshal: %v\n%s", err, via)
		}
	}
	t.Run("empty", func(t *testing.T) { check(t, &Outcome{}) })
	t.Run("nil", func(t *testing.T) {
		var o *Outcome
		want, _ := json.Marshal((*outcomeFields)(o))
		if got, err := o.AppendJSON(nil); err != nil || !bytes.Equal(got, want) {
			t.Errorf("got %s, %v; want %s", got, err, want)
		}
	})
	t.Run("every field", func(t *testing.T) {
		var o Outcome
		fill(t, reflect.ValueOf(&o).Elem(), rand.New(rand.NewPCG(1, 2)), 1)
		check(t, &o)
	})
	r := rand.New(rand.NewPCG(3, 4))
	for range 300 {
		var o Outcome
		fill(t, reflect.ValueOf(&o).Elem(), r, 0.5)
		check(t, &o)
	}
	t.Run("NaN", func(t *testing.T) {
		o := Outcome{Calls: []Call{{ExecuteMS: math.NaN()}}}
		if _, err := o.MarshalJSON(); err == nil {
			t.Error("NaN encoded")
		}
		if _, err := reflected(&o); err == nil {
			t.Error("encoding/json encoded NaN")
		}
	})
	t.Run("invalid number", func(t *testing.T) {
		o := Outcome{Arguments: map[string]any{"n": json.Number("1.")}}
		if _, err := o.MarshalJSON(); err == nil {
			t.Error("invalid json.Number encoded")
		}
	})
}

var (
	sampleStrings = []string{"", "calculator", "<a href=\"x\">&amp;</a>", "tab\tnl\n\x01\x7f", "é東京\u2028\u2029", "a\xffb"}
	sampleFloats  = []float64{0, 0.545, 1, 12.5, 1e-7, 1e21, 123456789.125, -3.25}
	sampleValues  = []any{nil, true, "x<y", 2.5, json.Number("9007199254740993"), json.Number("-0.5e-3"),
		map[string]any{"b": []any{1.0, "2", nil}, "a": map[string]any{}}, []any{}, []any(nil), map[string]any(nil)}
)

// fill sets each settable field of v with probability p (every one when p is 1) to a value that
// exercises its encoding, and fails on a kind it does not know.
func fill(t testing.TB, v reflect.Value, r *rand.Rand, p float64) {
	t.Helper()
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Date(2026, 11, 26, 12, 0, 0, r.IntN(1e9), time.UTC)))
			return
		}
		for i := range v.NumField() {
			if f := v.Field(i); f.CanSet() && (p >= 1 || r.Float64() < p) {
				fill(t, f, r, p)
			}
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(t, v.Elem(), r, p)
	case reflect.Slice:
		n := 1 + r.IntN(2)
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			fill(t, s.Index(i), r, p)
		}
		v.Set(s)
	case reflect.Map, reflect.Interface:
		m := map[string]any{}
		for range 1 + r.IntN(4) {
			m[sampleStrings[r.IntN(len(sampleStrings))]] = sampleValues[r.IntN(len(sampleValues))]
		}
		v.Set(reflect.ValueOf(m))
	case reflect.String:
		v.SetString(sampleStrings[1+r.IntN(len(sampleStrings)-1)])
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int:
		v.SetInt(1 + r.Int64N(100000))
	case reflect.Float64:
		v.SetFloat(sampleFloats[1+r.IntN(len(sampleFloats)-1)])
	default:
		t.Fatalf("fill: no sample for a %s (%s)", v.Kind(), v.Type())
	}
}

// oneCall is the outcome of "what is 2 plus 3?" routed to calculator.add, as /v1/route answers it.
const oneCall = `{"request_id":"264764e4c3dc752b","identity":"default","use_tool":true,"server":"calculator","tool":"add","reasoning":"r","arguments":{"a":2,"b":3},"result":{"text":"5","is_error":false},"direct":true,"calls":[{"step":1,"round":1,"task":"add","server":"calculator","tool":"add","arguments":{"a":2,"b":3},"result":{"text":"5","is_error":false},"arguments_ms":0.062,"execute_ms":0.001}],"rounds":1,"stopped":"done","trace":[{"index":1,"kind":"select","round":1,"model":"fake","start_ms":0.545,"duration_ms":0.022,"estimated_tokens":1772,"load_ms":0,"prefill_ms":0,"decode_ms":0,"rest_ms":0,"uncached_prompt_tokens":0,"detail":"calculator.add"},{"index":2,"kind":"arguments","round":1,"call":1,"tool":"calculator.add","model":"fake","start_ms":0.661,"duration_ms":0.001,"estimated_tokens":350,"load_ms":0,"prefill_ms":0,"decode_ms":0,"rest_ms":0,"uncached_prompt_tokens":0},{"index":3,"kind":"execute","round":1,"call":1,"tool":"calculator.add","start_ms":0.679,"duration_ms":0.001}],"timings_ms":{"select":0.022,"arguments":0.001,"execute":0.001,"total":0.686},"usage":{"llm_calls":2,"prompt_tokens":0,"completion_tokens":0,"load_ms":0,"prefill_ms":0,"decode_ms":0,"rest_ms":0,"uncached_prompt_tokens":0}}`

// BenchmarkOutcomeJSON encodes a one-call outcome as /v1/route answers it.
//
//	go test -run '^$' -bench OutcomeJSON -benchmem ./router/
func BenchmarkOutcomeJSON(b *testing.B) {
	var o Outcome
	if err := json.Unmarshal([]byte(oneCall), &o); err != nil {
		b.Fatal(err)
	}
	if got, _ := o.MarshalJSON(); string(got) != oneCall {
		b.Fatalf("got %s", got)
	}
	buf := make([]byte, 0, 4096)
	b.Run("hand-written", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if _, err := o.AppendJSON(buf[:0]); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if _, err := reflected(&o); err != nil {
				b.Fatal(err)
			}
		}
	})
}
