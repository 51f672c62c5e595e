package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"toolrouter/bench/dataset"
)

// runSample writes a seeded sample of a MetaTool Query,Tool CSV: the committed
// data/metatool/all_clean_data_sample.csv is
//
//	go run ./bench sample -n 2000 -seed 1 ../shared/data/metatool/all_clean_data.csv > bench/data/metatool/all_clean_data_sample.csv
func runSample(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("sample", flag.ContinueOnError)
	n := fs.Int("n", 2000, "rows to keep")
	seed := fs.Uint64("seed", 1, "seed of the sample")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("usage: go run ./bench sample [-n N] [-seed S] all_clean_data.csv")
	}
	rows, err := dataset.ReadCSV(fs.Arg(0))
	if err != nil {
		return err
	}
	if *n <= 0 || *n > len(rows) {
		fmt.Fprintf(os.Stderr, "bench: keeping all %d rows\n", len(rows))
	}
	return dataset.WriteCSV(stdout, dataset.Sample(rows, *n, *seed))
}
