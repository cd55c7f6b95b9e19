package adapters

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"quarters.dev/pkg/apperr"
	"quarters.dev/pkg/extmongo"
	"quarters.dev/services/agreements/internal/app"
)

// DocumentBucket is the GridFS bucket of archived PDFs: the collections
// "documents.files" and "documents.chunks".
const DocumentBucket = "documents"

// chunkSize is GridFS's default chunk size (255 KiB).
const chunkSize = 255 << 10

// readBatch is how many chunks one read of a download fetches.
const readBatch = 4

// Documents stores PDFs in the GridFS layout, so that any MongoDB tool reads
// them. It writes and reads chunk by chunk itself: the driver's upload stream
// buffers 16 MiB per upload and sends it in one insert, and its download
// cursor fetches a whole batch of chunks at once, either of which would hold
// a large part of a 25 MB document in memory.
type Documents struct {
	files  *mongo.Collection
	chunks *mongo.Collection
}

// NewDocuments returns the document store in db and creates its index.
func NewDocuments(ctx context.Context, db *mongo.Database) (*Documents, error) {
	d := &Documents{files: db.Collection(DocumentBucket + ".files"), chunks: db.Collection(DocumentBucket + ".chunks")}
	err := extmongo.EnsureIndexes(ctx, d.chunks, mongo.IndexModel{
		Keys:    bson.D{{Key: "files_id", Value: 1}, {Key: "n", Value: 1}},
		Options: options.Index().SetUnique(true).SetName("files_id_1_n_1"),
	})
	if err != nil {
		return nil, err
	}
	return d, nil
}

type fileDoc struct {
	ID         bson.ObjectID `bson:"_id"`
	Length     int64         `bson:"length"`
	ChunkSize  int32         `bson:"chunkSize"`
	UploadDate time.Time     `bson:"uploadDate"`
	Filename   string        `bson:"filename"`
	Metadata   fileMeta      `bson:"metadata"`
}

type fileMeta struct {
	ReservationID string `bson:"reservationId"`
	AgreementID   string `bson:"agreementId"`
	ContentType   string `bson:"contentType"`
}

type chunkDoc struct {
	ID      bson.ObjectID `bson:"_id"`
	FilesID bson.ObjectID `bson:"files_id"`
	N       int32         `bson:"n"`
	Data    []byte        `bson:"data"`
}

// Create implements app.Documents.
func (d *Documents) Create(ctx context.Context, m app.FileMeta) (app.Upload, error) {
	return &upload{ctx: ctx, d: d, id: bson.NewObjectID(), meta: m, buf: make([]byte, 0, chunkSize)}, nil
}

type upload struct {
	ctx  context.Context
	d    *Documents
	id   bson.ObjectID
	meta app.FileMeta
	buf  []byte
	n    int32
	size int64
}

func (u *upload) FileID() string { return u.id.Hex() }

func (u *upload) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		k := min(chunkSize-len(u.buf), len(p))
		u.buf = append(u.buf, p[:k]...)
		p = p[k:]
		written += k
		if len(u.buf) == chunkSize {
			if err := u.flush(); err != nil {
				return written, err
			}
		}
	}
	return written, nil
}

func (u *upload) flush() error {
	if len(u.buf) == 0 {
		return nil
	}
	_, err := u.d.chunks.InsertOne(u.ctx, chunkDoc{ID: bson.NewObjectID(), FilesID: u.id, N: u.n, Data: u.buf})
	if err != nil {
		return fmt.Errorf("write chunk %d of document %s: %w", u.n, u.id.Hex(), err)
	}
	u.size += int64(len(u.buf))
	u.n++
	u.buf = u.buf[:0]
	return nil
}

func (u *upload) Close() error {
	if err := u.flush(); err != nil {
		return err
	}
	_, err := u.d.files.InsertOne(u.ctx, fileDoc{
		ID: u.id, Length: u.size, ChunkSize: chunkSize, UploadDate: time.Now().UTC(),
		Filename: u.meta.AgreementID + ".pdf",
		Metadata: fileMeta{ReservationID: u.meta.ReservationID, AgreementID: u.meta.AgreementID, ContentType: u.meta.ContentType},
	})
	if err != nil {
		return fmt.Errorf("write document %s: %w", u.id.Hex(), err)
	}
	return nil
}

func (u *upload) Abort() error {
	ctx := context.WithoutCancel(u.ctx)
	if _, err := u.d.chunks.DeleteMany(ctx, bson.D{{Key: "files_id", Value: u.id}}); err != nil {
		return fmt.Errorf("delete chunks of document %s: %w", u.id.Hex(), err)
	}
	return nil
}

// Delete implements app.Documents: the file entry first, so that a file is
// never listed without its chunks.
func (d *Documents) Delete(ctx context.Context, fileID string) error {
	id, err := bson.ObjectIDFromHex(fileID)
	if err != nil {
		return fmt.Errorf("document id %q: %w", fileID, err)
	}
	if _, err := d.files.DeleteOne(ctx, bson.D{{Key: "_id", Value: id}}); err != nil {
		return fmt.Errorf("delete document %s: %w", fileID, err)
	}
	if _, err := d.chunks.DeleteMany(ctx, bson.D{{Key: "files_id", Value: id}}); err != nil {
		return fmt.Errorf("delete chunks of document %s: %w", fileID, err)
	}
	return nil
}

// Open implements app.Documents.
func (d *Documents) Open(ctx context.Context, fileID string) (io.ReadCloser, error) {
	id, err := bson.ObjectIDFromHex(fileID)
	if err != nil {
		return nil, fmt.Errorf("document id %q: %w", fileID, err)
	}
	var f fileDoc
	err = d.files.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&f)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, apperr.NotFoundf("No document is archived for the current agreement.")
	}
	if err != nil {
		return nil, fmt.Errorf("read document %s: %w", fileID, err)
	}
	cur, err := d.chunks.Find(ctx, bson.D{{Key: "files_id", Value: id}},
		options.Find().SetSort(bson.D{{Key: "n", Value: 1}}).SetBatchSize(readBatch))
	if err != nil {
		return nil, fmt.Errorf("read chunks of document %s: %w", fileID, err)
	}
	return &download{ctx: ctx, cur: cur, left: f.Length, id: fileID}, nil
}

type download struct {
	ctx  context.Context
	cur  *mongo.Cursor
	id   string
	buf  []byte
	n    int32
	left int64
}

func (r *download) Read(p []byte) (int, error) {
	for len(r.buf) == 0 {
		if r.left == 0 {
			return 0, io.EOF
		}
		if !r.cur.Next(r.ctx) {
			if err := r.cur.Err(); err != nil {
				return 0, fmt.Errorf("read chunk %d of document %s: %w", r.n, r.id, err)
			}
			return 0, fmt.Errorf("document %s: chunk %d is missing", r.id, r.n)
		}
		var c chunkDoc
		if err := r.cur.Decode(&c); err != nil {
			return 0, fmt.Errorf("decode chunk %d of document %s: %w", r.n, r.id, err)
		}
		if c.N != r.n || int64(len(c.Data)) > r.left {
			return 0, fmt.Errorf("document %s: chunk %d out of order or too long", r.id, c.N)
		}
		r.n++
		r.left -= int64(len(c.Data))
		r.buf = c.Data
	}
	k := copy(p, r.buf)
	r.buf = r.buf[k:]
	return k, nil
}

func (r *download) Close() error { return r.cur.Close(context.WithoutCancel(r.ctx)) }

// FilesBefore lists the files uploaded before t.
func (d *Documents) FilesBefore(ctx context.Context, t time.Time) ([]app.StoredFile, error) {
	cur, err := d.files.Find(ctx, bson.D{{Key: "uploadDate", Value: bson.D{{Key: "$lt", Value: t}}}},
		options.Find().SetProjection(bson.D{{Key: "_id", Value: 1}, {Key: "uploadDate", Value: 1}, {Key: "metadata", Value: 1}}))
	if err != nil {
		return nil, fmt.Errorf("list documents: %w", err)
	}
	var docs []fileDoc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, fmt.Errorf("list documents: %w", err)
	}
	out := make([]app.StoredFile, 0, len(docs))
	for _, f := range docs {
		out = append(out, app.StoredFile{ID: f.ID.Hex(), ReservationID: f.Metadata.ReservationID, UploadedAt: f.UploadDate})
	}
	return out, nil
}

// DeleteStrayChunks removes chunks of uploads that never got a file entry
// (a process that stopped mid-upload) once their upload began before t.
func (d *Documents) DeleteStrayChunks(ctx context.Context, t time.Time) (int, error) {
	ids, err := d.chunks.Distinct(ctx, "files_id", bson.D{}).Raw()
	if err != nil {
		return 0, fmt.Errorf("list chunk owners: %w", err)
	}
	vals, err := ids.Values()
	if err != nil {
		return 0, fmt.Errorf("list chunk owners: %w", err)
	}
	removed := 0
	for _, v := range vals {
		id, ok := v.ObjectIDOK()
		if !ok || !id.Timestamp().Before(t) {
			continue
		}
		n, err := d.files.CountDocuments(ctx, bson.D{{Key: "_id", Value: id}})
		if err != nil {
			return removed, fmt.Errorf("look up document %s: %w", id.Hex(), err)
		}
		if n > 0 {
			continue
		}
		if _, err := d.chunks.DeleteMany(ctx, bson.D{{Key: "files_id", Value: id}}); err != nil {
			return removed, fmt.Errorf("delete chunks of document %s: %w", id.Hex(), err)
		}
		removed++
	}
	return removed, nil
}
