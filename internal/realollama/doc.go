// Package realollama holds toolrouter's integration tests against a real Ollama server serving the
// tiny random-weight models of internal/tinymodel. They build only with the realollama tag and
// skip without OLLAMA_HOST; scripts/real-ollama test builds Ollama, starts it and runs them. Each
// test talks to the server through a recording reverse proxy, so it can assert what went over the
// wire (think, truncate, shift, num_ctx; statuses; the timings Ollama reported). The models'
// answers are meaningless: the tests assert protocol and plumbing, never answer quality.
package realollama
