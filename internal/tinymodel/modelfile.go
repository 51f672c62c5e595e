package tinymodel

import (
	_ "embed"
	"fmt"
	"os"
	"strings"
)

// Chat templates, in Ollama's Go-template form. Both are ChatML with Qwen's tool block (tools in
// <tools></tools>, calls in <tool_call></tool_call>), so Ollama reports the tools capability and
// parses native tool calls. The thinking one also renders .Thinking between <think> and </think>,
// which makes Ollama report the thinking capability: with think:true the assistant turn opens with
// <think>, with think:false it gets an empty thinking block, as Qwen3's own template does.
//
// Ollama renders them itself: a model with a TEMPLATE and no tokenizer.chat_template (ours have
// none) is a Go-template model, so Ollama sends llama-server the rendered prompt and starts it
// with --no-jinja (--chat-template chatml is only a placeholder there). A tool renders with
// {{ json .Function }}: since Ollama 0.3x, .Function is a template-only type with no String
// method, and {{ .Function }} would print a Go struct.
var (
	//go:embed chatml.gotmpl
	chatTemplate string
	//go:embed chatml-think.gotmpl
	thinkTemplate string
)

// Modelfile is the Modelfile that imports the GGUF at ggufPath: the thinking template for the json
// variant, the plain one otherwise; stop at the end of a turn.
func Modelfile(ggufPath string, thinking bool) string {
	t := chatTemplate
	if thinking {
		t = thinkTemplate
	}
	var b strings.Builder
	fmt.Fprintf(&b, "FROM %s\n", ggufPath)
	// The files end in a newline the rendered prompt must not.
	fmt.Fprintf(&b, "TEMPLATE \"\"\"%s\"\"\"\n", strings.TrimRight(t, "\n"))
	b.WriteString("PARAMETER stop <|im_end|>\nPARAMETER stop <|endoftext|>\n")
	return b.String()
}

// WriteModelfile writes Modelfile(ggufPath, thinking) to path.
func WriteModelfile(path, ggufPath string, thinking bool) error {
	if err := os.WriteFile(path, []byte(Modelfile(ggufPath, thinking)), 0o644); err != nil {
		return fmt.Errorf("writing Modelfile: %w", err)
	}
	return nil
}
