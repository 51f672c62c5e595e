package main

import (
	"io"
	"log/slog"
	"os"

	fiberlog "github.com/gofiber/fiber/v2/log"
)

// processLogs makes logger the process's log when it writes to the process's own stderr, so that
// every line there is one JSON object: slog's default (mcp-go logs through it where no logger is
// passed), the standard library's log (mcp-go's servers print through it; at warn) and fiber's.
// run is also called by tests, which share one process and pass their own writer: those leave
// the process's log alone.
func processLogs(logger *slog.Logger, stderr io.Writer) {
	if f, ok := stderr.(*os.File); !ok || f != os.Stderr {
		return
	}
	slog.SetDefault(logger)
	slog.SetLogLoggerLevel(slog.LevelWarn)
	fiberlog.SetOutput(slog.NewLogLogger(logger.Handler(), slog.LevelWarn).Writer())
}
