package slurmapi

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// The submit hot path without the backend's API write: authenticate,
// decode and validate the body, render the answer. Together these bound
// the server's own CPU per submission.

func BenchmarkAuthenticate(b *testing.B) {
	a := testAuth()
	a.verified = newTokenCache()
	tok, _ := MintToken(testKey, "alice", time.Hour)
	req := httptest.NewRequest("POST", "/slurm/v0.0.45/job/submit", nil)
	req.Header.Set("X-SLURM-USER-TOKEN", tok)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Authenticate(req, time.Now()); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeSubmission(b *testing.B) {
	body := []byte(`{"script":"#!/bin/bash\n#SBATCH -J train -N 2 --ntasks-per-node=8\n#SBATCH --gres=gpu:h100:8 -t 4:00:00\nsrun python train.py\n",` +
		`"job":{"partition":"h100","account":"nlp","environment":["PATH=/usr/bin:/bin","HOME=/home/alice"],"current_working_directory":"/home/alice"}}`)
	cat := testCatalog()
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := DecodeSubmission(body, "alice", cat, SubmitPolicy{ShardsPerGPU: 8}, time.Now()); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRenderSubmitResponse(b *testing.B) {
	srv, err := NewServer(Config{Auth: *testAuth()}, nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, v := range []string{"v0.0.41", "v0.0.45"} {
		spec := srv.specs[v]
		shape := spec.Response("POST", "slurm/job/submit")
		req := httptest.NewRequest("POST", "/slurm/"+v+"/job/submit", nil)
		b.Run(v, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				rec := httptest.NewRecorder()
				srv.write(rec, req, spec, shape, &call{}, map[string]any{
					"job_id": int64(1234), "step_id": "batch", "job_submit_user_msg": "",
					"result": map[string]any{"job_id": int64(1234), "step_id": "batch", "job_submit_user_msg": "", "error_code": 0, "error": ""},
				}, nil)
			}
		})
	}
}

// BenchmarkRenderJobs is squeue over a large queue.
func BenchmarkRenderJobs(b *testing.B) {
	srv, err := NewServer(Config{Auth: *testAuth()}, nil)
	if err != nil {
		b.Fatal(err)
	}
	spec := srv.specs["v0.0.45"]
	shape := spec.Response("GET", "slurm/jobs")
	req := httptest.NewRequest("GET", "/slurm/v0.0.45/jobs", nil)
	for _, n := range []int{100, 10000} {
		jobs := make([]Job, 0, n)
		for len(jobs) < n {
			jobs = append(jobs, sampleJobs()...)
		}
		jobs = jobs[:n]
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				rec := httptest.NewRecorder()
				srv.write(rec, req, spec, shape, &call{}, renderJobs(jobs, "sluice", t0), nil)
			}
		})
	}
}

// BenchmarkPingLoopback16 measures the REST layer alone (HTTP, token
// check, rendering) with 16 concurrent clients over loopback: the ceiling
// the server's own work puts on any endpoint, the backend aside.
func BenchmarkPingLoopback16(b *testing.B) {
	srv, err := NewServer(Config{Auth: *testAuth()}, nil)
	if err != nil {
		b.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	tok, _ := MintToken(testKey, "alice", time.Hour)
	client := ts.Client()
	client.Transport.(*http.Transport).MaxIdleConnsPerHost = 16
	b.SetParallelism(8) // 8 x GOMAXPROCS(2) = 16 clients on this machine
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req, _ := http.NewRequest("GET", ts.URL+"/slurm/v0.0.45/ping", nil)
			req.Header.Set("X-SLURM-USER-TOKEN", tok)
			resp, err := client.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Errorf("status %d", resp.StatusCode)
				return
			}
		}
	})
}
