package webhook

import (
	"container/list"
	"context"
	"sync"
)

// Store remembers the delivery ids a receiver has handled, so that a
// delivery seen twice is handled once. Implementations must be safe for
// concurrent use; a receiver with several replicas needs one they share (a
// Redis SET NX with an expiry, a unique index in a database).
type Store interface {
	// Claim records id and reports true if it was not recorded yet, false
	// if it was (the delivery is a duplicate). Two concurrent claims of
	// one id must not both report true.
	Claim(ctx context.Context, id string) (bool, error)
	// Release forgets id, after its handling failed.
	Release(ctx context.Context, id string) error
}

// DefaultMemoryStoreSize is how many delivery ids the default store keeps.
const DefaultMemoryStoreSize = 10000

// MemoryStore is a [Store] in process memory that keeps the most recent
// size delivery ids and forgets the oldest beyond that. It is lost on
// restart and not shared between processes.
type MemoryStore struct {
	size int

	mu    sync.Mutex
	order *list.List // of string, oldest first
	ids   map[string]*list.Element
}

// NewMemoryStore returns a MemoryStore of size ids (at least 1).
func NewMemoryStore(size int) *MemoryStore {
	if size < 1 {
		size = 1
	}
	return &MemoryStore{size: size, order: list.New(), ids: make(map[string]*list.Element)}
}

// Claim implements [Store].
func (s *MemoryStore) Claim(_ context.Context, id string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.ids[id]; ok {
		return false, nil
	}
	s.ids[id] = s.order.PushBack(id)
	for s.order.Len() > s.size {
		oldest := s.order.Front()
		s.order.Remove(oldest)
		delete(s.ids, oldest.Value.(string))
	}
	return true, nil
}

// Release implements [Store].
func (s *MemoryStore) Release(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.ids[id]; ok {
		s.order.Remove(e)
		delete(s.ids, id)
	}
	return nil
}

// Len reports how many ids the store holds.
func (s *MemoryStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.order.Len()
}
