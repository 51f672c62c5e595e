package tinymodel

import (
	"encoding/binary"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ollama/ollama/fs/ggml"
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

// decode reads a written model back with Ollama's own GGUF decoder.
func decode(t *testing.T, path string) (*ggml.GGML, *os.File) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	g, err := ggml.Decode(f, -1)
	if err != nil {
		t.Fatalf("decoding %s: %v", path, err)
	}
	return g, f
}

// floats reads tensor name's F32 data.
func floats(t *testing.T, g *ggml.GGML, f *os.File, name string) []float32 {
	t.Helper()
	for _, tt := range g.Tensors().Items() {
		if tt.Name != name {
			continue
		}
		out := make([]float32, tt.Elements())
		r := io.NewSectionReader(f, int64(g.Tensors().Offset+tt.Offset), int64(4*len(out)))
		if err := binary.Read(r, binary.LittleEndian, out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	t.Fatalf("no tensor %s", name)
	return nil
}

func TestWrite(t *testing.T) {
	v, err := LoadVocab(filepath.Join("testdata", "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		favour   []string
		wantBias bool
	}{
		{name: "plain"},
		{name: "json", favour: []string{"calculator.add"}, wantBias: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "m.gguf")
			if err := Write(path, v, Options{Favour: tc.favour, ContextLength: 4096}); err != nil {
				t.Fatal(err)
			}
			g, f := decode(t, path)
			kv := g.KV()
			if got := kv.Architecture(); got != "qwen3" {
				t.Errorf("got architecture %q, want qwen3", got)
			}
			if got := kv.ContextLength(); got != 4096 {
				t.Errorf("got context length %d, want 4096", got)
			}
			if got := kv.Strings("tokenizer.ggml.tokens"); !slices.Equal(got, v.Tokens) {
				t.Errorf("got %d tokens, want the vocabulary's %d", len(got), len(v.Tokens))
			}
			if got := kv.String("tokenizer.ggml.pre"); got != "qwen2" {
				t.Errorf("got pre-tokenizer %q, want qwen2", got)
			}
			if kv.Bool("tokenizer.ggml.add_bos_token", true) {
				t.Error("got add_bos_token true, want false (Qwen adds no BOS)")
			}
			end, _ := v.ID("<|im_end|>")
			if got := kv.Uint("tokenizer.ggml.eos_token_id"); int(got) != end {
				t.Errorf("got eos %d, want <|im_end|> %d", got, end)
			}
			names := map[string][]uint64{}
			for _, tt := range g.Tensors().Items() {
				names[tt.Name] = tt.Shape
			}
			d, n := uint64(Default.Embedding), uint64(len(v.Tokens))
			for name, want := range map[string][]uint64{
				"token_embd.weight":        {d, n},
				"output.weight":            {d, n},
				"blk.1.attn_q.weight":      {d, uint64(Default.Heads * Default.HeadDim)},
				"blk.1.attn_k.weight":      {d, uint64(Default.KVHeads * Default.HeadDim)},
				"blk.1.ffn_down.weight":    {uint64(Default.FeedForward), d},
				"blk.0.attn_q_norm.weight": {uint64(Default.HeadDim)},
			} {
				if got := names[name]; !slices.Equal(got, want) {
					t.Errorf("tensor %s: got shape %v, want %v", name, got, want)
				}
			}
			if _, ok := names["output.bias"]; ok != tc.wantBias {
				t.Fatalf("got output.bias present=%v, want %v", ok, tc.wantBias)
			}
			if tc.wantBias {
				checkBias(t, v, floats(t, g, f, "output.bias"))
				checkChain(t, v, floats(t, g, f, "token_embd.weight"), floats(t, g, f, "output.weight"))
			}
		})
	}
}

// checkBias: the order that makes constrained answers short and name the favoured tool.
func checkBias(t *testing.T, v *Vocab, bias []float32) {
	t.Helper()
	of := func(s string) float32 {
		id, ok := v.ID(s)
		if !ok {
			t.Fatalf("no token %q", s)
		}
		return bias[id]
	}
	order := []string{"<|im_end|>", `"`, "{", "]", ",", "calculator", "cal", "7", "true", "false"}
	for i := 1; i < len(order); i++ {
		if a, b := of(order[i-1]), of(order[i]); a <= b {
			t.Errorf("got bias %q=%v ≤ %q=%v, want it greater", order[i-1], a, order[i], b)
		}
	}
	if of("}") != of("]") || of("clock") != 0 || of("the") != 0 {
		t.Errorf("got bias } %v, ] %v, clock %v, the %v; want } as ], clock and the 0", of("}"), of("]"), of("clock"), of("the"))
	}
}

// checkChain: after each thinking-chain token, its successor's logit is chainLogit, and no other
// token's embedding reaches the chain's dimensions.
func checkChain(t *testing.T, v *Vocab, embd, out []float32) {
	t.Helper()
	d := Default.Embedding
	free := d - (len(thinkChain) - 1)
	row := func(m []float32, id int) []float32 { return m[id*d : (id+1)*d] }
	for k := range len(thinkChain) - 1 {
		from, _ := v.ID(thinkChain[k])
		to, _ := v.ID(thinkChain[k+1])
		e := row(embd, from)
		var logit float64
		for i := range d {
			logit += float64(e[i]) * float64(row(out, to)[i])
		}
		if math.Abs(logit-chainLogit) > 1e-3 {
			t.Errorf("%s → %s: got logit %.3f, want %d", thinkChain[k], thinkChain[k+1], logit, chainLogit)
		}
	}
	the, _ := v.ID("the")
	for i := free; i < d; i++ {
		if row(embd, the)[i] != 0 {
			t.Fatalf("token 'the' has %v in reserved dimension %d, want 0", row(embd, the)[i], i)
		}
	}
}

func TestModelfile(t *testing.T) {
	tests := []struct {
		name     string
		thinking bool
		want     []string
		wantNot  []string
	}{
		{name: "plain", want: []string{"FROM /m/tiny.gguf\n", "<tool_call>", "PARAMETER stop <|im_end|>"}, wantNot: []string{".Thinking"}},
		{name: "thinking", thinking: true, want: []string{"<think>{{ .Thinking }}</think>", "$.IsThinkSet"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Modelfile("/m/tiny.gguf", tc.thinking)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("Modelfile lacks %q:\n%s", w, got)
				}
			}
			for _, w := range tc.wantNot {
				if strings.Contains(got, w) {
					t.Errorf("Modelfile has %q, want it absent", w)
				}
			}
		})
	}
}
