// Driver for llama.cpp's json-schema-to-grammar: reads a JSON Schema on stdin, prints the GBNF
// grammar llama-server builds from it for a request's json_schema (Ollama's `format` field; see
// internal/j2g/build).
#include "json-schema-to-grammar.h"
#include <iostream>
#include <iterator>
int main() {
  std::string in((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  try {
    std::cout << json_schema_to_grammar(common_json::parse(in));
  } catch (const std::exception & e) { std::cerr << "ERROR: " << e.what() << "\n"; return 1; }
}
// json.cpp asserts with GGML_ASSERT; the driver has no ggml, so an assertion prints and aborts.
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
extern "C" void ggml_abort(const char * file, int line, const char * fmt, ...) {
  va_list args; va_start(args, fmt); std::fprintf(stderr, "%s:%d: ", file, line); std::vfprintf(stderr, fmt, args); va_end(args);
  std::abort();
}
