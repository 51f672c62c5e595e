package retrieve

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math"
	"sync"
)

// vecKey names one cached vector: the model and the SHA-256 of the text it embedded.
type vecKey struct {
	model string
	sum   [sha256.Size]byte
}

func keyOf(model, text string) vecKey {
	return vecKey{model: model, sum: sha256.Sum256([]byte(text))}
}

// vecRecord is one line of the cache file; the vector is little-endian float32, base64.
type vecRecord struct {
	Model  string `json:"model"`
	SHA256 string `json:"sha256"`
	Vector string `json:"vector"`
}

// vectorCache keeps embedding vectors (unit length) by model and text hash, in memory and, with a
// path, in a JSON Lines file loaded at open and appended to, so a restart embeds nothing twice.
type vectorCache struct {
	mu   sync.Mutex // guards vecs and lf
	vecs map[vecKey][]float32
	lf   lineFile
}

func openVectorCache(path string) (*vectorCache, error) {
	c := &vectorCache{vecs: map[vecKey][]float32{}, lf: lineFile{path: path, what: "vector cache"}}
	damaged, err := c.lf.load(func(line []byte) bool {
		k, v, ok := decodeVector(line)
		if ok {
			c.vecs[k] = v
		}
		return ok
	})
	if err != nil {
		return nil, err
	}
	if damaged {
		// A line cut short by a crash: rewrite, so that appends start on a line of their own.
		if err := c.rewrite(func(vecKey) bool { return true }); err != nil {
			return nil, err
		}
		return c, nil
	}
	if err := c.lf.open(); err != nil {
		return nil, err
	}
	return c, nil
}

func decodeVector(line []byte) (vecKey, []float32, bool) {
	var r vecRecord
	if json.Unmarshal(line, &r) != nil {
		return vecKey{}, nil, false
	}
	k := vecKey{model: r.Model}
	if n, err := hex.Decode(k.sum[:], []byte(r.SHA256)); err != nil || n != sha256.Size {
		return vecKey{}, nil, false
	}
	raw, err := base64.StdEncoding.DecodeString(r.Vector)
	if err != nil || len(raw) == 0 || len(raw)%4 != 0 {
		return vecKey{}, nil, false
	}
	v := make([]float32, len(raw)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return k, v, true
}

func encodeVector(k vecKey, v []float32) []byte {
	raw := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(x))
	}
	line, _ := json.Marshal(vecRecord{Model: k.model, SHA256: hex.EncodeToString(k.sum[:]), Vector: base64.StdEncoding.EncodeToString(raw)})
	return append(line, '\n')
}

func (c *vectorCache) get(k vecKey) ([]float32, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.vecs[k]
	return v, ok
}

// put stores vectors (scaled to unit length) and appends them to the file. They are kept in
// memory even when writing fails.
func (c *vectorCache) put(keys []vecKey, vecs [][]float32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var buf []byte
	for i, k := range keys {
		v := unit(vecs[i])
		c.vecs[k] = v
		if c.lf.file != nil {
			buf = append(buf, encodeVector(k, v)...)
		}
	}
	return c.lf.append(buf, len(keys))
}

// prune forgets the vectors keep rejects, rewriting the file when it holds more than twice the
// vectors kept (and over 64).
func (c *vectorCache) prune(keep func(vecKey) bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.vecs {
		if !keep(k) {
			delete(c.vecs, k)
		}
	}
	if c.lf.path == "" || c.lf.n <= max(2*len(c.vecs), 64) {
		return nil
	}
	return c.rewrite(keep)
}

// rewrite replaces the file with the vectors keep accepts and reopens it for appending. c.mu is
// held or c is not yet shared.
func (c *vectorCache) rewrite(keep func(vecKey) bool) error {
	return c.lf.rewrite(func(emit func([]byte)) {
		for k, v := range c.vecs {
			if keep(k) {
				emit(encodeVector(k, v))
			}
		}
	})
}

func (c *vectorCache) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lf.close()
}

// unit returns v scaled to length 1 (a copy; v itself when it is all zeros).
func unit(v []float32) []float32 {
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	if sum == 0 {
		return v
	}
	inv := 1 / math.Sqrt(sum)
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(float64(x) * inv)
	}
	return out
}
