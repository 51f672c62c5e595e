// Package tinymodel writes tiny qwen3-architecture GGUF models with seeded random weights and
// Qwen3's real tokenizer, so tests can run a real Ollama server on a CPU in seconds and count real
// tokens. What such a model says is meaningless: its weights are random.
//
// The plain variant is random throughout. The "json" variant's output head prefers, in this order,
// the end of turn, JSON punctuation, the tokens of chosen tool names, digits and "true", so an
// answer under a JSON-Schema format closes its strings at once, names the favoured tool in an enum
// and stops after a few dozen tokens; and it follows one fixed thinking chain (<think> → Okay →
// </think> → {), so a request with thinking on ends its thinking and gets its structured answer.
// Nothing else about it is trained: it routes every query to the favoured tool.
//
// It owns the model file and its Modelfile; building and serving Ollama is scripts/real-ollama's.
package tinymodel

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"strings"

	"github.com/ollama/ollama/fs/ggml"
)

// Options shape a model. The zero value of a field takes Default's.
type Options struct {
	Embedding     int // hidden size
	Layers        int
	Heads         int
	KVHeads       int
	HeadDim       int
	FeedForward   int
	ContextLength int // trained context length the model reports
	Seed          uint64
	// Favour makes the json variant: the tool names (e.g. "calculator.add") whose tokens its
	// output head prefers. Empty: the plain, wholly random variant.
	Favour []string
}

// Default is a 2-layer model with a 64-wide hidden state, about 20 M parameters, nearly all of
// them the embedding and output matrices of Qwen3's 151,669 tokens.
var Default = Options{Embedding: 64, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 16, FeedForward: 128,
	ContextLength: 262144, Seed: 1}

// Output-head biases of the json variant, in logits. Under a grammar only the allowed tokens
// compete, so the order decides: the end of turn beats everything (free text ends at once, a
// constrained answer as soon as it is complete); '"' and '{' beat the other punctuation, so strings
// close empty, and '{' beats ']', so arrays get one item; ']' and '}' beat ',', so arrays and objects close rather
// than grow; any punctuation beats a name token, and a name token beats a digit, and a digit
// "true". Only single-character punctuation tokens are favoured, so merged ones ("[]", "],")
// never short-cut the order.
const (
	biasEnd      = 30
	biasQuote    = 24
	biasOpen     = 22 // {
	biasClose    = 20 // } ] [ :
	biasComma    = 18
	biasNameBase = 8 // + the token's length, at most biasNameMax
	biasNameMax  = 16
	biasDigit    = 6
	biasTrue     = 4
	// jsonOutputStd is the spread of the json variant's random output weights: its logits vary
	// with the context by about 0.02, far less than the 2 between bias levels, so the order holds
	// everywhere. (The plain variant's are 0.02, logits varying by about 0.2.)
	jsonOutputStd = 0.002
	// chainLogit is what a thinking-chain token adds to its successor's logit: more than biasEnd.
	chainLogit = 40
)

// thinkChain is the json variant's one learned sequence, each token followed by the next.
var thinkChain = []string{"<think>", "Okay", "</think>", "{"}

// Write writes the model to path.
func Write(path string, v *Vocab, o Options) error {
	o = withDefaults(o)
	if o.Heads*o.HeadDim <= 0 || o.Heads%o.KVHeads != 0 {
		return fmt.Errorf("heads %d, kv heads %d: want kv heads dividing heads", o.Heads, o.KVHeads)
	}
	kv, err := metadata(v, o)
	if err != nil {
		return err
	}
	ts, err := tensors(v, o)
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("creating model file: %w", err)
	}
	if err := ggml.WriteGGUF(f, kv, ts); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

func withDefaults(o Options) Options {
	d := Default
	def := func(v *int, dv int) {
		if *v == 0 {
			*v = dv
		}
	}
	def(&o.Embedding, d.Embedding)
	def(&o.Layers, d.Layers)
	def(&o.Heads, d.Heads)
	def(&o.KVHeads, d.KVHeads)
	def(&o.HeadDim, d.HeadDim)
	def(&o.FeedForward, d.FeedForward)
	def(&o.ContextLength, d.ContextLength)
	if o.Seed == 0 {
		o.Seed = d.Seed
	}
	return o
}

// specialIDs are the tokens the tokenizer keys name.
type specialIDs struct{ endOfText, imEnd int }

func specials(v *Vocab) (specialIDs, error) {
	var s specialIDs
	var ok bool
	if s.endOfText, ok = v.ID("<|endoftext|>"); !ok {
		return s, fmt.Errorf("vocabulary has no <|endoftext|>")
	}
	if s.imEnd, ok = v.ID("<|im_end|>"); !ok {
		return s, fmt.Errorf("vocabulary has no <|im_end|>")
	}
	return s, nil
}

func metadata(v *Vocab, o Options) (ggml.KV, error) {
	sp, err := specials(v)
	if err != nil {
		return nil, err
	}
	name := "toolrouter-tiny"
	if len(o.Favour) > 0 {
		name += "-json"
	}
	return ggml.KV{
		"general.architecture": "qwen3",
		"general.name":         name,
		"general.description": "random weights, meaningless answers; output head favours: " +
			strings.Join(o.Favour, ", "),
		"general.file_type":                      uint32(0), // all F32
		"qwen3.block_count":                      uint32(o.Layers),
		"qwen3.context_length":                   uint32(o.ContextLength),
		"qwen3.embedding_length":                 uint32(o.Embedding),
		"qwen3.feed_forward_length":              uint32(o.FeedForward),
		"qwen3.attention.head_count":             uint32(o.Heads),
		"qwen3.attention.head_count_kv":          uint32(o.KVHeads),
		"qwen3.attention.key_length":             uint32(o.HeadDim),
		"qwen3.attention.value_length":           uint32(o.HeadDim),
		"qwen3.attention.layer_norm_rms_epsilon": float32(1e-6),
		"qwen3.rope.freq_base":                   float32(1e6),
		"tokenizer.ggml.model":                   "gpt2",
		"tokenizer.ggml.pre":                     "qwen2",
		"tokenizer.ggml.tokens":                  v.Tokens,
		"tokenizer.ggml.token_type":              v.Types,
		"tokenizer.ggml.merges":                  v.Merges,
		"tokenizer.ggml.eos_token_id":            uint32(sp.imEnd),
		"tokenizer.ggml.eos_token_ids":           []int32{int32(sp.imEnd), int32(sp.endOfText)},
		"tokenizer.ggml.bos_token_id":            uint32(sp.endOfText),
		"tokenizer.ggml.padding_token_id":        uint32(sp.endOfText),
		"tokenizer.ggml.add_bos_token":           false,
		"tokenizer.ggml.add_eos_token":           false,
	}, nil
}

// f32 is an F32 tensor's data.
type f32 []float32

func (d f32) WriteTo(w io.Writer) (int64, error) {
	if err := binary.Write(w, binary.LittleEndian, []float32(d)); err != nil {
		return 0, err
	}
	return int64(4 * len(d)), nil
}

// tensors builds the weights. Matrices are stored as GGUF shapes them, [in, out], one row of
// `in` values per output. With the thinking chain, the last len(thinkChain) hidden dimensions are
// reserved for it: only a chain token's embedding is non-zero there (one dimension each), no layer
// writes there, and only a chain successor's output row reads there, so the chain steers nothing
// else and nothing else disturbs it.
func tensors(v *Vocab, o Options) ([]*ggml.Tensor, error) {
	d, nv := o.Embedding, len(v.Tokens)
	json := len(o.Favour) > 0
	reserved := 0
	if json {
		reserved = len(thinkChain) - 1
	}
	free := d - reserved
	if free < d/2 {
		return nil, fmt.Errorf("embedding %d is too small", d)
	}
	seq := uint64(0)
	random := func(n int, std float64) f32 {
		seq++
		r := rand.New(rand.NewPCG(o.Seed, seq))
		out := make(f32, n)
		for i := range out {
			out[i] = float32(r.NormFloat64() * std)
		}
		return out
	}
	ones := func(n int) f32 {
		out := make(f32, n)
		for i := range out {
			out[i] = 1
		}
		return out
	}
	clearRows := func(w f32, in int) { // no output to the reserved dimensions
		for j := free; j < d; j++ {
			clear(w[j*in : (j+1)*in])
		}
	}
	var ts []*ggml.Tensor
	add := func(name string, data f32, shape ...uint64) {
		ts = append(ts, &ggml.Tensor{Name: name, Kind: 0, Shape: shape, WriterTo: data})
	}
	const std = 0.02
	qd, kvd := o.Heads*o.HeadDim, o.KVHeads*o.HeadDim

	embd := random(nv*d, 1)
	outStd := std
	if json {
		outStd = jsonOutputStd
	}
	out := random(nv*d, outStd)
	for t := range nv {
		clear(embd[t*d+free : (t+1)*d])
		clear(out[t*d+free : (t+1)*d])
	}
	add("token_embd.weight", embd, uint64(d), uint64(nv))
	add("output_norm.weight", ones(d), uint64(d))
	for i := range o.Layers {
		p := fmt.Sprintf("blk.%d.", i)
		add(p+"attn_norm.weight", ones(d), uint64(d))
		add(p+"attn_q.weight", random(d*qd, std), uint64(d), uint64(qd))
		add(p+"attn_k.weight", random(d*kvd, std), uint64(d), uint64(kvd))
		add(p+"attn_v.weight", random(d*kvd, std), uint64(d), uint64(kvd))
		add(p+"attn_q_norm.weight", ones(o.HeadDim), uint64(o.HeadDim))
		add(p+"attn_k_norm.weight", ones(o.HeadDim), uint64(o.HeadDim))
		ao := random(qd*d, std)
		clearRows(ao, qd)
		add(p+"attn_output.weight", ao, uint64(qd), uint64(d))
		add(p+"ffn_norm.weight", ones(d), uint64(d))
		add(p+"ffn_gate.weight", random(d*o.FeedForward, std), uint64(d), uint64(o.FeedForward))
		add(p+"ffn_up.weight", random(d*o.FeedForward, std), uint64(d), uint64(o.FeedForward))
		down := random(o.FeedForward*d, std)
		clearRows(down, o.FeedForward)
		add(p+"ffn_down.weight", down, uint64(o.FeedForward), uint64(d))
	}
	if json {
		bias, err := favour(v, o.Favour)
		if err != nil {
			return nil, err
		}
		for k := range reserved {
			from, _ := v.ID(thinkChain[k])
			to, ok := v.ID(thinkChain[k+1])
			if !ok {
				return nil, fmt.Errorf("vocabulary has no token %q", thinkChain[k+1])
			}
			if _, ok := v.ID(thinkChain[k]); !ok {
				return nil, fmt.Errorf("vocabulary has no token %q", thinkChain[k])
			}
			dim := free + k
			// An embedding of one dimension with RMS 1: RMSNorm leaves it as it is.
			clear(embd[from*d : (from+1)*d])
			embd[from*d+dim] = float32(sqrt(d))
			out[to*d+dim] = float32(chainLogit / sqrt(d))
		}
		add("output.bias", bias, uint64(nv))
	}
	add("output.weight", out, uint64(d), uint64(nv))
	return ts, nil
}

func sqrt(n int) float64 { return math.Sqrt(float64(n)) }

// favour is the json variant's output bias (see the bias constants).
func favour(v *Vocab, names []string) (f32, error) {
	sp, err := specials(v)
	if err != nil {
		return nil, err
	}
	bias := make(f32, len(v.Tokens))
	set := func(s string, b float32) {
		if id, ok := v.ID(s); ok && bias[id] < b {
			bias[id] = b
		}
	}
	for _, n := range names {
		for i := range len(n) {
			for j := i + 2; j <= len(n); j++ {
				set(n[i:j], float32(min(biasNameBase+j-i, biasNameMax)))
			}
		}
	}
	for c := '0'; c <= '9'; c++ {
		set(string(c), biasDigit)
	}
	set("true", biasTrue)
	set(`"`, biasQuote)
	set("{", biasOpen)
	for _, s := range []string{"}", "]", "[", ":"} {
		set(s, biasClose)
	}
	set(",", biasComma)
	bias[sp.imEnd], bias[sp.endOfText] = biasEnd, biasEnd
	for _, s := range []string{`"`, "{", "}", "]", "[", ":", ",", "true", "0"} {
		if _, ok := v.ID(s); !ok {
			return nil, fmt.Errorf("vocabulary has no token %q", s)
		}
	}
	return bias, nil
}
