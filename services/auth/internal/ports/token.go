package ports

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/gin-gonic/gin"

	"quarters.dev/pkg/authn"
	"quarters.dev/pkg/httpx"
	"quarters.dev/services/auth/internal/app"
)

// maxTokenBody bounds the token request: three short fields.
const maxTokenBody = 16 << 10

// tokenError is the RFC 6749 error of the token endpoint.
type tokenError struct {
	status int
	code   string
	desc   string
}

func (e *tokenError) Error() string { return e.code + ": " + e.desc }

func invalidRequest(desc string) *tokenError {
	return &tokenError{http.StatusBadRequest, "invalid_request", desc}
}

var errInvalidClient = &tokenError{http.StatusUnauthorized, "invalid_client",
	"Client authentication failed: unknown client, wrong secret, or revoked credentials."}

type tokenRequest struct {
	grantType, clientID, clientSecret string
	basic                             bool
}

// tokenHandler serves POST /oauth2/token: the client-credentials grant with
// the credentials in a form body, a JSON body, or HTTP Basic.
func tokenHandler(svc *app.Service) gin.HandlerFunc {
	return func(c *gin.Context) {
		h := c.Writer.Header()
		h.Set("Cache-Control", "no-store")
		h.Set("Pragma", "no-cache")
		req, terr := parseTokenRequest(c.Request)
		if terr == nil {
			var token string
			token, terr = issue(c, svc, req)
			if terr == nil {
				c.JSON(http.StatusOK, gin.H{
					"token_type":   "Bearer",
					"access_token": token,
					"expires_in":   int(authn.TokenTTL.Seconds()),
				})
				return
			}
		}
		if terr.status == http.StatusUnauthorized && req.basic {
			h.Set("WWW-Authenticate", `Basic realm="quarters"`)
		}
		if terr.status == http.StatusRequestEntityTooLarge {
			h.Set("Connection", "close")
		}
		c.AbortWithStatusJSON(terr.status, gin.H{"error": terr.code, "error_description": terr.desc})
	}
}

func issue(c *gin.Context, svc *app.Service, req tokenRequest) (string, *tokenError) {
	token, err := svc.IssueToken(c.Request.Context(), req.clientID, req.clientSecret)
	switch {
	case err == nil:
		return token, nil
	case errors.Is(err, app.ErrInvalidClient), errors.Is(err, authn.ErrUnauthenticated):
		return "", errInvalidClient
	default:
		httpx.Logger(c).ErrorContext(c.Request.Context(), "token exchange failed",
			slog.String("error", err.Error()), slog.String("request_id", httpx.RequestID(c)))
		return "", &tokenError{http.StatusServiceUnavailable, "temporarily_unavailable",
			"Tokens cannot be issued right now. Retry shortly."}
	}
}

func parseTokenRequest(r *http.Request) (tokenRequest, *tokenError) {
	var req tokenRequest
	// Only HTTP Basic authenticates a client here; any other scheme (a
	// bearer sent out of habit) is not client authentication and is
	// ignored, so the body's credentials decide.
	if scheme, cred, _ := strings.Cut(r.Header.Get("Authorization"), " "); strings.EqualFold(scheme, "Basic") {
		req.basic = true
		id, secret, ok := authn.ParseBasic(strings.TrimSpace(cred))
		if !ok {
			return req, errInvalidClient
		}
		// RFC 6749 2.3.1: the id and secret are form-encoded before Basic.
		if u, err := url.QueryUnescape(id); err == nil {
			id = u
		}
		if u, err := url.QueryUnescape(secret); err == nil {
			secret = u
		}
		req.clientID, req.clientSecret = id, secret
	}

	if r.ContentLength > maxTokenBody {
		return req, &tokenError{http.StatusRequestEntityTooLarge, "invalid_request",
			"The request body is larger than 16384 bytes."}
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxTokenBody+1))
	if err != nil {
		return req, invalidRequest("The request body could not be read.")
	}
	if len(body) > maxTokenBody {
		return req, &tokenError{http.StatusRequestEntityTooLarge, "invalid_request",
			"The request body is larger than 16384 bytes."}
	}

	fields, terr := parseTokenBody(r.Header.Get("Content-Type"), body)
	if terr != nil {
		return req, terr
	}
	// A missing grant_type is, as the spec's table has it, "anything but
	// client_credentials".
	req.grantType = fields["grant_type"]
	if req.grantType != "client_credentials" {
		return req, &tokenError{http.StatusBadRequest, "unsupported_grant_type",
			"grant_type must be client_credentials, the only grant supported."}
	}
	id, secret := fields["client_id"], fields["client_secret"]
	if req.basic {
		// One authentication method only; a body id must name the same client.
		if secret != "" || (id != "" && id != req.clientID) {
			return req, invalidRequest("Send the client credentials either with HTTP Basic or in the body, not both.")
		}
		return req, nil
	}
	switch {
	case id == "" && secret == "":
		return req, invalidRequest("client_id and client_secret are required (in the body or with HTTP Basic).")
	case id == "":
		return req, invalidRequest("client_id is required.")
	case secret == "":
		return req, invalidRequest("client_secret is required.")
	}
	req.clientID, req.clientSecret = id, secret
	return req, nil
}

// parseTokenBody reads a form-encoded or JSON body into its string fields.
// An empty body is allowed (credentials may come with Basic, and the
// missing grant_type is reported as such).
func parseTokenBody(contentType string, body []byte) (map[string]string, *tokenError) {
	fields := map[string]string{}
	if len(strings.TrimSpace(string(body))) == 0 {
		return fields, nil
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if contentType == "" || err != nil {
		return nil, invalidRequest("The body must be form-encoded (application/x-www-form-urlencoded) or JSON (application/json).")
	}
	switch {
	case mt == "application/x-www-form-urlencoded":
		values, err := url.ParseQuery(string(body))
		if err != nil {
			return nil, invalidRequest("The form body is malformed.")
		}
		for k, v := range values {
			if len(v) > 1 {
				return nil, invalidRequest("Parameter " + k + " is repeated.")
			}
			fields[k] = v[0]
		}
	case mt == "application/json" || strings.HasSuffix(mt, "+json"):
		var raw map[string]any
		if err := json.Unmarshal(body, &raw); err != nil || raw == nil {
			return nil, invalidRequest("The JSON body must be an object with grant_type, client_id and client_secret.")
		}
		for k, v := range raw {
			if v == nil {
				continue
			}
			s, ok := v.(string)
			if !ok {
				return nil, invalidRequest("Field " + k + " must be a string.")
			}
			fields[k] = s
		}
	default:
		return nil, invalidRequest("The body must be form-encoded (application/x-www-form-urlencoded) or JSON (application/json).")
	}
	return fields, nil
}
