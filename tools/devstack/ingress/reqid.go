package ingress

import (
	"crypto/rand"
	"encoding/hex"
	"sync/atomic"
)

// requestIDLen is the length of a generated request id: 16 hex digits of
// per-process randomness and 16 of a counter.
const requestIDLen = 32

// requestIDs generates unique request ids without allocating: a random
// per-process prefix followed by a counter.
type requestIDs struct {
	prefix [16]byte
	n      atomic.Uint64
}

func (g *requestIDs) init() {
	var b [8]byte
	rand.Read(b[:])
	hex.Encode(g.prefix[:], b[:])
}

// next appends a new id to dst.
func (g *requestIDs) next(dst []byte) []byte {
	const digits = "0123456789abcdef"
	dst = append(dst, g.prefix[:]...)
	v := g.n.Add(1)
	for i := 60; i >= 0; i -= 4 {
		dst = append(dst, digits[(v>>uint(i))&0xf])
	}
	return dst
}
