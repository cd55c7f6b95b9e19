// Package reqid mints and checks request ids, the X-Request-Id every
// response carries and every hop forwards: the services' HTTP middleware and
// the dev stack's ingress use the same generator and the same rule for which
// ids a client may choose.
package reqid

import (
	"crypto/rand"
	"encoding/hex"
	"sync/atomic"
)

// Header carries the request id in both directions.
const Header = "X-Request-Id"

// Len is the length of a minted id: 16 hex digits of per-process randomness
// followed by 16 of a counter.
const Len = 32

// Generator mints ids unique across processes without reading randomness per
// request. The zero value is not usable; call New.
type Generator struct {
	prefix [16]byte
	n      atomic.Uint64
}

// New returns a generator with a fresh random prefix.
func New() *Generator {
	var b [8]byte
	_, _ = rand.Read(b[:])
	g := &Generator{}
	hex.Encode(g.prefix[:], b[:])
	return g
}

// Next returns a new id.
func (g *Generator) Next() string {
	var buf [Len]byte
	copy(buf[:16], g.prefix[:])
	n := g.n.Add(1)
	for i := Len - 1; i >= 16; i-- {
		buf[i] = "0123456789abcdef"[n&0xf]
		n >>= 4
	}
	return string(buf[:])
}

// Valid reports whether a client-supplied id may be kept: 1 to 128 visible
// ASCII characters. Anything else is replaced by a minted id.
func Valid(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if b := id[i]; b < 0x21 || b > 0x7e {
			return false
		}
	}
	return true
}
