package limits

import (
	"time"

	"toolrouter/access"
)

// kind is how a limit is counted.
type kind uint8

const (
	kindTake  kind = iota // requests per minute: admission takes one
	kindDebt              // tokens and tool calls: admitted while above zero, charged at the end
	kindLease             // concurrent: admission holds a slot until release
)

// spec is one limit of one level, as its counters see it.
type spec struct {
	level Level
	limit Limit
	key   string // the counter's key: level, path and limit ("org:acme:requests_per_minute")
	kind  kind
	max   int     // the configured limit
	n     float64 // the limit enforced: max, or this replica's share of it
	per   time.Duration
	// rkey and rargs are the counter's key in Redis and what the script reads of it: its kind,
	// refill per ms and capacity (or slots). compile sets them once, so that admission does not
	// format them per request; the shares of the local fallback (share) never go to Redis.
	rkey  string
	rargs [3]any
}

// capacity is the bucket's size: the limit, and at least one request.
func (s spec) capacity() float64 {
	if s.kind == kindTake {
		return max(s.n, 1)
	}
	return s.n
}

// rate is the refill per second.
func (s spec) rate() float64 { return s.n / s.per.Seconds() }

// concurrent is the slots of a lease spec: at least one.
func (s spec) concurrent() int { return max(int(s.n), 1) }

// amount is what a request that used tokens and tools takes from s.
func (s spec) amount(tokens, tools int) int {
	if s.limit == ToolCallsPerMinute {
		return tools
	}
	return tokens
}

// table is every configured level's specs, by level key ("org:acme", "team:acme/research",
// "agent:acme/research/bot", "anonymous"): its keys, and so the counters', are the configuration's.
type table map[string][]spec

func compile(orgs access.Orgs, anonymous Limits) table {
	t := table{}
	t.add(LevelAnonymous, "anonymous", anonymous)
	for o, org := range orgs {
		t.add(LevelOrg, "org:"+o, org.Limits)
		for tm, team := range org.Teams {
			t.add(LevelTeam, "team:"+o+"/"+tm, team.Limits)
			for a, agent := range team.Agents {
				t.add(LevelAgent, "agent:"+o+"/"+tm+"/"+a, agent.Limits)
			}
		}
	}
	return t
}

func (t table) add(level Level, key string, l Limits) {
	var specs []spec
	for _, s := range []struct {
		limit Limit
		kind  kind
		v     int
		per   time.Duration
	}{
		{RequestsPerMinute, kindTake, l.RequestsPerMinute, time.Minute},
		{TokensPerMinute, kindDebt, l.TokensPerMinute, time.Minute},
		{TokensPerDay, kindDebt, l.TokensPerDay, 24 * time.Hour},
		{ToolCallsPerMinute, kindDebt, l.ToolCallsPerMinute, time.Minute},
		{Concurrent, kindLease, l.Concurrent, 0},
	} {
		if s.v > 0 {
			sp := spec{level: level, limit: s.limit, key: key + ":" + string(s.limit),
				kind: s.kind, max: s.v, n: float64(s.v), per: s.per}
			sp.rkey, sp.rargs = keyPrefix+sp.key, sp.scriptArgs()
			specs = append(specs, sp)
		}
	}
	if len(specs) > 0 {
		t[key] = specs
	}
}

// of is the specs id must pass, top level first: the anonymous level's for a request without a
// credential, then its org's, team's and agent's. A level the configuration does not define has
// none.
func (t table) of(id access.Identity) []spec {
	if len(t) == 0 {
		return nil
	}
	var out []spec
	if id.Anonymous {
		out = append(out, t["anonymous"]...)
	}
	if id.Org != "" {
		out = append(out, t["org:"+id.Org]...)
	}
	if id.Team != "" {
		out = append(out, t["team:"+id.Org+"/"+id.Team]...)
	}
	if id.Agent != "" {
		out = append(out, t["agent:"+id.Org+"/"+id.Team+"/"+id.Agent]...)
	}
	return out
}

// share is specs with each limit divided among replicas: what one replica enforces alone.
func share(specs []spec, replicas int) []spec {
	if replicas <= 1 {
		return specs
	}
	out := make([]spec, len(specs))
	for i, s := range specs {
		s.n /= float64(replicas)
		s.key = "share:" + s.key // its own counters, apart from those of the whole limit
		out[i] = s
	}
	return out
}
