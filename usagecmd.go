package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"toolrouter/access"
	"toolrouter/config"
	records "toolrouter/usage"
)

// usageFlags are the flags of "toolrouter usage".
type usageFlags struct {
	since, until, by *string
}

// register adds the usage command's flags to the command line's.
func (u *usageFlags) register(fs *flag.FlagSet) {
	u.since = fs.String("since", "", "usage: from this RFC 3339 time, or this long ago (24h, 7d); default 24h")
	u.until = fs.String("until", "", "usage: until this RFC 3339 time, or this long ago; default now")
	u.by = fs.String("by", "", "usage: group by org, team, agent, tool or model; default org")
}

// set reports whether any of the usage command's flags was given.
func (u *usageFlags) set() bool { return *u.since != "" || *u.until != "" || *u.by != "" }

// openTimeout bounds opening (and migrating) the usage database.
const openTimeout = 15 * time.Second

// printUsage runs "toolrouter usage": it reads the configured usage database and prints the
// totals of a window as a text table.
func printUsage(ctx context.Context, c config.Usage, f *usageFlags, stdout io.Writer) error {
	q, err := records.ParseQuery(*f.since, *f.until, *f.by, time.Now())
	if err != nil {
		var pe *records.ParamError
		if errors.As(err, &pe) && pe.Param == "group_by" {
			return fmt.Errorf("-by: %s", pe.Message)
		}
		return fmt.Errorf("-%w", err)
	}
	if c.PostgresURL == "" && c.Path != "" {
		if _, err := os.Stat(c.Path); err != nil {
			return fmt.Errorf("no usage database at %s (usage.path): %w", c.Path, err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	store, err := records.Open(ctx, c.Path, c.PostgresURL)
	if err != nil {
		return err
	}
	defer store.Close()
	s, err := store.Query(ctx, q)
	if err != nil {
		return err
	}
	return records.Print(stdout, s)
}

// openUsage opens the usage database and starts its recorder, which calls onDrop (if not nil) for
// each record it drops and records only the identities known reports (nil: all); nil when usage
// is off.
func openUsage(ctx context.Context, c config.Usage, logger *slog.Logger, onDrop, onFileLost func(), known func(access.Identity) bool) (*records.Recorder, error) {
	if !c.Enabled() {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	store, err := records.Open(ctx, c.Path, c.PostgresURL)
	if err != nil {
		return nil, fmt.Errorf("usage records (usage.path, usage.postgres_url): %w", err)
	}
	return records.NewRecorder(store, records.Options{
		QueueSize: c.QueueSize, BatchSize: c.BatchSize, FlushInterval: c.FlushInterval.D(),
		WriteTimeout: c.WriteTimeout.D(), Retention: c.Retention.D(), OnDrop: onDrop, OnFileLost: onFileLost, Known: known, Logger: logger,
	}), nil
}
