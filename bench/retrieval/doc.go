// Package retrieval measures the router's phase-1 shortlist: how often the tool a query needs is
// among the tools phase 1 would be shown (recall at ranks and at token budgets, on MetaTool and on
// a pool of every BFCL function, with and without learned examples, against the council's keyword
// gate), and what the shortlist costs as the inventory grows (index build time and memory,
// shortlist latency, the phase-1 prompt sent). Everything runs through the real pipeline: pools
// are served by in-process MCP servers in an inventory.Manager, ranked by retrieve.Catalog and cut
// by router.New's own budget. It scores no model.
package retrieval
