// Package embedded starts the in-process stand-ins for the production
// dependencies: FerretDB v1 (MongoDB wire protocol over SQLite files) and a
// franz-go kfake Kafka broker. Services always reach them over TCP through the
// real client libraries; only the process on the other end differs.
package embedded

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/FerretDB/FerretDB/ferretdb"
	"github.com/twmb/franz-go/pkg/kfake"

	"quarters.dev/tools/devstack/freeport"
)

var newMu sync.Mutex

// PoolSize is the connections each client of the embedded store may open.
// Four let a service's reads and writes overlap (about 40% more webhook
// deliveries per second in tools/devstack/bench/webhooks.sh than one) while
// the machine's CPUs, not the connections, stay the limit.
const PoolSize = 4

// Mongo is a running embedded FerretDB.
type Mongo struct {
	// URI reaches the store with a pool of PoolSize connections per
	// client. Upstream FerretDB v1 makes single-document updates atomic only
	// within one connection, which is why ARCHITECTURE.md gives each
	// process one; the copy built here (third_party/ferretdb, QUARTERS.md)
	// makes them atomic across connections, so a service's requests, relay
	// and consumers no longer wait in one line.
	URI    string
	Addr   string
	cancel context.CancelFunc
	done   chan error
}

// StartMongo starts FerretDB with the SQLite handler keeping its files under
// dir, listening on addr ("127.0.0.1:0" picks a free port).
func StartMongo(ctx context.Context, dir, addr string, log *slog.Logger) (*Mongo, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create store dir: %w", err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	if _, port, _ := net.SplitHostPort(addr); port == "0" {
		addr, err = freeport.Addr()
		if err != nil {
			return nil, err
		}
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// ferretdb.New writes a package-level version record; two stores
	// starting at once in one process (parallel tests) must take turns.
	newMu.Lock()
	f, err := ferretdb.New(&ferretdb.Config{
		Listener: ferretdb.ListenerConfig{TCP: addr},
		Handler:  "sqlite",
		// WAL (FerretDB's default) with synchronous=NORMAL: a commit
		// survives the dev stack's process being killed, not a power loss
		// of the machine; it saves an fsync per write (14% more webhook
		// deliveries per second in tools/devstack/bench/webhooks.sh).
		SQLiteURL: "file:" + abs + "/?_pragma=synchronous(normal)",
		Logger:    log,
	})
	newMu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("start FerretDB: %w", err)
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	m := &Mongo{Addr: addr, cancel: cancel, done: make(chan error, 1)}
	go func() { m.done <- f.Run(runCtx) }()
	if err := waitTCP(ctx, addr, 10*time.Second); err != nil {
		cancel()
		return nil, fmt.Errorf("FerretDB did not listen on %s: %w", addr, err)
	}
	m.URI = fmt.Sprintf("mongodb://%s/?maxPoolSize=%d", addr, PoolSize)
	return m, nil
}

// Stop shuts FerretDB down and waits for it.
func (m *Mongo) Stop() {
	m.cancel()
	select {
	case <-m.done:
	case <-time.After(10 * time.Second):
	}
}

// Kafka is a running embedded single-broker Kafka.
type Kafka struct {
	Brokers []string
	cluster *kfake.Cluster
}

// StartKafka starts a one-broker kfake cluster. With dataDir set, the log is
// kept on disk there and reloaded on the next start.
func StartKafka(addr, dataDir string) (*Kafka, error) {
	port := 0
	if addr != "" {
		_, p, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("kafka address %q: %w", addr, err)
		}
		port, _ = strconv.Atoi(p)
	}
	if port == 0 {
		a, err := freeport.Addr()
		if err != nil {
			return nil, err
		}
		_, p, _ := net.SplitHostPort(a)
		port, _ = strconv.Atoi(p)
	}
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.Ports(port), kfake.DefaultNumPartitions(4)}
	if dataDir != "" {
		if err := os.MkdirAll(dataDir, 0o755); err != nil {
			return nil, fmt.Errorf("create kafka dir: %w", err)
		}
		opts = append(opts, kfake.DataDir(dataDir))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		return nil, fmt.Errorf("start kafka: %w", err)
	}
	return &Kafka{Brokers: c.ListenAddrs(), cluster: c}, nil
}

// Cluster exposes the kfake cluster for fault injection in tests.
func (k *Kafka) Cluster() *kfake.Cluster { return k.cluster }

// Stop closes the broker.
func (k *Kafka) Stop() { k.cluster.Close() }

func waitTCP(ctx context.Context, addr string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}
