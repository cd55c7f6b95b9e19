package authn

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"strings"

	"github.com/gin-gonic/gin"

	"quarters.dev/pkg/apperr"
	"quarters.dev/pkg/httpx"
)

const principalKey = "quarters.principal"

// Middleware authenticates a resource request by bearer token or HTTP Basic.
// A missing, malformed, unknown, expired or revoked credential answers 401
// unauthorized with `WWW-Authenticate: Bearer`; when Redis cannot answer, the
// request is refused with 503.
func Middleware(s *Store) gin.HandlerFunc {
	return func(c *gin.Context) {
		p, err := s.authenticate(c)
		if err != nil {
			httpx.Error(c, err)
			return
		}
		c.Set(principalKey, p)
		httpx.SetOrg(c, p.OrgID)
		c.Next()
	}
}

func (s *Store) authenticate(c *gin.Context) (Principal, error) {
	scheme, cred, ok := strings.Cut(c.GetHeader("Authorization"), " ")
	if !ok || cred == "" || strings.ContainsAny(cred, " \t") {
		return Principal{}, unauthorized()
	}
	ctx := c.Request.Context()
	var (
		p   Principal
		err error
	)
	switch {
	case strings.EqualFold(scheme, "Bearer"):
		p, err = s.Validate(ctx, cred)
	case strings.EqualFold(scheme, "Basic"):
		id, secret, ok := ParseBasic(cred)
		if !ok {
			return Principal{}, unauthorized()
		}
		p, err = s.VerifySecret(ctx, id, secret)
	default:
		return Principal{}, unauthorized()
	}
	switch {
	case errors.Is(err, ErrUnauthenticated):
		return Principal{}, unauthorized()
	case err != nil:
		return Principal{}, apperr.Wrap(apperr.Unavailable, err, "Credentials cannot be checked right now. Retry shortly.")
	}
	return p, nil
}

func unauthorized() error {
	return apperr.New(apperr.Unauthorized, "A valid bearer token is required: mint one at POST /api/v1/oauth2/token.")
}

// ParseBasic decodes the credentials part of an HTTP Basic header.
func ParseBasic(cred string) (id, secret string, ok bool) {
	raw, err := base64.StdEncoding.DecodeString(cred)
	if err != nil {
		return "", "", false
	}
	id, secret, ok = strings.Cut(string(raw), ":")
	if !ok || id == "" || secret == "" {
		return "", "", false
	}
	return id, secret, true
}

// FromContext returns the authenticated caller of a request that passed
// Middleware.
func FromContext(c *gin.Context) Principal {
	p, _ := c.Get(principalKey)
	principal, _ := p.(Principal)
	return principal
}

// Admin authenticates operator requests with the admin bearer token, compared
// in constant time.
func Admin(token string) gin.HandlerFunc {
	want := sha256.Sum256([]byte(token))
	return func(c *gin.Context) {
		scheme, cred, ok := strings.Cut(c.GetHeader("Authorization"), " ")
		got := sha256.Sum256([]byte(cred))
		if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" ||
			subtle.ConstantTimeCompare(want[:], got[:]) != 1 {
			httpx.Error(c, apperr.New(apperr.Unauthorized, "The admin bearer token is missing or wrong."))
			return
		}
		c.Next()
	}
}
