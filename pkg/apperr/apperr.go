// Package apperr types the errors a request can end in. Each carries a stable
// code (the `error` slug of the API's error body) and a sentence for a person;
// pkg/httpx turns them into a status and body in exactly one place.
package apperr

import (
	"errors"
	"fmt"
)

// Code is the stable slug integrators switch on.
type Code string

// The codes of the public and admin APIs.
const (
	InvalidRequest       Code = "invalid_request"
	Unauthorized         Code = "unauthorized"
	NotFound             Code = "not_found"
	Conflict             Code = "conflict"
	PayloadTooLarge      Code = "payload_too_large"
	UnsupportedMediaType Code = "unsupported_media_type"
	RateLimited          Code = "rate_limited"
	Internal             Code = "internal_error"
	Unavailable          Code = "service_unavailable"
)

// Error is an error with a code and a message meant for the caller.
type Error struct {
	Code    Code
	Message string
	// Cause is logged, never shown to the caller.
	Cause error
}

func (e *Error) Error() string {
	if e.Cause != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Cause)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

func (e *Error) Unwrap() error { return e.Cause }

// New returns an error with a code and a message.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wrap attaches a cause to a coded error.
func Wrap(code Code, cause error, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Cause: cause}
}

// Invalid reports a missing or malformed field; the message names it.
func Invalid(format string, args ...any) *Error { return New(InvalidRequest, format, args...) }

// NotFoundf reports an unknown record.
func NotFoundf(format string, args ...any) *Error { return New(NotFound, format, args...) }

// Conflictf reports a well-formed request that the record's state forbids.
func Conflictf(format string, args ...any) *Error { return New(Conflict, format, args...) }

// As returns the coded error inside err, or an internal error wrapping it.
func As(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: Internal, Message: "The server failed to handle the request. Retry later.", Cause: err}
}

// Is reports whether err carries the code.
func Is(err error, code Code) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}
