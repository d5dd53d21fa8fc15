package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/sluicehq/sluice/k8sscheduler/apis/jobstate"
	"github.com/sluicehq/sluice/slurmapi/client"
)

// logsFilePoll is how often a followed output file is read again, and the job's state
// asked for.
const logsFilePoll = time.Second

// outputFileHere is the job's batch output file (its --error file for stream "stderr")
// when this machine sees it, as a login node that mounts the cluster's filesystems
// does; "" and why not otherwise (why is "" when the job names no file of its own).
func outputFileHere(j client.Job, stream string) (path, why string) {
	path = j.StdOut
	if stream == "stderr" {
		if j.StdErr == "" || j.StdErr == j.StdOut {
			return "", "" // one file holds both streams: only the pod log tells them apart
		}
		path = j.StdErr
	}
	if path == "" || path == "/dev/null" {
		return "", ""
	}
	info, err := os.Stat(path)
	switch {
	case err != nil:
		return "", fmt.Sprintf("its output file %s is not on this machine (%v)", path, errors.Unwrap(err))
	case !info.Mode().IsRegular():
		return "", fmt.Sprintf("its output file %s is not a regular file", path)
	}
	return path, ""
}

// printOutputFile copies the file to w; following, it goes on as the file grows until
// the job has ended and the file has no more.
func printOutputFile(ctx context.Context, c *client.Client, job, path string, follow bool, w io.Writer) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	for {
		if _, err := io.Copy(w, f); err != nil {
			return fmt.Errorf("reading %s: %w", path, err)
		}
		if !follow {
			return nil
		}
		ended := false
		if recs, err := c.JobRecords(ctx, job); err == nil && len(recs) == 1 {
			ended = jobstate.State(recs[0].State()).Final()
		}
		if ended {
			_, err := io.Copy(w, f) // what it wrote last
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(logsFilePoll):
		}
	}
}
