package chaos

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"
)

// TestClientDisconnectsMidSubmit: every submission's first attempt hangs
// up right after sending its body (after a few milliseconds, so some are
// stored and some not when the server notices), and is then retried with
// the same Idempotency-Key until answered. Each must be one job: the
// checks find a second PodGroup for a submission, or an acknowledged id
// with none.
func TestClientDisconnectsMidSubmit(t *testing.T) {
	f := beginWith(t, 1, "", func(l *load) { l.hangUpFirst = true })
	at := f.load.started
	f.end("client hangs up mid-submit", at, 0)
	if f.load.hangups.Load() == 0 {
		t.Error("no submission hung up")
	}
}

// hangUp sends one submission over a raw connection and closes it after
// wait, before the answer is read: the client of a dropped connection.
func hangUp(ctx context.Context, addr, token, key, body string, wait time.Duration) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	_, err = fmt.Fprintf(conn, "POST /slurm/v0.0.44/job/submit HTTP/1.1\r\nHost: %s\r\nX-SLURM-USER-TOKEN: %s\r\nIdempotency-Key: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		addr, token, key, len(body), body)
	time.Sleep(wait)
	return err
}
