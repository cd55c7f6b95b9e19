package authn

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// reads batches the credential reads of concurrent requests into Redis
// pipelines: each request still reads Redis (nothing is cached), but under
// load one write and one read system call serve many requests instead of
// each paying its own round trip. A batch is sent as soon as the previous one
// returns, so an idle service adds no delay.
type reads struct {
	rdb       redis.UniversalClient
	queue     chan *read
	once      sync.Once
	closeOnce sync.Once
	stop      chan struct{}
	stopped   sync.WaitGroup
}

type read struct {
	keys []string
	// key holds keys, so that a read costs no allocation of its own.
	key  [2]string
	vals []any
	err  error
	done chan struct{}
}

const (
	// readers is how many pipelines may be in flight at once.
	readers = 1
	// maxBatch bounds one pipeline.
	maxBatch = 256
	// batchTimeout bounds one pipeline's round trip.
	batchTimeout = 2 * time.Second
)

var readPool = sync.Pool{New: func() any { return &read{done: make(chan struct{}, 1)} }}

func newReads(rdb redis.UniversalClient) *reads {
	return &reads{rdb: rdb, queue: make(chan *read, 4096), stop: make(chan struct{})}
}

// mget reads keys with one MGET, batched with other requests' reads. The
// batch answers within batchTimeout whatever the caller's context: waiting on
// the request's context would cost each request an allocation for a cancel
// that can only shorten a wait already bounded.
func (r *reads) mget(ctx context.Context, keys ...string) ([]any, error) {
	select {
	case <-r.stop:
		return nil, errClosed
	default:
	}
	r.once.Do(r.start)
	rd := readPool.Get().(*read)
	rd.keys = append(rd.key[:0], keys...)
	rd.vals, rd.err = nil, nil
	select {
	case r.queue <- rd:
	default:
		// The queue is full: wait for room as long as the caller does.
		select {
		case r.queue <- rd:
		case <-ctx.Done():
			readPool.Put(rd)
			return nil, ctx.Err()
		case <-r.stop:
			readPool.Put(rd)
			return nil, errClosed
		}
	}
	select {
	case <-rd.done:
	case <-r.stop:
		// A batch under way, or close draining the queue, still answers;
		// a read queued after the drain does not.
		t := time.NewTimer(batchTimeout)
		defer t.Stop()
		select {
		case <-rd.done:
		case <-t.C:
			// rd may still be answered (done is buffered); it is not reused.
			return nil, errClosed
		}
	}
	vals, err := rd.vals, rd.err
	readPool.Put(rd)
	return vals, err
}

var errClosed = errors.New("authn: store closed")

func (r *reads) start() {
	for range readers {
		r.stopped.Add(1)
		go r.loop()
	}
}

func (r *reads) loop() {
	defer r.stopped.Done()
	var own *redis.Conn
	defer func() {
		if own != nil {
			_ = own.Close()
		}
	}()
	batch := make([]*read, 0, maxBatch)
	cmds := make([]*redis.SliceCmd, 0, maxBatch)
	for {
		select {
		case <-r.stop:
			return
		case first := <-r.queue:
			batch = append(batch[:0], first)
		drain:
			for len(batch) < maxBatch {
				select {
				case rd := <-r.queue:
					batch = append(batch, rd)
				default:
					break drain
				}
			}
			own = r.exec(own, batch, cmds[:len(batch)])
		}
	}
}

// exec answers every read of batch. A loop over a single Redis server keeps
// a connection of its own (own, returned for the next batch): a connection
// taken from the client's pool costs each batch a health-check system call,
// a deadline reset and two locks (docs/benchmarks.md, "a cheaper credential
// read"). A batch that fails on that connection is sent once more on a
// fresh one, as the pool would have replaced a connection the server had
// closed.
func (r *reads) exec(own *redis.Conn, batch []*read, cmds []*redis.SliceCmd) *redis.Conn {
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	defer cancel()
	var err error
	client, single := r.rdb.(*redis.Client)
	switch {
	case !single:
		err = send(ctx, r.rdb, batch, cmds)
	default:
		for attempt := 0; attempt < 2; attempt++ {
			if own == nil {
				own = client.Conn()
			}
			if err = send(ctx, own, batch, cmds); err == nil {
				break
			}
			_ = own.Close()
			own = nil
		}
	}
	for i, rd := range batch {
		rd.vals, rd.err = cmds[i].Val(), cmds[i].Err()
		if rd.err == nil && err != nil {
			rd.err = err
		}
		rd.done <- struct{}{}
	}
	return own
}

// send reads every batch member's keys, in one pipeline when there are
// several, filling cmds; the error is the first failure.
func send(ctx context.Context, c redis.Cmdable, batch []*read, cmds []*redis.SliceCmd) error {
	if len(batch) == 1 {
		cmds[0] = c.MGet(ctx, batch[0].keys...)
		return cmds[0].Err()
	}
	pipe := c.Pipeline()
	for i, rd := range batch {
		cmds[i] = pipe.MGet(ctx, rd.keys...)
	}
	_, err := pipe.Exec(ctx)
	return err
}

// close stops the batchers; reads waiting in the queue fail.
func (r *reads) close() {
	r.closeOnce.Do(func() { close(r.stop) })
	r.stopped.Wait()
	for {
		select {
		case rd := <-r.queue:
			rd.err = errClosed
			rd.done <- struct{}{}
		default:
			return
		}
	}
}
