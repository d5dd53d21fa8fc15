// Package client is the Go client of Sluice's slurmrestd-compatible REST API
// that the `sluice` CLI (sbatch, squeue, scancel, sinfo, ...) uses. It speaks
// data_parser v0.0.44, the newest version most Slurm tooling targets, and
// reads Slurm's errors[] entries back into Go errors.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// Version is the data_parser version the client speaks.
const Version = "v0.0.44"

// DefaultURL is where `sluice dev` and a default server listen.
const DefaultURL = "http://127.0.0.1:6820"

// Client calls one Sluice server as one user.
type Client struct {
	URL   string // e.g. http://127.0.0.1:6820
	Token string // an auth/jwt token (SLURM_JWT)
	HTTP  *http.Client
}

// FromEnv builds a client the way Slurm's tools find their server: the URL
// from $SLUICE_URL (or $SLURMRESTD_URL), the token from $SLURM_JWT.
// token, when not empty, wins over the environment.
func FromEnv(token string) (*Client, error) {
	u := firstNonEmpty(os.Getenv("SLUICE_URL"), os.Getenv("SLURMRESTD_URL"), DefaultURL)
	if token == "" {
		token = os.Getenv("SLURM_JWT")
	}
	if token == "" {
		return nil, fmt.Errorf("no token: set SLURM_JWT (`eval $(sluice token)` prints one) or pass --token")
	}
	return &Client{URL: strings.TrimRight(u, "/"), Token: token, HTTP: &http.Client{Timeout: 60 * time.Second}}, nil
}

func firstNonEmpty(v ...string) string {
	for _, s := range v {
		if s != "" {
			return s
		}
	}
	return ""
}

// APIError is a non-2xx answer with Slurm's errors[] entries.
type APIError struct {
	Status int
	Errors []ErrorEntry
	// RetryAfter is the answer's Retry-After: the same request may
	// succeed after it (0 when the server did not say so).
	RetryAfter time.Duration `json:"-"`
}

// ErrorEntry is one of Slurm's errors[] entries.
type ErrorEntry struct {
	ErrorNumber int    `json:"error_number"`
	Error       string `json:"error"`
	Description string `json:"description"`
	Source      string `json:"source"`
}

func (e *APIError) Error() string {
	if len(e.Errors) == 0 {
		return fmt.Sprintf("server answered %d %s", e.Status, http.StatusText(e.Status))
	}
	parts := make([]string, 0, len(e.Errors))
	for _, x := range e.Errors {
		msg := x.Description
		if msg == "" {
			msg = x.Error
		}
		parts = append(parts, msg)
	}
	return strings.Join(parts, "; ")
}

// IsNotFound reports whether err is the server saying that the job, node or
// partition asked for does not exist.
func IsNotFound(err error) bool {
	var e *APIError
	return errors.As(err, &e) && e.Status == http.StatusNotFound
}

// IsBadRequest reports whether the server refused the request as malformed
// (a job id that is not one, ...).
func IsBadRequest(err error) bool {
	var e *APIError
	return errors.As(err, &e) && e.Status == http.StatusBadRequest
}

// IsForbidden reports whether err is the server refusing the caller access.
func IsForbidden(err error) bool {
	var e *APIError
	return errors.As(err, &e) && e.Status == http.StatusForbidden
}

// do sends one request and decodes a 2xx body into out (when not nil).
func (c *Client) do(ctx context.Context, method, path string, query url.Values, body, out any) error {
	return c.doWith(ctx, method, path, query, nil, body, out)
}

// doWith is do with extra request headers.
func (c *Client) doWith(ctx context.Context, method, path string, query url.Values, header http.Header, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	u := c.URL + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("X-SLURM-USER-TOKEN", c.Token)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("cannot reach the Sluice server at %s: %w", c.URL, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return apiError(resp.StatusCode, data)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("decoding %s %s: %w", method, path, err)
	}
	return nil
}

// apiError reads a non-2xx answer's errors[] entries.
func apiError(status int, body []byte) *APIError {
	e := &APIError{Status: status}
	var env struct {
		Errors []ErrorEntry `json:"errors"`
	}
	if json.Unmarshal(body, &env) == nil {
		e.Errors = env.Errors
	}
	return e
}

// NoVal is Slurm's no-value struct; it also accepts a plain number.
type NoVal struct {
	Set      bool  `json:"set"`
	Infinite bool  `json:"infinite"`
	Number   int64 `json:"number"`
}

// UnmarshalJSON takes {"set":..,"infinite":..,"number":..} or a bare number.
func (n *NoVal) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] != '{' {
		v, err := strconv.ParseInt(string(b), 10, 64)
		if err != nil {
			return err
		}
		*n = NoVal{Set: true, Number: v}
		return nil
	}
	type plain NoVal
	return json.Unmarshal(b, (*plain)(n))
}

// Value returns the number and whether it is set and finite.
func (n NoVal) Value() (int64, bool) { return n.Number, n.Set && !n.Infinite }

// Set makes a set, finite no-value struct.
func Set(v int64) NoVal { return NoVal{Set: true, Number: v} }
