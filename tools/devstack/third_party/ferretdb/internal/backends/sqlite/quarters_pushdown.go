// Quarters: filter pushdown for FerretDB v1's SQLite backend.
//
// This file is not part of FerretDB v1.24.0; tools/devstack/third_party/ferretdb/QUARTERS.md
// lists it with the other changes of this copy.
//
// Upstream pushes a filter down to SQLite only when it is exactly
// {_id: <string or ObjectID>}; every other filter, including the
// compare-and-set filters {_id: X, version: N} that the services use for
// every update, reads and decodes the whole collection; and even the
// lookups by _id alone miss the _id index (idColumn below). docs/benchmarks.md
// ("Bookings", "Webhook delivery") measures the cost: about 0.6 ms per
// stored document per query.
//
// The backend contract (backends.Collection.Query) lets a backend apply a
// filter partially: the handler filters every returned document again with
// the whole filter. So a condition pushed down here must select a superset
// of the documents MongoDB's semantics would match, never fewer:
//
//   - {_id: v} and {_id: {$in: [v…]}} for strings and ObjectIDs, through the
//     unique index on _id (an _id is never an array);
//   - {f: "s"}, {f: {$eq: "s"}} and {f: {$in: ["s", …]}} on a top-level field
//     whose name is a plain identifier, as the field's SQL text value;
//   - {f: {$gt: n}} and {f: {$gte: n}} for a number n, as the field's SQL
//     value: a stored number compares as a number, and everything SQLite
//     orders differently from MongoDB (text, booleans as 0 and 1) can only
//     be kept in excess, never dropped: SQLite orders text above every
//     number. $lt and $lte are not pushed down, since MongoDB's NaN sorts
//     below every number while SQLite sees the stored text.
//
// A document whose field is an array is always kept, since MongoDB matches
// an array whose elements satisfy the condition.
//
// Every other condition is left to the handler.

package sqlite

import (
	"fmt"
	"math"
	"strings"

	"github.com/FerretDB/FerretDB/internal/backends/sqlite/metadata"
	"github.com/FerretDB/FerretDB/internal/handler/sjson"
	"github.com/FerretDB/FerretDB/internal/types"
	"github.com/FerretDB/FerretDB/internal/util/must"
)

// idColumn is the expression of the unique index every collection gets on
// _id (metadata.Registry.indexesCreate writes DefaultColumn->"_id").
// Upstream looks documents up by metadata.IDColumn, DefaultColumn->'$._id':
// the same value, but not the indexed expression, so SQLite's planner
// cannot use the index and every lookup, update and delete by _id scans
// the table, parsing each row's JSON. Written as the index is, they use it.
const idColumn = metadata.DefaultColumn + `->"_id"`

// prepareWhereClause returns the WHERE clause (with its leading space, or
// empty), its arguments, and whether anything was pushed down.
func prepareWhereClause(filter *types.Document) (string, []any, bool) {
	if filter.Len() == 0 {
		return "", nil, false
	}

	var conds []string
	var args []any

	for _, key := range filter.Keys() {
		v := must.NotFail(filter.Get(key))

		if key == "_id" {
			ids := pushdownValues(v, true)
			if len(ids) == 0 {
				continue
			}

			marks := make([]string, len(ids))
			for i, id := range ids {
				marks[i] = "?"
				args = append(args, string(must.NotFail(sjson.MarshalSingleValue(id))))
			}

			conds = append(conds, fmt.Sprintf(`%s IN (%s)`, idColumn, strings.Join(marks, ", ")))

			continue
		}

		if !plainFieldName(key) {
			continue
		}

		path := `'$."` + key + `"'`

		if op, n, ok := lowerBound(v); ok {
			conds = append(conds, fmt.Sprintf(
				`(%[1]s->>%[2]s %[3]s ? OR json_type(%[1]s, %[2]s) = 'array')`,
				metadata.DefaultColumn, path, op,
			))
			args = append(args, n)

			continue
		}

		values := pushdownValues(v, false)
		if len(values) == 0 {
			continue
		}

		marks := make([]string, len(values))
		for i, s := range values {
			marks[i] = "?"
			args = append(args, s.(string))
		}

		conds = append(conds, fmt.Sprintf(
			`(%[1]s->>%[2]s IN (%[3]s) OR json_type(%[1]s, %[2]s) = 'array')`,
			metadata.DefaultColumn, path, strings.Join(marks, ", "),
		))
	}

	if len(conds) == 0 {
		return "", nil, false
	}

	return ` WHERE ` + strings.Join(conds, " AND "), args, true
}

// pushdownValues returns the values an equality condition accepts: v itself,
// the operand of {$eq: v}, or the elements of {$in: [...]}; nil when the
// condition has another form or a value of a type that cannot be pushed
// down. ObjectIDs are accepted only for _id.
func pushdownValues(v any, id bool) []any {
	switch v := v.(type) {
	case string:
		return []any{v}
	case types.ObjectID:
		if id {
			return []any{v}
		}

		return nil
	case *types.Document:
		if v.Len() != 1 {
			return nil
		}

		op := v.Keys()[0]
		operand := must.NotFail(v.Get(op))

		switch op {
		case "$eq":
			switch operand.(type) {
			case string:
				return []any{operand}
			case types.ObjectID:
				if id {
					return []any{operand}
				}
			}

			return nil
		case "$in":
			arr, ok := operand.(*types.Array)
			if !ok || arr.Len() == 0 {
				return nil
			}

			out := make([]any, 0, arr.Len())

			for i := 0; i < arr.Len(); i++ {
				e := must.NotFail(arr.Get(i))

				switch e.(type) {
				case string:
					out = append(out, e)
				case types.ObjectID:
					if !id {
						return nil
					}

					out = append(out, e)
				default:
					return nil
				}
			}

			return out
		}
	}

	return nil
}

// lowerBound recognizes {$gt: n} and {$gte: n} for a finite number n and
// returns the SQL operator and n.
func lowerBound(v any) (string, any, bool) {
	d, ok := v.(*types.Document)
	if !ok || d.Len() != 1 {
		return "", nil, false
	}

	op := d.Keys()[0]

	var sqlOp string

	switch op {
	case "$gt":
		sqlOp = ">"
	case "$gte":
		sqlOp = ">="
	default:
		return "", nil, false
	}

	switch n := must.NotFail(d.Get(op)).(type) {
	case int32:
		return sqlOp, int64(n), true
	case int64:
		return sqlOp, n, true
	case float64:
		if math.IsNaN(n) || math.IsInf(n, 0) {
			return "", nil, false
		}

		return sqlOp, n, true
	}

	return "", nil, false
}

// plainFieldName reports whether name can be written into a JSON path as is:
// ASCII letters, digits and underscores, not starting with a digit. Other
// names (dotted paths, operators, quotes) are not pushed down.
func plainFieldName(name string) bool {
	if name == "" || name[0] >= '0' && name[0] <= '9' {
		return false
	}

	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}

	return true
}
