package authn

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/v9"

	"quarters.dev/pkg/httpx"
	"quarters.dev/pkg/testenv"
)

func testRedis(tb testing.TB) redis.UniversalClient { return testenv.Redis(tb) }

func newCredential(t testing.TB, s *Store, org string) (id, secret string) {
	t.Helper()
	id = NewClientID()
	secret, hash := NewSecret()
	if err := s.PutCredential(context.Background(), id, org, hash); err != nil {
		t.Fatal(err)
	}
	return id, secret
}

// newToken records a credential set of org and mints a token from it.
func newToken(t testing.TB, s *Store, org string) (id, secret, token string) {
	t.Helper()
	id, secret = newCredential(t, s, org)
	p, err := s.VerifySecret(context.Background(), id, secret)
	if err != nil {
		t.Fatal(err)
	}
	if token, err = s.Mint(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	return id, secret, token
}

func router(s *Store) http.Handler {
	e := httpx.New(httpx.Options{})
	e.GET("/me", Middleware(s), func(c *gin.Context) {
		p := FromContext(c)
		c.JSON(200, gin.H{"org": p.OrgID, "client": p.ClientID})
	})
	e.GET("/admin", Admin("s3cret"), func(c *gin.Context) { c.Status(204) })
	return e
}

func call(h http.Handler, path, auth string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("GET", path, nil)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

func basic(id, secret string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(id+":"+secret))
}

func TestBearerAndBasicReachTheSameOrg(t *testing.T) {
	t.Parallel()
	s := NewStore(testRedis(t))
	id, secret := newCredential(t, s, "org-a")
	p, err := s.VerifySecret(context.Background(), id, secret)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := s.Mint(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	h := router(s)
	for _, auth := range []string{"Bearer " + tok, "bearer " + tok, basic(id, secret)} {
		w := call(h, "/me", auth)
		if w.Code != 200 || !strings.Contains(w.Body.String(), `"org":"org-a"`) {
			t.Errorf("%s: %d %s", auth[:6], w.Code, w.Body.String())
		}
	}
}

func TestRejectedCredentials(t *testing.T) {
	t.Parallel()
	s := NewStore(testRedis(t))
	id, secret, tok := newToken(t, s, "org-b")
	h := router(s)
	for name, auth := range map[string]string{
		"missing":          "",
		"no scheme":        tok,
		"empty bearer":     "Bearer ",
		"unknown scheme":   "Token " + tok,
		"trailing garbage": "Bearer " + tok + "x",
		"extra field":      "Bearer " + tok + " x",
		"unknown token":    "Bearer qt_" + id[3:] + "_" + random(),
		"other set token":  "Bearer qt_" + NewClientID()[3:] + tok[3+24:],
		"wrong secret":     basic(id, secret+"x"),
		"unknown client":   basic(NewClientID(), secret),
		"bad base64":       "Basic !!!",
		"no colon":         "Basic " + base64.StdEncoding.EncodeToString([]byte(id)),
	} {
		w := call(h, "/me", auth)
		if w.Code != 401 || w.Header().Get("WWW-Authenticate") != "Bearer" || !strings.Contains(w.Body.String(), `"error":"unauthorized"`) {
			t.Errorf("%s: %d %v %s", name, w.Code, w.Header(), w.Body.String())
		}
	}
}

func TestRevocationFailsTokensOfThatSetOnly(t *testing.T) {
	t.Parallel()
	s := NewStore(testRedis(t))
	ctx := context.Background()
	id1, sec1, t1 := newToken(t, s, "org-c")
	_, _, t2 := newToken(t, s, "org-c")
	if err := s.RevokeCredential(ctx, id1); err != nil {
		t.Fatal(err)
	}
	h := router(s)
	if w := call(h, "/me", "Bearer "+t1); w.Code != 401 {
		t.Errorf("revoked token: %d", w.Code)
	}
	if w := call(h, "/me", basic(id1, sec1)); w.Code != 401 {
		t.Errorf("revoked basic: %d", w.Code)
	}
	if w := call(h, "/me", "Bearer "+t2); w.Code != 200 {
		t.Errorf("other set's token: %d", w.Code)
	}
}

func TestTokenExpiresAfterADay(t *testing.T) {
	t.Parallel()
	rdb := testRedis(t)
	s := NewStore(rdb)
	ctx := context.Background()
	id, _, tok := newToken(t, s, "org-d")
	ttl, err := rdb.TTL(ctx, s.tokenKey(id, Hash(tok))).Result()
	if err != nil || ttl <= TokenTTL-10*time.Second || ttl > TokenTTL {
		t.Fatalf("token TTL %v (%v), want about %v", ttl, err, TokenTTL)
	}
	if n, _ := rdb.Exists(ctx, s.tokenKey(id, tok)).Result(); n != 0 {
		t.Fatal("token stored in clear")
	}
}

func TestRedisDownFailsClosed(t *testing.T) {
	t.Parallel()
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr(), MaxRetries: -1})
	s := NewStore(rdb)
	_, _, tok := newToken(t, s, "org-e")
	mr.Close()
	w := call(router(s), "/me", "Bearer "+tok)
	if w.Code != 503 {
		t.Fatalf("Redis down: %d %s", w.Code, w.Body.String())
	}
}

func TestAdminToken(t *testing.T) {
	t.Parallel()
	h := router(NewStore(testRedis(t)))
	if w := call(h, "/admin", "Bearer s3cret"); w.Code != 204 {
		t.Errorf("good admin token: %d", w.Code)
	}
	for _, auth := range []string{"", "Bearer s3cre", "Bearer s3cretx", "Basic s3cret"} {
		if w := call(h, "/admin", auth); w.Code != 401 {
			t.Errorf("%q: %d", auth, w.Code)
		}
	}
}

func TestConcurrentValidationsAreEachAnswered(t *testing.T) {
	t.Parallel()
	s := NewStore(testRedis(t))
	defer s.Close()
	ctx := context.Background()
	type cred struct{ tok, org string }
	var creds []cred
	for i := range 20 {
		org := fmt.Sprintf("org-many-%d", i)
		_, _, tok := newToken(t, s, org)
		creds = append(creds, cred{tok, org})
	}
	var wg sync.WaitGroup
	for i := range 2000 {
		c := creds[i%len(creds)]
		wg.Go(func() {
			p, err := s.Validate(ctx, c.tok)
			if err != nil || p.OrgID != c.org {
				t.Errorf("validate: %+v %v, want %s", p, err, c.org)
			}
		})
	}
	wg.Wait()
	s.Close()
	if _, err := s.Validate(ctx, creds[0].tok); err == nil {
		t.Fatal("a closed store validated a token")
	}
}

func TestValidationKeysAreTheStoredKeys(t *testing.T) {
	t.Parallel()
	s := NewStore(testRedis(t))
	id, _, tok := newToken(t, s, "org-keys")
	tokKey, credKey, clientID := s.validationKeys(tok)
	if tokKey != s.tokenKey(id, Hash(tok)) || credKey != s.credKey(id) || clientID != id {
		t.Fatalf("keys %q %q %q, want %q %q %q", tokKey, credKey, clientID, s.tokenKey(id, Hash(tok)), s.credKey(id), id)
	}
}

// The store's reads keep a Redis connection of their own; one the server
// closed is replaced without failing the next request, as a pooled one is.
func TestValidationSurvivesARedisRestart(t *testing.T) {
	t.Parallel()
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr(), MaxRetries: -1})
	defer rdb.Close()
	s := NewStore(rdb)
	defer s.Close()
	_, _, tok := newToken(t, s, "org-restart")
	h := router(s)
	if w := call(h, "/me", "Bearer "+tok); w.Code != 200 {
		t.Fatalf("before the restart: %d %s", w.Code, w.Body.String())
	}
	mr.Close()
	if err := mr.Restart(); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if w := call(h, "/me", "Bearer "+tok); w.Code != 200 {
			t.Fatalf("call %d after the restart: %d %s", i+1, w.Code, w.Body.String())
		}
	}
}
