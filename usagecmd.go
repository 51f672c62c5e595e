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

// openUsageStore opens the usage database, once for every part that keeps something in it: the
// safety checks (see safetyStore) and, when serving (serve, mcp), the usage records' recorder
// (see usageRecorder). It is nil when usage records are off or no part keeps anything in it. The
// caller closes it after every part that uses it: the inventory, and the recorder's Close, which
// writes what is queued first.
func openUsageStore(ctx context.Context, cfg config.Config, serving bool) (*records.Store, error) {
	if !cfg.Usage.Enabled() || !serving && !safetyKeeps(cfg) {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	store, err := records.Open(ctx, cfg.Usage.Path, cfg.Usage.PostgresURL)
	if err != nil {
		return nil, fmt.Errorf("usage database (usage.path, usage.postgres_url): %w", err)
	}
	return store, nil
}

// usageRecorder starts the usage records' recorder in store, the usage database (openUsageStore),
// which it leaves open at Close for its opener to close. It calls onDrop (if not nil) for each
// record it drops and records only the identities known reports (nil: all); nil when store is
// nil (usage is off).
func usageRecorder(store *records.Store, c config.Usage, logger *slog.Logger, onDrop, onFileLost func(), known func(access.Identity) bool) *records.Recorder {
	if store == nil {
		return nil
	}
	return records.NewRecorder(store, records.Options{
		QueueSize: c.QueueSize, BatchSize: c.BatchSize, FlushInterval: c.FlushInterval.D(),
		WriteTimeout: c.WriteTimeout.D(), Retention: c.Retention.D(), OnDrop: onDrop, OnFileLost: onFileLost, Known: known, Logger: logger,
	})
}
