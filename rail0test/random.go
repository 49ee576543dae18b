package rail0test

import (
	crand "crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"sync"
)

// entropy is the server's single source of generated values.
// With WithSeed it is a seeded ChaCha8 stream. So two servers built with
// the same seed and driven by the same requests produce the same ids.
type entropy struct {
	mu  sync.Mutex
	key [32]byte
	src *rand.ChaCha8
}

func newEntropy(seed *uint64) *entropy {
	var key [32]byte
	if seed != nil {
		binary.LittleEndian.PutUint64(key[:], *seed)
		copy(key[8:], "rail0test-seeded-entropy")
	} else if _, err := crand.Read(key[:]); err != nil {
		// crypto/rand never fails on supported platforms (Go 1.24+ crashes instead).
		panic(err)
	}
	return &entropy{key: key, src: rand.NewChaCha8(key)}
}

// rewind restarts the stream from its beginning.
// So a reset server generates the same ids as a new one.
func (e *entropy) rewind() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.src = rand.NewChaCha8(e.key)
}

// randomSecret returns n bytes from crypto/rand.
// It never reads the stream, which may be seeded.
func randomSecret(n int) []byte {
	b := make([]byte, n)
	if _, err := crand.Read(b); err != nil {
		// crypto/rand never fails on supported platforms (Go 1.24+ crashes instead).
		panic(err)
	}
	return b
}

func (e *entropy) read(b []byte) {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, _ = e.src.Read(b)
}

func (e *entropy) uint64() uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.src.Uint64()
}

// uuid returns a random (version 4) UUID string.
func (e *entropy) uuid() string {
	var b [16]byte
	e.read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// hex returns n random bytes as lowercase hex.
func (e *entropy) hex(n int) string {
	b := make([]byte, n)
	e.read(b)
	return hex.EncodeToString(b)
}
