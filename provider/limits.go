package provider

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/ollama/ollama/api"
)

// ErrResponseTooLarge means a model's answer grew past the response limit
// (ollama.max_response_bytes); the rest of it was not read.
var ErrResponseTooLarge = errors.New("model response too large")

// Option configures a client of this package (NewOllama, NewOpenAI).
type Option func(*limits)

// WithMaxResponseBytes bounds one answer: its text, thinking and tool calls, summed over every
// message of a stream. Reading stops past it and Chat returns ErrResponseTooLarge. One line of the
// response (an NDJSON line, a server-sent event, a whole non-streamed body) may hold twice that,
// for JSON escaping, plus lineSlack for the metadata around it. n <= 0 keeps the default,
// DefaultMaxResponseBytes.
func WithMaxResponseBytes(n int) Option {
	return func(l *limits) {
		if n > 0 {
			l.maxResponse = n
		}
	}
}

// lineSlack is what one line may hold beyond its share of the answer: ids, model names, metrics.
const lineSlack = 64 << 10

// limits bound what a client reads from one response.
type limits struct {
	maxResponse int
}

// DefaultMaxResponseBytes bounds one answer when nothing else does (ollama.max_response_bytes's
// default): 1 MiB, far over any answer a router or council model writes.
const DefaultMaxResponseBytes = 1 << 20

func newLimits(opts []Option) limits {
	l := limits{maxResponse: DefaultMaxResponseBytes}
	for _, o := range opts {
		o(&l)
	}
	return l
}

// maxLine bounds one line of a response.
func (l limits) maxLine() int { return 2*l.maxResponse + lineSlack }

// Meter counts the bytes of one answer as its messages arrive, for a caller that accumulates an
// answer from a Chatter it does not know to be bounded. It is not safe for concurrent use.
type Meter struct {
	n, max int
}

// newMeter returns a meter for an answer of at most limit bytes (<= 0: DefaultMaxResponseBytes), as a value, for a caller that keeps it inside its own state.
func newMeter(limit int) Meter {
	if limit <= 0 {
		limit = DefaultMaxResponseBytes
	}
	return Meter{max: limit}
}

func (l limits) meter() *Meter { return &Meter{max: l.maxResponse} }

// Add counts one message's text, thinking and tool calls; past the limit it returns an error
// wrapping ErrResponseTooLarge, which the caller returns from its ChatResponseFunc to stop reading.
func (m *Meter) Add(msg api.Message) error {
	n := len(msg.Content) + len(msg.Thinking)
	if len(msg.ToolCalls) > 0 {
		b, _ := json.Marshal(msg.ToolCalls)
		n += len(b)
	}
	return m.count(n)
}

// addLogprobs counts logprobs: each token of each position and its alternatives, and 8 bytes for
// each one's log probability.
func (m *Meter) addLogprobs(lps []api.Logprob) error {
	n := 0
	for _, lp := range lps {
		n += len(lp.Token) + 8
		for _, t := range lp.TopLogprobs {
			n += len(t.Token) + 8
		}
	}
	return m.count(n)
}

// count counts n bytes of the answer; past the limit it returns an error wrapping
// ErrResponseTooLarge.
func (m *Meter) count(n int) error {
	m.n += n
	if m.n > m.max {
		return tooLarge(m.max)
	}
	return nil
}

func tooLarge(limit int) error {
	return fmt.Errorf("%w: over %d bytes", ErrResponseTooLarge, limit)
}

// lineTooLong is the error of a line past the limit.
func lineTooLong(limit int) error {
	return fmt.Errorf("%w: %w (over %d bytes)", ErrResponseTooLarge, ErrLineTooLong, limit)
}
