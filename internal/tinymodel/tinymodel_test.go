package tinymodel

import (
	"encoding/binary"
	"fmt"
	"io"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ollama/ollama/fs/gguf"
)

func TestLoadVocab(t *testing.T) {
	tests := []struct {
		name    string
		file    string
		wantErr string
	}{
		{name: "pairs of merges", file: "tokenizer.json"},
		{name: "a gap in the ids", file: "gap.json", wantErr: "no token has id"},
		{name: "missing file", file: "absent.json", wantErr: "reading tokenizer"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, err := LoadVocab(filepath.Join("testdata", tc.file))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got, want := v.Merges, []string{"c a", "ca l", "a d", "ad d"}; !slices.Equal(got, want) {
				t.Errorf("got merges %q, want %q", got, want)
			}
			for tok, want := range map[string]int32{"calc": tokenNormal, "<|im_end|>": tokenControl, "<think>": tokenUserDefined} {
				id, ok := v.ID(tok)
				if !ok || v.Types[id] != want || v.Tokens[id] != tok {
					t.Errorf("token %q: got id %d (%v) type %d, want type %d", tok, id, ok, v.Types[id], want)
				}
			}
		})
	}
}

// qwen3Tensors is the tensor set llama.cpp's qwen3 loader creates (src/models/qwen3.cpp), with
// GGUF shapes: it refuses a file with any other tensor.
func qwen3Tensors(o Options, nv int) map[string][]uint64 {
	d, qd, kvd := uint64(o.Embedding), uint64(o.Heads*o.HeadDim), uint64(o.KVHeads*o.HeadDim)
	hd, ff, n := uint64(o.HeadDim), uint64(o.FeedForward), uint64(nv)
	want := map[string][]uint64{
		"token_embd.weight":  {d, n},
		"output_norm.weight": {d},
		"output.weight":      {d, n},
	}
	for i := range o.Layers {
		for name, shape := range map[string][]uint64{
			"attn_norm": {d}, "attn_q": {d, qd}, "attn_k": {d, kvd}, "attn_v": {d, kvd},
			"attn_output": {qd, d}, "attn_q_norm": {hd}, "attn_k_norm": {hd},
			"ffn_norm": {d}, "ffn_gate": {d, ff}, "ffn_up": {d, ff}, "ffn_down": {ff, d},
		} {
			want[fmt.Sprintf("blk.%d.%s.weight", i, name)] = shape
		}
	}
	return want
}

// model is a written model read back with Ollama's own GGUF reader.
type model struct {
	md    *gguf.Model
	f     *gguf.File
	o     Options
	nv    int
	embd  []float32
	out   []float32
	layer layout
}

// read reads path as Ollama does when it schedules a model (llm.LoadModel is gguf.ReadModel,
// which also checks every tensor's data lies in the file), and tensor data through gguf.Open.
func read(t *testing.T, path string, o Options, nv int) *model {
	t.Helper()
	md, err := gguf.ReadModel(path, -1)
	if err != nil {
		t.Fatalf("reading %s with Ollama's reader: %v", path, err)
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatalf("opening %s: %v", path, err)
	}
	t.Cleanup(func() { f.Close() })
	m := &model{md: md, f: f, o: o, nv: nv, layer: layoutOf(o)}
	m.embd, m.out = m.floats(t, "token_embd.weight"), m.floats(t, "output.weight")
	return m
}

func (m *model) floats(t *testing.T, name string) []float32 {
	t.Helper()
	ti, r, err := m.f.TensorReader(name)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]float32, ti.NumValues())
	if err := binary.Read(r, binary.LittleEndian, out); err != nil {
		t.Fatalf("reading %s: %v", name, err)
	}
	return out
}

func (m *model) row(w []float32, id int) []float32 {
	d := m.o.Embedding
	return w[id*d : (id+1)*d]
}

// hidden is token id's embedding after the final RMSNorm (weight 1), the layers left out: they
// write nothing to the reserved dimensions (checkReserved) and little elsewhere.
func (m *model) hidden(id int) []float64 {
	e := m.row(m.embd, id)
	var ss float64
	for _, x := range e {
		ss += float64(x) * float64(x)
	}
	rms := math.Sqrt(ss/float64(len(e)) + 1e-6)
	h := make([]float64, len(e))
	for i, x := range e {
		h[i] = float64(x) / rms
	}
	return h
}

// logits after context token id, the layers left out.
func (m *model) logits(id int) []float64 {
	h := m.hidden(id)
	out := make([]float64, m.nv)
	for v := range out {
		for i, w := range m.row(m.out, v) {
			out[v] += float64(w) * h[i]
		}
	}
	return out
}

// bias is the json variant's effective output bias: output.weight's column B times B's value
// after the final norm, read from an ordinary token's embedding.
func (m *model) bias(t *testing.T, v *Vocab) []float64 {
	t.Helper()
	the, _ := v.ID("the")
	b := m.hidden(the)[m.layer.bias]
	out := make([]float64, m.nv)
	for id := range out {
		out[id] = float64(m.row(m.out, id)[m.layer.bias]) * b
	}
	return out
}

func TestWrite(t *testing.T) {
	v, err := LoadVocab(filepath.Join("testdata", "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		favour []string
	}{
		{name: "plain"},
		{name: "json", favour: []string{"calculator.add"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "m.gguf")
			o := Options{Favour: tc.favour, ContextLength: 4096}
			if err := Write(path, v, o); err != nil {
				t.Fatal(err)
			}
			m := read(t, path, withDefaults(o), len(v.Tokens))
			checkMetadata(t, m.md.KV(), v)
			checkLayout(t, m)
			if len(tc.favour) == 0 {
				checkRandom(t, m)
				return
			}
			checkReserved(t, m)
			checkBias(t, v, m.bias(t, v))
			checkContexts(t, v, m)
			checkChain(t, v, m)
		})
	}
}

func checkMetadata(t *testing.T, kv *gguf.Metadata, v *Vocab) {
	t.Helper()
	if got := kv.Architecture(); got != "qwen3" {
		t.Errorf("got architecture %q, want qwen3", got)
	}
	if got := kv.ContextLength(); got != 4096 {
		t.Errorf("got context length %d, want 4096", got)
	}
	if got := kv.KeyValue("tokenizer.ggml.tokens").Strings(); !slices.Equal(got, v.Tokens) {
		t.Errorf("got %d tokens, want the vocabulary's %d", len(got), len(v.Tokens))
	}
	if got := kv.KeyValue("tokenizer.ggml.merges").Strings(); !slices.Equal(got, v.Merges) {
		t.Errorf("got merges %q, want %q", got, v.Merges)
	}
	end, _ := v.ID("<|im_end|>")
	if got := kv.KeyValue("tokenizer.ggml.token_type").Ints(); len(got) != len(v.Types) || got[end] != int64(tokenControl) {
		t.Errorf("got token types %v, want %d of them, <|im_end|> a control token", got, len(v.Types))
	}
	if got := kv.String("tokenizer.ggml.pre"); got != "qwen2" {
		t.Errorf("got pre-tokenizer %q, want qwen2", got)
	}
	if kv.Bool("tokenizer.ggml.add_bos_token", true) {
		t.Error("got add_bos_token true, want false (Qwen adds no BOS)")
	}
	if got := kv.Uint("tokenizer.ggml.eos_token_id"); int(got) != end {
		t.Errorf("got eos %d, want <|im_end|> %d", got, end)
	}
	if got := kv.KeyValue("attention.layer_norm_rms_epsilon").Float(); math.Abs(got-1e-6) > 1e-12 {
		t.Errorf("got rms epsilon %v, want 1e-6", got)
	}
	if got := kv.FileType(); got != gguf.FileTypeF32 {
		t.Errorf("got file type %v, want F32", got)
	}
}

// checkLayout: exactly llama.cpp's qwen3 tensors, all F32, laid out as llama.cpp's gguf.cpp
// insists: each offset the sum of the padded sizes before it, the data section aligned to 32.
func checkLayout(t *testing.T, m *model) {
	t.Helper()
	got := map[string][]uint64{}
	var next uint64
	for _, ti := range m.md.Tensors().Items() {
		got[ti.Name] = ti.Shape
		if ti.Type != gguf.TensorTypeF32 {
			t.Errorf("tensor %s: got type %v, want F32", ti.Name, ti.Type)
		}
		if ti.Offset != next {
			t.Errorf("tensor %s: got offset %d, want %d", ti.Name, ti.Offset, next)
		}
		next += uint64(ti.NumBytes()+31) / 32 * 32
	}
	want := qwen3Tensors(m.o, m.nv)
	for _, name := range slices.Sorted(maps.Keys(want)) {
		if !slices.Equal(got[name], want[name]) {
			t.Errorf("tensor %s: got shape %v, want %v", name, got[name], want[name])
		}
	}
	for _, name := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[name]; !ok {
			t.Errorf("got tensor %s, which llama.cpp's qwen3 loader does not create", name)
		}
	}
	_, r, err := m.f.TensorReader("token_embd.weight")
	if err != nil {
		t.Fatal(err)
	}
	_, start, _ := r.(*io.SectionReader).Outer()
	if start%32 != 0 || uint64(start)+next != m.md.FileSize() {
		t.Errorf("got data at %d, %d bytes of it, in a file of %d; want it aligned to 32 and ending the file", start, next, m.md.FileSize())
	}
}

// checkRandom: the plain variant reserves nothing, every dimension of every embedding random.
func checkRandom(t *testing.T, m *model) {
	t.Helper()
	for i := range m.o.Embedding {
		distinct := map[float32]bool{}
		for id := range m.nv {
			distinct[m.row(m.embd, id)[i]] = true
		}
		if len(distinct) < m.nv {
			t.Fatalf("dimension %d: got %d distinct values over %d tokens, want all distinct", i, len(distinct), m.nv)
		}
	}
}

// checkReserved: no layer writes to the reserved dimensions (the rows of attn_output and
// ffn_down for them are zero), so what the embedding puts there reaches the final norm.
func checkReserved(t *testing.T, m *model) {
	t.Helper()
	for i := range m.o.Layers {
		for _, name := range []string{"attn_output", "ffn_down"} {
			name := fmt.Sprintf("blk.%d.%s.weight", i, name)
			w := m.floats(t, name)
			in := len(w) / m.o.Embedding
			for j := m.layer.free; j < m.o.Embedding; j++ {
				if slices.ContainsFunc(w[j*in:(j+1)*in], func(x float32) bool { return x != 0 }) {
					t.Errorf("%s writes to reserved dimension %d, want it not to", name, j)
				}
			}
		}
	}
}

// biasOrder is the preference order of the json variant: each token beats the next.
var biasOrder = []string{"<|im_end|>", `"`, "{", "]", ",", "calculator", "calc", "cal", "ca", "7", "true", "false"}

// checkBias: the order that makes constrained answers short and name the favoured tool.
func checkBias(t *testing.T, v *Vocab, bias []float64) {
	t.Helper()
	of := func(s string) float64 {
		id, ok := v.ID(s)
		if !ok {
			t.Fatalf("no token %q", s)
		}
		return bias[id]
	}
	for i := 1; i < len(biasOrder); i++ {
		if a, b := of(biasOrder[i-1]), of(biasOrder[i]); a < b+0.99 {
			t.Errorf("got bias %q=%.3f, %q=%.3f, want the first greater by 1 or more", biasOrder[i-1], a, biasOrder[i], b)
		}
	}
	if math.Abs(of("<|im_end|>")-biasEnd) > 1e-3 || of("}") != of("]") || of("clock") != 0 || of("the") != 0 {
		t.Errorf("got bias <|im_end|> %.4f, } %v, ] %v, clock %v, the %v; want %d, } as ], clock and the 0",
			of("<|im_end|>"), of("}"), of("]"), of("clock"), of("the"), biasEnd)
	}
}

// checkContexts: after every token but a chain token, each logit is its token's bias and a
// random part far smaller than the 1 between bias levels, so the order holds in every context.
func checkContexts(t *testing.T, v *Vocab, m *model) {
	t.Helper()
	bias := m.bias(t, v)
	chain := map[int]bool{}
	for _, s := range thinkChain[:len(thinkChain)-1] {
		id, _ := v.ID(s)
		chain[id] = true
	}
	const maxRandom = 0.25
	var worst float64
	for u := range m.nv {
		if chain[u] {
			continue
		}
		logits := m.logits(u)
		for id, l := range logits {
			worst = max(worst, math.Abs(l-bias[id]))
		}
		for i := 1; i < len(biasOrder); i++ {
			a, _ := v.ID(biasOrder[i-1])
			b, _ := v.ID(biasOrder[i])
			if logits[a] <= logits[b] {
				t.Errorf("after %q: got logit %q=%.3f ≤ %q=%.3f, want it greater", v.Tokens[u], biasOrder[i-1], logits[a], biasOrder[i], logits[b])
			}
		}
	}
	if worst > maxRandom {
		t.Errorf("got a random logit part of %.3f, want at most %v", worst, maxRandom)
	}
}

// checkChain: after each thinking-chain token, its successor's logit is chainLogit plus its
// bias, and it beats every other token by a wide margin.
func checkChain(t *testing.T, v *Vocab, m *model) {
	t.Helper()
	bias := m.bias(t, v)
	for k := range len(thinkChain) - 1 {
		from, _ := v.ID(thinkChain[k])
		to, _ := v.ID(thinkChain[k+1])
		logits := m.logits(from)
		if got := logits[to] - bias[to]; math.Abs(got-chainLogit) > 1e-3 {
			t.Errorf("%s → %s: got logit %.4f over the bias, want %d", thinkChain[k], thinkChain[k+1], got, chainLogit)
		}
		for id, l := range logits {
			if id != to && l > logits[to]-5 {
				t.Errorf("after %s: got %q at %.3f, within 5 of %s's %.3f", thinkChain[k], v.Tokens[id], l, thinkChain[k+1], logits[to])
			}
		}
	}
}
