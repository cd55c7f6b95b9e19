// Quarters: updates of one collection take turns.
//
// This file is not part of FerretDB v1.24.0; see
// tools/devstack/third_party/ferretdb/QUARTERS.md. An update reads the
// matching documents, changes them in memory and writes them back by _id,
// with nothing to stop another connection's update of the same document in
// between: one of the two writes was lost (a compare-and-set filtered on a
// version let both through). Holding a lock per collection from the read to
// the write makes every update and findAndModify atomic against the others,
// whichever connection sends them, as MongoDB's single-document updates
// are. SQLite admits one writer per database file anyway.

package handler

import "sync"

var collectionWriteLocks sync.Map // "db.collection" → *sync.Mutex

// lockCollectionWrites locks the updates of db.collection and returns the
// unlock function.
func lockCollectionWrites(db, collection string) func() {
	v, _ := collectionWriteLocks.LoadOrStore(db+"."+collection, new(sync.Mutex))
	mu := v.(*sync.Mutex)
	mu.Lock()

	return mu.Unlock
}
