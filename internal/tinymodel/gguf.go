package tinymodel

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
)

// A GGUF version 3 file, as llama.cpp's gguf.cpp and Ollama's fs/gguf read it, little-endian:
//
//	"GGUF", version uint32, tensor count uint64, key/value count uint64
//	key/values: key string, type uint32, value
//	tensor infos: name string, n_dims uint32, dims [n_dims]uint64 (innermost first), type uint32, offset uint64
//	padding to the alignment, then each tensor's data at its offset, padded to the alignment
//
// A string is a uint64 length and its bytes; an array is an element type uint32, a uint64 count and
// the elements. Offsets count from the start of the data section, and llama.cpp wants each to be
// exactly the sum of the padded sizes before it. We write no general.alignment, so both readers
// take the default of 32.
const (
	ggufVersion   = 3
	ggufAlignment = 32
)

// GGUF value types (gguf_type in llama.cpp), the ones we write.
const (
	ggufUint32  uint32 = 4
	ggufInt32   uint32 = 5
	ggufFloat32 uint32 = 6
	ggufBool    uint32 = 7
	ggufString  uint32 = 8
	ggufArray   uint32 = 9
)

// ggmlF32 is the tensor type of every tensor we write.
const ggmlF32 uint32 = 0

// keyValue is one metadata entry; value is a string, uint32, float32, bool, []string or []int32.
type keyValue struct {
	key   string
	value any
}

// tensor is one F32 tensor. shape is innermost first, as GGUF stores it: [in, out] for a matrix.
type tensor struct {
	name  string
	shape []uint64
	data  []float32
}

func (t tensor) size() uint64 { return 4 * uint64(len(t.data)) }

// writeGGUF streams a GGUF file to w: metadata in the order given, then the tensors in the order
// given. Tensor data is encoded a chunk at a time, never as a whole file in memory.
func writeGGUF(w io.Writer, kvs []keyValue, ts []tensor) error {
	e := &encoder{w: bufio.NewWriterSize(w, 1<<20)}
	e.bytes([]byte("GGUF"))
	e.u32(ggufVersion)
	e.u64(uint64(len(ts)))
	e.u64(uint64(len(kvs)))
	for _, kv := range kvs {
		e.str(kv.key)
		if err := e.value(kv.value); err != nil {
			return fmt.Errorf("key %s: %w", kv.key, err)
		}
	}
	var offset uint64
	for _, t := range ts {
		n := uint64(1)
		for _, d := range t.shape {
			n *= d
		}
		if n != uint64(len(t.data)) {
			return fmt.Errorf("tensor %s: shape %v holds %d values, data has %d", t.name, t.shape, n, len(t.data))
		}
		e.str(t.name)
		e.u32(uint32(len(t.shape)))
		for _, d := range t.shape {
			e.u64(d)
		}
		e.u32(ggmlF32)
		e.u64(offset)
		offset += pad(t.size())
	}
	e.align()
	for _, t := range ts {
		e.floats(t.data)
		e.align()
	}
	if e.err != nil {
		return e.err
	}
	return e.w.Flush()
}

func pad(n uint64) uint64 { return (n + ggufAlignment - 1) / ggufAlignment * ggufAlignment }

// encoder writes little-endian values and keeps the first error, so a caller checks once.
type encoder struct {
	w   *bufio.Writer
	n   uint64 // bytes written, for alignment
	err error
	buf [8]byte
}

func (e *encoder) bytes(b []byte) {
	if e.err != nil {
		return
	}
	_, e.err = e.w.Write(b)
	e.n += uint64(len(b))
}

func (e *encoder) u32(v uint32) {
	binary.LittleEndian.PutUint32(e.buf[:4], v)
	e.bytes(e.buf[:4])
}

func (e *encoder) u64(v uint64) {
	binary.LittleEndian.PutUint64(e.buf[:8], v)
	e.bytes(e.buf[:8])
}

func (e *encoder) str(s string) {
	e.u64(uint64(len(s)))
	if e.err != nil {
		return
	}
	_, e.err = e.w.WriteString(s)
	e.n += uint64(len(s))
}

func (e *encoder) value(v any) error {
	switch v := v.(type) {
	case string:
		e.u32(ggufString)
		e.str(v)
	case uint32:
		e.u32(ggufUint32)
		e.u32(v)
	case float32:
		e.u32(ggufFloat32)
		e.u32(math.Float32bits(v))
	case bool:
		e.u32(ggufBool)
		b := byte(0)
		if v {
			b = 1
		}
		e.bytes([]byte{b})
	case []string:
		e.u32(ggufArray)
		e.u32(ggufString)
		e.u64(uint64(len(v)))
		for _, s := range v {
			e.str(s)
		}
	case []int32:
		e.u32(ggufArray)
		e.u32(ggufInt32)
		e.u64(uint64(len(v)))
		for _, x := range v {
			e.u32(uint32(x))
		}
	default:
		return fmt.Errorf("unsupported metadata type %T", v)
	}
	return nil
}

// floats writes F32 data through a fixed buffer.
func (e *encoder) floats(fs []float32) {
	var chunk [4096]byte
	for len(fs) > 0 && e.err == nil {
		n := min(len(fs), len(chunk)/4)
		for i, f := range fs[:n] {
			binary.LittleEndian.PutUint32(chunk[4*i:], math.Float32bits(f))
		}
		e.bytes(chunk[:4*n])
		fs = fs[n:]
	}
}

func (e *encoder) align() {
	var zero [ggufAlignment]byte
	e.bytes(zero[:pad(e.n)-e.n])
}
