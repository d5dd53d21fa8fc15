package slurmapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/mux"
)

func TestParseLogOptions(t *testing.T) {
	tests := []struct {
		query   string
		want    LogOptions
		problem string // source of the errors[] entry
	}{
		{"", LogOptions{}, ""},
		{"?follow=true&stream=stderr&node=1", LogOptions{Follow: true, Stream: LogStderr, Node: 1}, ""},
		{"?follow=0&stream=stdout", LogOptions{Stream: LogStdout}, ""},
		{"?follow=maybe", LogOptions{}, "follow"},
		{"?stream=both", LogOptions{}, "stream"},
		{"?node=-1", LogOptions{}, "node"},
		{"?node=first", LogOptions{}, "node"},
	}
	for _, tt := range tests {
		got, e := parseLogOptions(httptest.NewRequest("GET", "/sluice/v1/job/1/log"+tt.query, nil))
		switch {
		case tt.problem != "" && (e == nil || e.Source != tt.problem || e.Status != http.StatusBadRequest):
			t.Errorf("%q: error %v, want a 400 about %s", tt.query, e, tt.problem)
		case tt.problem == "" && (e != nil || got != tt.want):
			t.Errorf("%q: got %+v (%v), want %+v", tt.query, got, e, tt.want)
		}
	}
}

// TestJobLogHandlerRefusesBeforeTheCluster: no token is 401, and a server
// without a cluster says so, both as errors[] entries.
func TestJobLogHandlerRefusesBeforeTheCluster(t *testing.T) {
	key := bytes.Repeat([]byte("k"), 32)
	srv, err := NewServer(Config{Auth: AuthConfig{Key: key}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := mux.NewRouter()
	r.Handle(JobLogPath, srv.JobLogHandler(nil))
	tok, err := MintToken(key, "alice", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, token string
		status      int
		says        string
	}{
		{"no token", "", http.StatusUnauthorized, "no token"},
		{"bad token", "not-a-jwt", http.StatusUnauthorized, ""},
		{"no cluster", tok, http.StatusServiceUnavailable, "without a cluster backend"},
	}
	for _, tt := range tests {
		req := httptest.NewRequest("GET", "/sluice/v1/job/12/log", nil)
		if tt.token != "" {
			req.Header.Set("X-SLURM-USER-TOKEN", tt.token)
		}
		w := httptest.NewRecorder()
		r.ServeHTTP(w, req)
		var doc struct {
			Errors []struct {
				Number      int    `json:"error_number"`
				Description string `json:"description"`
			} `json:"errors"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &doc); err != nil || len(doc.Errors) != 1 {
			t.Errorf("%s: %d %q, want one errors[] entry", tt.name, w.Code, w.Body.String())
			continue
		}
		if w.Code != tt.status || doc.Errors[0].Number == 0 || !strings.Contains(doc.Errors[0].Description, tt.says) {
			t.Errorf("%s: %d %+v, want %d mentioning %q", tt.name, w.Code, doc.Errors[0], tt.status, tt.says)
		}
	}
}
