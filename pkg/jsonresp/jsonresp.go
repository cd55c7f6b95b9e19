// Package jsonresp writes the JSON answers that plain net/http handlers make
// themselves (ops endpoints, the dev stack's ingress and SMTP sink), with the
// headers every Quarters response carries: a JSON content type,
// `Cache-Control: no-store` and `X-Content-Type-Options: nosniff`. Handlers
// built on gin answer through pkg/httpx instead.
package jsonresp

import (
	"encoding/json"
	"net/http"
)

var (
	jsonType = []string{"application/json"}
	noStore  = []string{"no-store"}
	nosniff  = []string{"nosniff"}
)

// Write encodes v as the body of a status answer.
func Write(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b = ErrorBody("internal_error", "the answer could not be encoded")
		status = http.StatusInternalServerError
	}
	WriteBytes(w, status, append(b, '\n'))
}

// WriteBytes answers with body, already encoded JSON.
func WriteBytes(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h["Content-Type"] = jsonType
	h["Cache-Control"] = noStore
	h["X-Content-Type-Options"] = nosniff
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// Error answers with the `{error, message}` body.
func Error(w http.ResponseWriter, status int, code, message string) {
	WriteBytes(w, status, append(ErrorBody(code, message), '\n'))
}

// ErrorBody encodes the `{error, message}` body once, for answers made often.
func ErrorBody(code, message string) []byte {
	b, _ := json.Marshal(struct {
		Error   string `json:"error"`
		Message string `json:"message"`
	}{code, message})
	return b
}
