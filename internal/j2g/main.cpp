// Driver for llama.cpp's json-schema-to-grammar: reads a JSON Schema on stdin, prints the GBNF
// grammar Ollama would build from it for its `format` field (see internal/j2g/build).
#include "json-schema-to-grammar.h"
#include <nlohmann/json.hpp>
#include <iostream>
#include <iterator>
int main() {
  std::string in((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  try {
    auto schema = nlohmann::ordered_json::parse(in);
    std::cout << json_schema_to_grammar(schema);
  } catch (const std::exception & e) { std::cerr << "ERROR: " << e.what() << "\n"; return 1; }
}
