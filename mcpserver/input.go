package mcpserver

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpgo "github.com/mark3labs/mcp-go/server"

	"toolrouter/access"
	"toolrouter/approval"
	"toolrouter/observe"
	"toolrouter/router"
)

// Protocol version 2026-07-28 lets no server send elicitation/create: a request that needs the
// person's answer is answered with an input request instead (a result of resultType
// input_required, multi round-trip requests), and the client retries the same request with the
// answers and the request's state. For a client of that version that declared elicitation, a
// tools/call whose calls are held is answered so: one elicitation per held call, keyed by the
// call's public id (approval.Key), and the request's state names what was parked: the routing
// (or the inventory tool's held call), for its identity and that very call. The retry resumes
// it: each accepted call runs, each declined is used up, and an unanswered or cancelled one stays
// held, named with its token, as for a client without elicitation; the routing is not run again.
// A parked request waits for its retry for elicitTimeout; a state that is unknown, expired, used
// or another request's is refused (unknown_request_state). Older clients are asked with
// elicitation/create (elicit), and a client that declared no elicitation gets the tokens.

// maxParked bounds the requests parked at once for their retry; past it a request's held calls
// are named with their tokens instead of being asked.
const maxParked = 256

// UnknownRequestState is the error code of a retry whose request state names nothing parked for
// it (the request's code, not one a call carries).
const UnknownRequestState = "unknown_request_state"

// modern reports whether ctx's request is of protocol version 2026-07-28 or later.
func modern(ctx context.Context) bool { return mcpgo.IsModernRequest(ctx) }

// asksInput reports whether ctx's request may be answered with input requests for elicitation:
// it is of 2026-07-28 or later and declared elicitation.
func asksInput(ctx context.Context) bool {
	info := mcpgo.RequestProtocolInfoFromContext(ctx)
	return info != nil && info.Modern && info.ClientCapabilities != nil && info.ClientCapabilities.Elicitation != nil
}

// parked is a request waiting for its client's answers: the routing of route and answer, or an
// inventory tool's held call.
type parked struct {
	identity string
	bind     string // the call it answers: the tool and its arguments (round.bind)
	expires  time.Time
	outcome  *router.Outcome
	call     *router.Call
}

// parking keeps the parked requests by their state, at most maxParked.
type parking struct {
	mu sync.Mutex // guards m
	m  map[string]*parked
}

// put parks p and returns its state; false when maxParked are parked already.
func (k *parking) put(p *parked, now time.Time) (string, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil {
		k.m = map[string]*parked{}
	}
	for state, q := range k.m {
		if !now.Before(q.expires) {
			delete(k.m, state)
		}
	}
	if len(k.m) >= maxParked {
		return "", false
	}
	state := rand.Text()
	k.m[state] = p
	return state, true
}

// take returns what is parked under state for identity and the call bind, and removes it: a
// state serves one retry. A retry of another identity or call finds nothing and leaves it parked,
// so that it cannot use up the retry of the request that asked.
func (k *parking) take(state, identity, bind string, now time.Time) (*parked, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	p, ok := k.m[state]
	if !ok || p.identity != identity || p.bind != bind {
		return nil, false
	}
	delete(k.m, state)
	return p, now.Before(p.expires)
}

// round is what a tools/call's context carries for input requests: the call it is (bind) and,
// on a retry, what it resumes and the answers, and which calls those decided.
type round struct {
	bind      string
	resumed   *parked
	responses mcp.InputResponses
	decided   []router.Call // the calls the answers decided, for the report
}

type roundKey struct{}

func roundOf(ctx context.Context) *round {
	r, _ := ctx.Value(roundKey{}).(*round)
	return r
}

// errInput ends a request whose held calls are asked with input requests: res is its result, and
// outcome the routing that held them (for the report).
type errInput struct {
	res     *mcp.CallToolResult
	outcome *router.Outcome
}

func (e *errInput) Error() string { return "the person's answers to the held calls are needed" }

// beginRound puts the round of req in ctx: a retry (a request state) takes what it resumes, and is
// refused with its isError result when the state names nothing parked for this identity and call.
func (s *Server) beginRound(ctx context.Context, rep *observe.Report, id access.Identity, req mcp.CallToolRequest) (context.Context, *mcp.CallToolResult) {
	sum := sha256.Sum256(append([]byte(req.Params.Name+"\x00"), rawArguments(req)...))
	r := &round{bind: hex.EncodeToString(sum[:])}
	if state := req.Params.RequestState; state != "" {
		p, ok := s.parked.take(state, id.String(), r.bind, time.Now())
		if !ok {
			return ctx, s.finish(rep, http.StatusBadRequest, UnknownRequestState,
				"the request state names no request of this call waiting for answers (unknown, expired or used): call again without it")
		}
		r.resumed, r.responses = p, req.Params.InputResponses
	}
	return context.WithValue(ctx, roundKey{}, r), nil
}

// askInput parks p (with pending, the held calls to ask about) and returns the result that asks
// the person about each; nil when the client cannot be asked so or too many requests are parked.
func (s *Server) askInput(ctx context.Context, id access.Identity, pending []router.Pending, p *parked) *mcp.CallToolResult {
	r := roundOf(ctx)
	if !asksInput(ctx) || r == nil {
		return nil
	}
	now := time.Now()
	p.identity, p.bind, p.expires = id.String(), r.bind, now.Add(elicitTimeout)
	state, ok := s.parked.put(p, now)
	if !ok {
		s.o.Logger.Warn("too many requests wait for their client's answers: held calls are named with their tokens", "max", maxParked)
		return nil
	}
	b := mcpgo.NewInputRequestBuilder(state)
	for i := range pending {
		b.Elicit(approval.Key(pending[i].Token), question(&pending[i]))
	}
	return b.ToolResult()
}

// answered decides the held call c with the person's answer in r, if any (decide), and notes it
// in r.decided; without an answer c stays held.
func (s *Server) answered(ctx context.Context, id access.Identity, r *round, c *router.Call) *router.Call {
	res := mcpgo.ElicitationResponse(r.responses, approval.Key(c.Pending.Token))
	if res == nil {
		return c
	}
	done := s.decide(ctx, id, c, res.Action)
	if done != c {
		r.decided = append(r.decided, *done)
	}
	return done
}

// decidedOutcome is the report's routing of a resumed request: only the calls its answers
// decided (the rest were reported with the request that asked).
func decidedOutcome(id access.Identity, r *round) *router.Outcome {
	return &router.Outcome{Identity: id.String(), UseTool: len(r.decided) > 0, Calls: r.decided, Stopped: router.StopDone,
		Trace: []router.Step{}}
}
