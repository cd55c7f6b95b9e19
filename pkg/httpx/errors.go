package httpx

import (
	"errors"
	"log/slog"
	"net/http"
	"runtime/debug"

	"github.com/gin-gonic/gin"

	"quarters.dev/pkg/apperr"
)

// Body is the error body of every endpoint except the token exchange.
type Body struct {
	Error   string `json:"error"`
	Message string `json:"message"`
}

// Status maps an error code to its HTTP status.
func Status(code apperr.Code) int {
	switch code {
	case apperr.InvalidRequest:
		return http.StatusBadRequest
	case apperr.Unauthorized:
		return http.StatusUnauthorized
	case apperr.NotFound:
		return http.StatusNotFound
	case apperr.Conflict:
		return http.StatusConflict
	case apperr.PayloadTooLarge:
		return http.StatusRequestEntityTooLarge
	case apperr.UnsupportedMediaType:
		return http.StatusUnsupportedMediaType
	case apperr.RateLimited:
		return http.StatusTooManyRequests
	case apperr.Unavailable:
		return http.StatusServiceUnavailable
	default:
		return http.StatusInternalServerError
	}
}

// Error writes err as the `{error, message}` body with its status: the one
// place where errors become responses. Unknown errors are logged and answer
// 500 internal_error without revealing their text.
func Error(c *gin.Context, err error) {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		err = apperr.New(apperr.PayloadTooLarge, "The request body is larger than %d bytes.", mbe.Limit)
	}
	e := apperr.As(err)
	status := Status(e.Code)
	if status >= 500 {
		Logger(c).ErrorContext(c.Request.Context(), "request failed",
			slog.String("error", err.Error()), slog.String("request_id", RequestID(c)),
			slog.String("path", c.Request.URL.Path))
	}
	if status == http.StatusUnauthorized {
		c.Header("WWW-Authenticate", `Bearer`)
	}
	if status == http.StatusServiceUnavailable {
		c.Header("Retry-After", "1")
	}
	c.Header("Cache-Control", "no-store")
	c.AbortWithStatusJSON(status, Body{Error: string(e.Code), Message: e.Message})
}

// Logger returns the process logger of the request being served.
func Logger(c *gin.Context) *slog.Logger { return info(c).log }

func stack() string { return string(debug.Stack()) }
