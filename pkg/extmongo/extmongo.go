// Package extmongo connects services to MongoDB with the settings they all
// share: bounded connect and server-selection timeouts, a ping before the
// service reports itself ready, a readiness check, and index creation limited to
// what both production MongoDB and the embedded FerretDB accept.
package extmongo

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"
)

const (
	// ConnectTimeout bounds establishing one connection to a server.
	ConnectTimeout = 5 * time.Second
	// ServerSelectionTimeout bounds how long an operation waits for a usable
	// server before it fails, so a store outage surfaces as an error instead of
	// a hung request.
	ServerSelectionTimeout = 5 * time.Second
	// checkTimeout bounds a readiness ping whose context carries no deadline.
	checkTimeout = 3 * time.Second
)

// Connect opens a client for uri, pings the primary and returns the client and
// the named database. Errors name the hosts that were tried, never the
// credentials in the URI. The caller disconnects the client on shutdown.
func Connect(ctx context.Context, uri, database string) (*mongo.Client, *mongo.Database, error) {
	if database == "" {
		return nil, nil, errors.New("connect to MongoDB: database name is empty")
	}
	target := Redact(uri)
	opts := options.Client().
		ApplyURI(uri).
		SetConnectTimeout(ConnectTimeout).
		SetServerSelectionTimeout(ServerSelectionTimeout)
	client, err := mongo.Connect(opts)
	if err != nil {
		return nil, nil, redactErr(uri, fmt.Errorf("connect to MongoDB at %s: %w", target, err))
	}
	pingCtx, cancel := context.WithTimeout(ctx, ConnectTimeout+ServerSelectionTimeout)
	defer cancel()
	if err := client.Ping(pingCtx, readpref.Primary()); err != nil {
		discCtx, discCancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer discCancel()
		_ = client.Disconnect(discCtx)
		return nil, nil, redactErr(uri, fmt.Errorf("ping MongoDB at %s: %w", target, err))
	}
	return client, client.Database(database), nil
}

// Check returns a readiness check that pings db's server. Without a deadline
// on ctx the ping is bounded by a few seconds.
func Check(db *mongo.Database) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		if _, ok := ctx.Deadline(); !ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, checkTimeout)
			defer cancel()
		}
		if err := db.RunCommand(ctx, bson.D{{Key: "ping", Value: 1}}).Err(); err != nil {
			return fmt.Errorf("ping MongoDB database %s: %w", db.Name(), err)
		}
		return nil
	}
}

// EnsureIndexes creates the given indexes on coll unless they already exist
// with the same name and keys. Only plain and unique (and sparse) indexes are
// accepted: the embedded store refuses TTL and partial indexes, so a service
// expires documents with a periodic delete instead.
func EnsureIndexes(ctx context.Context, coll *mongo.Collection, models ...mongo.IndexModel) error {
	if len(models) == 0 {
		return nil
	}
	for i, m := range models {
		if err := checkIndexModel(m); err != nil {
			return fmt.Errorf("index %d on %s: %w", i, coll.Name(), err)
		}
	}
	// One createIndexes command per index: the embedded store drops the
	// connection when a single command names several indexes that all exist.
	for _, m := range models {
		if _, err := coll.Indexes().CreateOne(ctx, m); err != nil {
			return fmt.Errorf("create index %v on %s: %w", m.Keys, coll.Name(), err)
		}
	}
	return nil
}

func checkIndexModel(m mongo.IndexModel) error {
	if m.Keys == nil {
		return errors.New("no keys")
	}
	if m.Options == nil {
		return nil
	}
	var o options.IndexOptions
	for _, set := range m.Options.List() {
		if err := set(&o); err != nil {
			return err
		}
	}
	switch {
	case o.ExpireAfterSeconds != nil:
		return errors.New("TTL indexes are not supported; expire documents with a periodic delete")
	case o.PartialFilterExpression != nil:
		return errors.New("partial indexes are not supported")
	}
	return nil
}

// Redact returns uri reduced to its scheme and hosts, dropping credentials,
// path and options, for use in logs and errors.
func Redact(uri string) string {
	scheme, rest, ok := strings.Cut(uri, "://")
	if !ok {
		return "(malformed URI)"
	}
	if i := strings.IndexAny(rest, "/?"); i >= 0 {
		rest = rest[:i]
	}
	if i := strings.LastIndex(rest, "@"); i >= 0 {
		rest = rest[i+1:]
	}
	return scheme + "://" + rest
}

// redactErr hides the URI's user info should the driver have echoed any of it.
func redactErr(uri string, err error) error {
	secrets := userInfoParts(uri)
	if len(secrets) == 0 {
		return err
	}
	msg := err.Error()
	for _, s := range secrets {
		msg = strings.ReplaceAll(msg, s, "xxxxx")
	}
	return &redactedError{msg: msg, err: err}
}

func userInfoParts(uri string) []string {
	_, rest, ok := strings.Cut(uri, "://")
	if !ok {
		return nil
	}
	if i := strings.IndexAny(rest, "/?"); i >= 0 {
		rest = rest[:i]
	}
	i := strings.LastIndex(rest, "@")
	if i < 0 {
		return nil
	}
	userInfo := rest[:i]
	var parts []string
	if userInfo != "" {
		parts = append(parts, userInfo)
	}
	if _, pass, ok := strings.Cut(userInfo, ":"); ok && pass != "" {
		parts = append(parts, pass)
	}
	return parts
}

// redactedError keeps the driver's error reachable through errors.Is and
// errors.As while printing a message without credentials.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// Config is the MongoDB part of a service's configuration.
type Config struct {
	URI string `env:"QUARTERS_MONGO_URI" required:"true"`
	// Database defaults to DefaultDatabase of the service.
	Database string `env:"QUARTERS_MONGO_DATABASE"`
}

// DatabaseFor returns the configured database, or the service's default one.
func (c Config) DatabaseFor(service string) string {
	if c.Database != "" {
		return c.Database
	}
	return DefaultDatabase(service)
}

// DefaultDatabase is the database a service owns unless configured otherwise:
// "quarters_" and the service name, dashes turned to underscores.
func DefaultDatabase(service string) string {
	return "quarters_" + strings.ReplaceAll(service, "-", "_")
}
