package retrieve

// Shortlist returns the leading hits whose costs (cost(qualified), in the caller's unit, prompt
// tokens say) fit in budget together, in the order given, and how many hits were left out. It
// stops at the first hit that does not fit, so the shortlist is always a prefix of the ranking.
// The first hit is shown even when it alone is over budget: a shortlist is never empty while
// there are hits. When everything fits everything is shown, so a small inventory is offered whole.
func Shortlist(hits []Hit, cost func(qualified string) int, budget int) (shown []Hit, left int) {
	used := 0
	for i, h := range hits {
		c := max(cost(h.Qualified), 0)
		if i > 0 && used+c > budget {
			return hits[:i], len(hits) - i
		}
		used += c
	}
	return hits, 0
}
