package webhook

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
)

// DefaultMaxBodyBytes bounds a delivery body unless [WithMaxBodyBytes] says
// otherwise. Deliveries are small pointers to records; 1 MiB leaves ample
// room.
const DefaultMaxBodyBytes = 1 << 20

// HandlerFunc handles one verified, decoded delivery. Returning an error
// answers 500, and the delivery id is released from the [Store] so that a
// redelivery of the same change is handled again. The context is the
// request's: it ends when the dispatcher gives up (after ten seconds), so
// long work belongs in a queue of the receiver's own.
type HandlerFunc func(ctx context.Context, ev Event) error

// Option configures [Handler].
type Option func(*handler)

// WithHeaderPrefix sets the middle segment of the delivery header names
// (default "legacy": x-legacy-event, x-legacy-delivery, x-legacy-signature).
func WithHeaderPrefix(prefix string) Option {
	return func(h *handler) { h.prefix = prefix }
}

// WithMaxBodyBytes bounds the size of a delivery body (default
// [DefaultMaxBodyBytes]); a larger one answers 413 without being read.
func WithMaxBodyBytes(n int64) Option {
	return func(h *handler) {
		if n > 0 {
			h.maxBody = n
		}
	}
}

// WithStore sets where handled delivery ids are kept (default: an in-memory
// [MemoryStore] of [DefaultMemoryStoreSize] ids). A receiver that runs more
// than one replica needs a shared store.
func WithStore(s Store) Option {
	return func(h *handler) { h.store = s }
}

// WithoutDedupe handles every delivery, also one whose id was seen before.
func WithoutDedupe() Option {
	return func(h *handler) { h.store = nil; h.noDedupe = true }
}

// WithLogger sets the logger for rejected and failed deliveries (default:
// none).
func WithLogger(l *slog.Logger) Option {
	return func(h *handler) { h.log = l }
}

// Handler returns an http.Handler that receives deliveries signed with
// secret and hands each new one to fn. It answers:
//
//   - 405 to anything but POST;
//   - 413 to a body over the size limit;
//   - 401 to a missing or wrong signature (and 500 if secret is empty);
//   - 400 to a body that is not a delivery, or whose id or event differs
//     from the x-legacy-delivery or x-legacy-event header;
//   - 200 without calling fn to a delivery id already handled;
//   - 500 when fn or the store fails, 204 when fn succeeds.
//
// Deduplication claims the delivery id in the [Store] before fn runs, so two
// concurrent copies of one delivery call fn once; the claim is released when
// fn fails. A copy that arrives while the first is being handled is
// acknowledged at once; should the first then fail, an `updatedSince` read
// of the API recovers the change.
func Handler(secret string, fn HandlerFunc, opts ...Option) http.Handler {
	h := &handler{secret: secret, fn: fn, prefix: DefaultHeaderPrefix, maxBody: DefaultMaxBodyBytes}
	for _, o := range opts {
		o(h)
	}
	if h.store == nil && !h.noDedupe {
		h.store = NewMemoryStore(DefaultMemoryStoreSize)
	}
	h.eventHeader = "x-" + h.prefix + "-event"
	h.deliveryHeader = "x-" + h.prefix + "-delivery"
	h.signatureHeader = "x-" + h.prefix + "-signature"
	return h
}

type handler struct {
	secret   string
	fn       HandlerFunc
	prefix   string
	maxBody  int64
	store    Store
	noDedupe bool
	log      *slog.Logger

	eventHeader, deliveryHeader, signatureHeader string
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		h.reject(w, r, http.StatusMethodNotAllowed, errors.New("method not allowed"))
		return
	}
	if r.ContentLength > h.maxBody {
		h.reject(w, r, http.StatusRequestEntityTooLarge, errors.New("body too large"))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.maxBody))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			h.reject(w, r, http.StatusRequestEntityTooLarge, errors.New("body too large"))
			return
		}
		h.reject(w, r, http.StatusBadRequest, err)
		return
	}
	if err := Verify(h.secret, body, r.Header.Get(h.signatureHeader)); err != nil {
		status := http.StatusUnauthorized
		if errors.Is(err, ErrNoSecret) {
			status = http.StatusInternalServerError
		}
		h.reject(w, r, status, err)
		return
	}
	ev, err := Parse(body)
	if err != nil {
		h.reject(w, r, http.StatusBadRequest, err)
		return
	}
	// The headers are not signed; the body is. They must agree, so that a
	// replayed body cannot be passed off under another delivery id.
	if id := r.Header.Get(h.deliveryHeader); id != "" && id != ev.ID {
		h.reject(w, r, http.StatusBadRequest, errors.New("delivery header differs from the body's id"))
		return
	}
	if name := r.Header.Get(h.eventHeader); name != "" && name != ev.Name {
		h.reject(w, r, http.StatusBadRequest, errors.New("event header differs from the body's event"))
		return
	}
	ctx := r.Context()
	if h.store != nil {
		fresh, err := h.store.Claim(ctx, ev.ID)
		if err != nil {
			h.reject(w, r, http.StatusInternalServerError, err)
			return
		}
		if !fresh {
			w.WriteHeader(http.StatusOK)
			return
		}
	}
	if err := h.fn(ctx, ev); err != nil {
		if h.store != nil {
			// A detached context: the request's may be done, and the claim
			// must go so that a redelivery is handled.
			if rerr := h.store.Release(context.WithoutCancel(ctx), ev.ID); rerr != nil {
				err = errors.Join(err, rerr)
			}
		}
		h.reject(w, r, http.StatusInternalServerError, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (h *handler) reject(w http.ResponseWriter, r *http.Request, status int, err error) {
	if h.log != nil {
		h.log.LogAttrs(r.Context(), slog.LevelWarn, "webhook delivery rejected",
			slog.Int("status", status),
			slog.String("delivery", r.Header.Get(h.deliveryHeader)),
			slog.String("error", err.Error()))
	}
	http.Error(w, strings.ToLower(http.StatusText(status)), status)
}
