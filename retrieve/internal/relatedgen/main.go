// Command relatedgen writes retrieve/related.txt, the words a query word is expanded with, from
// WordNet 3.0 (Debian's wordnet-base: /usr/share/wordnet). Each line is a stem (retrieve.Stem of a
// WordNet lemma), a tab and the stems of the lemmas WordNet relates to it, space-separated:
// its derivationally related nouns and verbs ("multiplication" → multiply, "reminder" → remind,
// "execute" → executor). Synonyms (the other lemmas of a verb's most frequent senses) were tried
// and left out: on the benchmark's tune parts they added little (MetaTool R@20 0.757 → 0.759) and
// brought noise ("17 times 23" found clock tools through "time" → clock). Only one-word, lower-case ASCII lemmas are kept, only stems that differ from the
// key's, at most maxPerKey per key. Regenerate with:
//
//	apt-get download wordnet-base && dpkg -x wordnet-base_*.deb wn
//	go run ./retrieve/internal/relatedgen -wordnet wn/usr/share/wordnet > retrieve/related.txt
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"toolrouter/retrieve"
)

// maxPerKey bounds the stems one key expands to.
const maxPerKey = 6

type synset struct {
	words []string
	// derived are the derivational pointers: source word index (0: all), target pos, offset,
	// target word index.
	derived []pointer
}

type pointer struct {
	src, dst int
	pos      byte
	offset   string
}

func main() {
	dir := flag.String("wordnet", "/usr/share/wordnet", "folder of WordNet's data.noun and data.verb")
	flag.Parse()
	if err := run(*dir); err != nil {
		fmt.Fprintln(os.Stderr, "relatedgen:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	data := map[byte]map[string]*synset{}
	for _, pos := range []byte{'n', 'v'} {
		name := map[byte]string{'n': "data.noun", 'v': "data.verb"}[pos]
		m, err := readData(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		data[pos] = m
	}
	rel := map[string]map[string]bool{}
	add := func(a, b string) {
		if !plain(a) || !plain(b) {
			return
		}
		sa, sb := retrieve.Stem(a), retrieve.Stem(b)
		if sa == sb {
			return
		}
		if rel[sa] == nil {
			rel[sa] = map[string]bool{}
		}
		rel[sa][sb] = true
	}
	// Derivational links between nouns and verbs, both ways.
	for _, pos := range []byte{'n', 'v'} {
		for _, s := range data[pos] {
			for _, p := range s.derived {
				if p.pos != 'n' && p.pos != 'v' {
					continue
				}
				t := data[p.pos][p.offset]
				if t == nil || p.src == 0 || p.dst == 0 || p.src > len(s.words) || p.dst > len(t.words) {
					continue
				}
				add(s.words[p.src-1], t.words[p.dst-1])
			}
		}
	}
	w := bufio.NewWriter(os.Stdout)
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range rel {
			if !yield(k) {
				return
			}
		}
	}) {
		vs := slices.Sorted(func(yield func(string) bool) {
			for v := range rel[k] {
				if !yield(v) {
					return
				}
			}
		})
		if len(vs) > maxPerKey {
			continue // a word with that many relations is too general to say which tool
		}
		fmt.Fprintf(w, "%s\t%s\n", k, strings.Join(vs, " "))
	}
	return w.Flush()
}

// plain reports whether a lemma is one lower-case ASCII word of three letters or more.
func plain(w string) bool {
	if len(w) < 3 {
		return false
	}
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return false
		}
	}
	return true
}

// readData reads a WordNet data file: synsets by offset, with their words and derivational
// pointers.
func readData(path string) (map[string]*synset, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]*synset{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, " ") {
			continue
		}
		head, _, _ := strings.Cut(line, " | ")
		fs := strings.Fields(head)
		if len(fs) < 4 {
			continue
		}
		n, err := strconv.ParseUint(fs[3], 16, 32)
		if err != nil {
			return nil, fmt.Errorf("%s: synset %s: %w", path, fs[0], err)
		}
		s := &synset{}
		i := 4
		for range n {
			s.words = append(s.words, strings.ToLower(fs[i]))
			i += 2
		}
		np, _ := strconv.Atoi(fs[i])
		i++
		for range np {
			sym, off, pos, st := fs[i], fs[i+1], fs[i+2], fs[i+3]
			i += 4
			if sym != "+" || len(st) != 4 {
				continue
			}
			src, _ := strconv.ParseUint(st[:2], 16, 8)
			dst, _ := strconv.ParseUint(st[2:], 16, 8)
			s.derived = append(s.derived, pointer{src: int(src), dst: int(dst), pos: pos[0], offset: off})
		}
		out[fs[0]] = s
	}
	return out, sc.Err()
}
