package httpx

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"quarters.dev/pkg/apperr"
)

// DecodeJSON reads the request body as one JSON object into dst. Errors name
// the field at fault, or say why the body is unreadable; an oversized body is
// payload_too_large.
func DecodeJSON(c *gin.Context, dst any) error {
	if ct := c.GetHeader("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return apperr.Invalid("The body must be JSON (Content-Type: application/json).")
		}
	}
	dec := json.NewDecoder(c.Request.Body)
	dec.UseNumber()
	if err := dec.Decode(dst); err != nil {
		return jsonError(err)
	}
	if err := dec.Decode(&struct{}{}); !errors.Is(err, io.EOF) {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return err
		}
		return apperr.Invalid("The body must hold exactly one JSON object.")
	}
	return nil
}

// DecodeOptionalJSON is DecodeJSON for a body that may be left out: an empty
// body leaves dst as it is.
func DecodeOptionalJSON(c *gin.Context, dst any) error {
	if c.Request.Body == nil || c.Request.Body == http.NoBody || c.Request.ContentLength == 0 {
		return nil
	}
	br := bufio.NewReader(c.Request.Body)
	if _, err := br.Peek(1); errors.Is(err, io.EOF) {
		return nil
	}
	c.Request.Body = struct {
		io.Reader
		io.Closer
	}{br, c.Request.Body}
	return DecodeJSON(c, dst)
}

func jsonError(err error) error {
	var mbe *http.MaxBytesError
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &mbe):
		return err
	case errors.Is(err, io.EOF):
		return apperr.Invalid("The body is empty; a JSON object is required.")
	case errors.As(err, &typeErr):
		if typeErr.Field == "" {
			return apperr.Invalid("The body must be a JSON object.")
		}
		return apperr.Invalid("Field %s must be %s.", typeErr.Field, describe(typeErr.Type.Kind().String()))
	case errors.As(err, &syntaxErr), errors.Is(err, io.ErrUnexpectedEOF):
		return apperr.Invalid("The body is not valid JSON.")
	default:
		var fe fieldError
		if errors.As(err, &fe) {
			return apperr.Invalid("%s", fe.FieldMessage())
		}
		return apperr.Invalid("The body is not valid JSON: %s.", err.Error())
	}
}

// fieldError is implemented by custom unmarshalers that know which field
// they reject.
type fieldError interface {
	error
	FieldMessage() string
}

func describe(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "int", "int32", "int64", "uint", "uint32", "uint64":
		return "an integer"
	case "float32", "float64":
		return "a number"
	case "slice", "array":
		return "an array"
	case "map", "struct", "ptr":
		return "an object"
	default:
		return "of another type"
	}
}
