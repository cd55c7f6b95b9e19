package metadata

import (
	"context"
	"fmt"
	"strings"

	"github.com/FerretDB/FerretDB/internal/util/fsql"
	"github.com/FerretDB/FerretDB/internal/util/lazyerrors"
)

// Quarters: which indexes are built in SQLite.
//
// Every key of an index is an expression over the document column, so SQLite
// rewrites the entries of every index of a table on every update of a
// document, whether its keys changed or not: each index costs each update two
// key computations (parsing the document's JSON) and a dirty page in the WAL.
// Only two kinds of index serve anything in this store: the unique ones,
// which SQLite enforces, and the _id index (unique too), which the pushed-down
// _id conditions use (quarters_pushdown.go). No query uses a non-unique index:
// the other pushed-down conditions guard against arrays with an OR that no
// index can serve, and sorts and the rest of a filter run in FerretDB. So
// non-unique indexes are kept in the collection's settings, and listed by
// listIndexes as created, but not built in SQLite.

// physicalIndex is the statement that builds index in table, or "" when it
// is not built.
func physicalIndex(table string, index IndexInfo) string {
	if !index.Unique {
		return ""
	}

	return fmt.Sprintf("CREATE UNIQUE INDEX %q ON %q (%s)", table+"_"+index.Name, table, indexColumns(index.Key))
}

// indexColumns is the column list of an index on keys.
func indexColumns(keys []IndexKeyPair) string {
	columns := make([]string, len(keys))

	for i, key := range keys {
		fields := strings.Split(key.Field, ".")
		for j, f := range fields {
			fields[j] = fmt.Sprintf("%q", f)
		}

		columns[i] = fmt.Sprintf("%s->%s", DefaultColumn, strings.Join(fields, "->"))
		if key.Descending {
			columns[i] += " DESC"
		}
	}

	return strings.Join(columns, ", ")
}

// dropPhysicalIndex drops the SQLite index of index, if it has one (a
// non-unique index has one only when an earlier version built it).
func dropPhysicalIndex(ctx context.Context, db *fsql.DB, table string, index IndexInfo) error {
	q := "DROP INDEX %q"
	if !index.Unique {
		q = "DROP INDEX IF EXISTS %q"
	}

	_, err := db.ExecContext(ctx, fmt.Sprintf(q, table+"_"+index.Name))

	return err
}

// dropUnusedIndexes drops the non-unique indexes that collections created by
// an earlier version have in SQLite.
func dropUnusedIndexes(ctx context.Context, db *fsql.DB, colls map[string]*Collection) error {
	for _, c := range colls {
		for _, index := range c.Settings.Indexes {
			if index.Unique {
				continue
			}

			if err := dropPhysicalIndex(ctx, db, c.TableName, index); err != nil {
				return lazyerrors.Error(err)
			}
		}
	}

	return nil
}
