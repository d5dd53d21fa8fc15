package launch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/sluicehq/sluice/slurmapi/client"
)

// An allocation's salloc holds it with a connection to its batch host
// (AttachRequest.Hold), as slurmctld pings a salloc: when the last hold
// ends (salloc killed with SIGKILL, its machine gone, its network cut) and
// none comes back within the inactive limit, the launcher releases the
// allocation with holdLostStatus, so the job does not hold its nodes until
// its time limit with nobody to use them. salloc --no-shell holds nothing:
// its allocation stays until scancel or its time limit, as on Slurm.
const (
	// holdKeepalive is how often a holder sends an empty frame, so a
	// connection that went silent (a half-open TCP connection) is noticed.
	holdKeepalive = 20 * time.Second
	// holdSilence is how long a hold may send nothing before it is lost.
	holdSilence = 3 * holdKeepalive
	// defaultInactiveLimit is how long an allocation stays without a hold
	// (slurm.conf's InactiveLimit, which Slurm applies to a salloc that
	// stopped answering): long enough for salloc to reconnect through a
	// restarted Sluice server.
	defaultInactiveLimit = time.Minute
	// EnvInactiveLimit overrides it, in seconds, in the launcher's
	// environment.
	EnvInactiveLimit = "SLUICE_INACTIVE_LIMIT"
	// holdLostStatus is the released allocation's status: its shell's,
	// had the terminal hung up (128+SIGHUP).
	holdLostStatus = 129
)

// holds counts an allocation's holding connections.
type holds struct {
	mu  sync.Mutex
	n   int
	gen int // bumped by every new hold, so a grace timer knows one came back
}

// hold keeps c's hold until the holder closes it or goes silent, then
// releases the allocation if no other hold comes within the inactive limit.
func (s *server) hold(c *frameConn) {
	h := &s.holds
	h.mu.Lock()
	h.n++
	h.gen++
	h.mu.Unlock()
	for {
		_ = c.ws.SetReadDeadline(time.Now().Add(holdSilence))
		if _, _, err := c.ws.ReadMessage(); err != nil {
			break
		}
	}
	h.mu.Lock()
	h.n--
	last, gen := h.n == 0, h.gen
	h.mu.Unlock()
	if !last {
		return
	}
	limit := s.inactiveLimit()
	time.AfterFunc(limit, func() {
		h.mu.Lock()
		lost := h.n == 0 && h.gen == gen
		h.mu.Unlock()
		if lost {
			fmt.Fprintf(os.Stderr, "sluice launch: the allocation's salloc has been gone for %s (inactive limit): releasing it\n", limit)
			s.release(holdLostStatus)
		}
	})
}

// inactiveLimit is EnvInactiveLimit, else defaultInactiveLimit.
func (s *server) inactiveLimit() time.Duration {
	if secs, err := strconv.Atoi(s.getenv(EnvInactiveLimit)); err == nil && secs > 0 {
		return time.Duration(secs) * time.Second
	}
	return defaultInactiveLimit
}

// Hold holds allocation id through the Sluice server until ctx ends (then
// it lets go, and the allocation stays for Release), reconnecting when the
// connection breaks. ready is called once: when the first hold is in place
// (the batch host's launcher is up: salloc's "Nodes ... are ready for
// job"), or when Hold gives up waiting for it (attachWait) or for good.
// An allocation that cannot be held (on simulated nodes, a job that ended)
// is said once on log and Hold returns.
func Hold(ctx context.Context, c *client.Client, id uint32, log io.Writer, ready func()) {
	var once sync.Once
	isReady := func() { once.Do(ready) }
	defer isReady()
	connected, said := false, false
	waitUntil := time.Now().Add(attachWait)
	for ctx.Err() == nil {
		err := holdOnce(ctx, c, id, func() { connected = true; isReady() })
		if ctx.Err() != nil {
			return
		}
		if j, jerr := c.Job(ctx, id); jerr == nil && j.State() != "RUNNING" {
			return // the job ended (scancel, its time limit): nothing to hold
		}
		var apiErr *client.APIError
		if errors.As(err, &apiErr) && !launcherOnItsWay(apiErr) {
			fmt.Fprintf(log, "salloc: warning: this salloc cannot hold job %d (%v): it is released when the command ends, or by scancel\n", id, err)
			return
		}
		pause := 5 * time.Second
		switch {
		case connected && !said:
			fmt.Fprintf(log, "salloc: warning: lost the connection holding job %d (%v); reconnecting\n", id, err)
			said = true
		case !connected && time.Now().After(waitUntil):
			fmt.Fprintf(log, "salloc: warning: job %d's batch host is not up after %s (%v); going on, still trying to hold it\n", id, attachWait, err)
			isReady()
		case !connected:
			pause = time.Second
		}
		select {
		case <-ctx.Done():
		case <-time.After(pause):
		}
	}
}

// holdOnce holds id over one connection until ctx ends or it breaks.
func holdOnce(ctx context.Context, c *client.Client, id uint32, connected func()) error {
	fc, err := dialAttach(ctx, c.URL, c.Token, id, AttachRequest{Hold: true})
	if err != nil {
		return err
	}
	defer fc.close()
	connected()
	broken := make(chan error, 1)
	go func() { // the launcher sends nothing; a read ends when the connection does
		_, _, err := fc.ws.ReadMessage()
		broken <- err
	}()
	tick := time.NewTicker(holdKeepalive)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-broken:
			return fmt.Errorf("the hold ended: %w", err)
		case <-tick.C:
			if err := fc.send(FrameKeepalive, nil); err != nil {
				return err
			}
		}
	}
}
