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
// The json variant carries its preferences inside the tensors llama.cpp's qwen3 loader creates,
// because Ollama serves GGUF models with llama.cpp's llama-server, whose loader refuses a file
// with any other tensor ("wrong number of tensors"), an output.bias among them. A bias is a
// logit added whatever the context, so one hidden dimension B stands in for it: every token's
// embedding holds the same large constant at B, no layer writes there, and output.weight's
// column B holds each token's bias divided by the value B has after the final RMSNorm. The
// thinking chain works the same way on dimensions of its own (see tensors).
//
// It owns the model file and its Modelfile; building and serving Ollama is scripts/real-ollama's.
// The file is GGUF version 3, written by this package (gguf.go).
package tinymodel

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
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
	// jsonOutputStd is the spread of the json variant's random output weights. B takes nearly all
	// of the hidden state's RMS, so after the final norm the random dimensions hold a vector of
	// length about 0.96 (see tensors): the random logits vary with the context by about 0.02, far
	// less than the 1 to 2 between bias levels, so the order holds everywhere. (The plain
	// variant's weights are 0.02 too, but its hidden state is all random, of length about 8: its
	// logits vary by about 0.16.)
	jsonOutputStd = 0.02
	// chainLogit is what a thinking-chain token adds to its successor's logit: more than biasEnd.
	chainLogit = 40
	// biasScale sets the constant c at B to biasScale·sqrt(Embedding), so that B holds about
	// 98.6% of every hidden state's mean square and has the same value after the final norm
	// whatever the context (7.942 for Default; see postNorm).
	biasScale = 8
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
	err = writeGGUF(f, kv, ts)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
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

func metadata(v *Vocab, o Options) ([]keyValue, error) {
	sp, err := specials(v)
	if err != nil {
		return nil, err
	}
	name := "toolrouter-tiny"
	if len(o.Favour) > 0 {
		name += "-json"
	}
	return []keyValue{
		{"general.architecture", "qwen3"},
		{"general.name", name},
		{"general.description", "random weights, meaningless answers; output head favours: " +
			strings.Join(o.Favour, ", ")},
		{"general.file_type", uint32(0)}, // all F32
		{"qwen3.block_count", uint32(o.Layers)},
		{"qwen3.context_length", uint32(o.ContextLength)},
		{"qwen3.embedding_length", uint32(o.Embedding)},
		{"qwen3.feed_forward_length", uint32(o.FeedForward)},
		{"qwen3.attention.head_count", uint32(o.Heads)},
		{"qwen3.attention.head_count_kv", uint32(o.KVHeads)},
		{"qwen3.attention.key_length", uint32(o.HeadDim)},
		{"qwen3.attention.value_length", uint32(o.HeadDim)},
		{"qwen3.attention.layer_norm_rms_epsilon", float32(1e-6)},
		{"qwen3.rope.freq_base", float32(1e6)},
		{"tokenizer.ggml.model", "gpt2"},
		{"tokenizer.ggml.pre", "qwen2"},
		{"tokenizer.ggml.tokens", v.Tokens},
		{"tokenizer.ggml.token_type", v.Types},
		{"tokenizer.ggml.merges", v.Merges},
		{"tokenizer.ggml.eos_token_id", uint32(sp.imEnd)},
		{"tokenizer.ggml.eos_token_ids", []int32{int32(sp.imEnd), int32(sp.endOfText)}},
		{"tokenizer.ggml.bos_token_id", uint32(sp.endOfText)},
		{"tokenizer.ggml.padding_token_id", uint32(sp.endOfText)},
		{"tokenizer.ggml.add_bos_token", false},
		{"tokenizer.ggml.add_eos_token", false},
	}, nil
}

// layout is where the json variant keeps what it learned in the hidden state. Dimensions
// [0, free) are random; with the thinking chain and the bias, the last ones are reserved: chain+k
// for the k-th chain step, then bias, the dimension B. The plain variant reserves none.
type layout struct {
	d, free, chain, bias int
}

func layoutOf(o Options) layout {
	d := o.Embedding
	if len(o.Favour) == 0 {
		return layout{d: d, free: d, chain: -1, bias: -1}
	}
	free := d - (len(thinkChain) - 1) - 1
	return layout{d: d, free: free, chain: free, bias: d - 1}
}

// postNorm is what the final RMSNorm (weight 1) makes of the json variant's embeddings: every
// one has mean square (c² + free)/d, c = biasScale·sqrt(d) at B and a length of sqrt(free) in the
// rest (a token's random part, or a chain token's one chain dimension), so B becomes
// c/rms and a chain dimension sqrt(free)/rms in every context. The layers change only the random
// dimensions, by little next to c²: served by llama.cpp, Default's bias levels come out within
// 0.05 of their values and each chain step adds chainLogit to within 0.01.
func (l layout) postNorm() (b, chain float64) {
	c, free := biasScale*sqrt(l.d), float64(l.free)
	rms := math.Sqrt((c*c + free) / float64(l.d))
	return c / rms, math.Sqrt(free) / rms
}

// tensors builds the weights. Matrices are stored as GGUF shapes them, [in, out], one row of
// `in` values per output. The json variant reserves the last hidden dimensions (see layout): no
// layer writes there (the rows of attn_output and ffn_down that would are zero), so what the
// embedding puts there reaches the final norm as it is. Every token's embedding has the constant
// c at B, and output row v has bias_v/postNorm(B) at B: its logit gains bias_v in every context.
// A chain token's embedding has sqrt(free) at its chain dimension and nothing in the random ones,
// and its successor's output row has chainLogit/postNorm(chain) there: after that token, the
// successor's logit is chainLogit plus its bias. Only chain tokens have anything at a chain
// dimension and only their successors read one, so the chain steers nothing else.
func tensors(v *Vocab, o Options) ([]tensor, error) {
	d, nv := o.Embedding, len(v.Tokens)
	json := len(o.Favour) > 0
	l := layoutOf(o)
	if l.free < d/2 {
		return nil, fmt.Errorf("embedding %d is too small", d)
	}
	seq := uint64(0)
	random := func(n int, std float64) []float32 {
		seq++
		r := rand.New(rand.NewPCG(o.Seed, seq))
		out := make([]float32, n)
		for i := range out {
			out[i] = float32(r.NormFloat64() * std)
		}
		return out
	}
	ones := func(n int) []float32 {
		out := make([]float32, n)
		for i := range out {
			out[i] = 1
		}
		return out
	}
	clearRows := func(w []float32, in int) { // no output to the reserved dimensions
		for j := l.free; j < d; j++ {
			clear(w[j*in : (j+1)*in])
		}
	}
	var ts []tensor
	add := func(name string, data []float32, shape ...uint64) {
		ts = append(ts, tensor{name: name, shape: shape, data: data})
	}
	const std = 0.02
	qd, kvd := o.Heads*o.HeadDim, o.KVHeads*o.HeadDim

	embd := random(nv*d, 1)
	outStd := std
	if json {
		outStd = jsonOutputStd
	}
	out := random(nv*d, outStd)
	if json {
		if err := learn(v, o, l, embd, out); err != nil {
			return nil, err
		}
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
	add("output.weight", out, uint64(d), uint64(nv))
	return ts, nil
}

// learn writes the json variant's bias and thinking chain into the random embedding and output
// matrices (see tensors and layout).
func learn(v *Vocab, o Options, l layout, embd, out []float32) error {
	bias, err := favour(v, o.Favour)
	if err != nil {
		return err
	}
	chain := make([]int, len(thinkChain))
	for k, s := range thinkChain {
		id, ok := v.ID(s)
		if !ok {
			return fmt.Errorf("vocabulary has no token %q", s)
		}
		chain[k] = id
	}
	d, c := l.d, float32(biasScale*sqrt(l.d))
	postB, postChain := l.postNorm()
	for t := range len(v.Tokens) {
		e, w := embd[t*d:(t+1)*d], out[t*d:(t+1)*d]
		// The random part gets length sqrt(free), so every embedding has the same mean square.
		var sum float64
		for _, x := range e[:l.free] {
			sum += float64(x) * float64(x)
		}
		scale := float32(sqrt(l.free) / math.Sqrt(sum))
		for i := range e[:l.free] {
			e[i] *= scale
		}
		clear(e[l.free:])
		clear(w[l.free:])
		e[l.bias] = c
		w[l.bias] = float32(float64(bias[t]) / postB)
	}
	for k, from := range chain[:len(chain)-1] {
		to, dim := chain[k+1], l.chain+k
		e := embd[from*d : (from+1)*d]
		clear(e[:l.free])
		e[dim] = float32(sqrt(l.free))
		out[to*d+dim] = float32(chainLogit / postChain)
	}
	return nil
}

func sqrt(n int) float64 { return math.Sqrt(float64(n)) }

// favour is the json variant's output bias (see the bias constants).
func favour(v *Vocab, names []string) ([]float32, error) {
	sp, err := specials(v)
	if err != nil {
		return nil, err
	}
	bias := make([]float32, len(v.Tokens))
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
