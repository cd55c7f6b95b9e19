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

// mget reads keys with one MGET, batched with other requests' reads.
func (r *reads) mget(ctx context.Context, keys ...string) ([]any, error) {
	select {
	case <-r.stop:
		return nil, errClosed
	default:
	}
	r.once.Do(r.start)
	rd := readPool.Get().(*read)
	rd.keys, rd.vals, rd.err = keys, nil, nil
	select {
	case r.queue <- rd:
	case <-ctx.Done():
		readPool.Put(rd)
		return nil, ctx.Err()
	case <-r.stop:
		readPool.Put(rd)
		return nil, errClosed
	}
	select {
	case <-rd.done:
		vals, err := rd.vals, rd.err
		readPool.Put(rd)
		return vals, err
	case <-ctx.Done():
		// The batch still answers into rd.done (buffered); rd is not reused.
		return nil, ctx.Err()
	}
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
	batch := make([]*read, 0, maxBatch)
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
			r.exec(batch)
		}
	}
}

func (r *reads) exec(batch []*read) {
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	defer cancel()
	cmds := make([]*redis.SliceCmd, len(batch))
	var err error
	if len(batch) == 1 {
		cmds[0] = r.rdb.MGet(ctx, batch[0].keys...)
	} else {
		pipe := r.rdb.Pipeline()
		for i, rd := range batch {
			cmds[i] = pipe.MGet(ctx, rd.keys...)
		}
		_, err = pipe.Exec(ctx)
	}
	for i, rd := range batch {
		rd.vals, rd.err = cmds[i].Val(), cmds[i].Err()
		if rd.err == nil && err != nil {
			rd.err = err
		}
		rd.done <- struct{}{}
	}
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
