package builtin

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"

	"github.com/mark3labs/mcp-go/server"
)

// ServeStdio serves the named built-in server over stdin and stdout until
// stdin ends (nil error) or ctx is cancelled. mcp-go's own lines (input it
// could not read, an answer it could not write) go to logger at error level;
// nil is slog.Default().
func ServeStdio(ctx context.Context, name string, logger *slog.Logger) error {
	return serveStdio(ctx, name, os.Stdin, os.Stdout, logger)
}

func serveStdio(ctx context.Context, name string, in io.Reader, out io.Writer, logger *slog.Logger) error {
	srv, err := New(name, nil)
	if err != nil {
		return err
	}
	if logger == nil {
		logger = slog.Default()
	}
	stdio := server.NewStdioServer(srv)
	stdio.SetErrorLogger(slog.NewLogLogger(logger.Handler(), slog.LevelError))
	if err := stdio.Listen(ctx, in, out); err != nil {
		return fmt.Errorf("serve %s over stdio: %w", name, err)
	}
	return nil
}

// Handler returns a streamable-HTTP handler serving the named built-in
// server. It answers MCP on whatever path it is mounted at; "/mcp" is the
// conventional one.
func Handler(name string) (http.Handler, error) {
	srv, err := New(name, nil)
	if err != nil {
		return nil, err
	}
	return server.NewStreamableHTTPServer(srv), nil
}
