package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Faults for the chaos suite (test/chaos): each breaks one component of a
// running rig the way a crash, an OOM kill or a stalled disk would, and each
// has its repair. They act on the component's process group, never on a
// process by name.

// KillAPIServer ends kube-apiserver at once with SIGKILL (no graceful
// shutdown: its open watches and requests just break) and returns once the
// process is reaped. StartAPIServer brings it back.
func (c *Cluster) KillAPIServer() error { return c.killComponent("kube-apiserver") }

// StartAPIServer starts kube-apiserver again after KillAPIServer, with the
// flags it first ran with, and returns once it answers /readyz. Its watch
// cache starts empty, so a watch resumed at an older resourceVersion than
// etcd still holds (CompactEtcd) is told 410 Gone and its client relists.
func (c *Cluster) StartAPIServer(ctx context.Context) error {
	comp, err := c.restartComponent("kube-apiserver")
	if err != nil {
		return err
	}
	return c.waitFor(ctx, comp, "kube-apiserver ready again", func(ctx context.Context) error {
		return c.client.CoreV1().RESTClient().Get().AbsPath("/readyz").Do(ctx).Error()
	})
}

// PauseEtcd stops etcd with SIGSTOP: it keeps its connections open and
// answers nothing, as a node whose disk or CPU stalls does, so every API
// server request touching storage hangs. ResumeEtcd (SIGCONT) lets it go on.
// A rig stopped while etcd is paused still stops: SIGKILL ends a stopped
// process.
func (c *Cluster) PauseEtcd() error { return c.signalComponent("etcd", syscall.SIGSTOP) }

// ResumeEtcd continues etcd after PauseEtcd.
func (c *Cluster) ResumeEtcd() error { return c.signalComponent("etcd", syscall.SIGCONT) }

// CompactEtcd compacts etcd's history up to its current revision (and
// defragments nothing): every resourceVersion older than now is gone, so a
// watch the API server has to resume from etcd at one fails with "required
// revision has been compacted" and its clients must relist. It returns the
// revision compacted to. It talks to etcd's JSON gateway, as etcdctl would.
func (c *Cluster) CompactEtcd(ctx context.Context) (int64, error) {
	var head struct {
		Header struct {
			Revision string `json:"revision"`
		} `json:"header"`
	}
	// Any range read carries the store's current revision in its header.
	if err := c.etcdPost(ctx, "/v3/kv/range", map[string]any{"key": "AA=="}, &head); err != nil {
		return 0, fmt.Errorf("etcd revision: %w", err)
	}
	rev, err := strconv.ParseInt(head.Header.Revision, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("etcd revision %q: %w", head.Header.Revision, err)
	}
	err = c.etcdPost(ctx, "/v3/kv/compaction", map[string]any{"revision": strconv.FormatInt(rev, 10), "physical": true}, nil)
	// Nothing written since an earlier compaction to rev: the store is compacted already.
	if err != nil && !strings.Contains(err.Error(), "required revision has been compacted") {
		return 0, fmt.Errorf("compact etcd to %d: %w", rev, err)
	}
	return rev, nil
}

func (c *Cluster) etcdPost(ctx context.Context, path string, body, out any) error {
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.layout.etcdURL()+path, bytes.NewReader(data))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("POST %s: %s %s", path, resp.Status, bytes.TrimSpace(msg))
	}
	if out == nil {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// componentNamed is the running component called name.
func (c *Cluster) componentNamed(name string) (*component, int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, comp := range c.components {
		if comp.name == name {
			return comp, i, nil
		}
	}
	return nil, 0, fmt.Errorf("the rig runs no %s", name)
}

func (c *Cluster) signalComponent(name string, sig syscall.Signal) error {
	comp, _, err := c.componentNamed(name)
	if err != nil {
		return err
	}
	if done, _ := comp.exited(); done {
		return fmt.Errorf("%s has exited", name)
	}
	return syscall.Kill(-comp.pid(), sig)
}

// killComponent SIGKILLs a component's process group and reaps it.
func (c *Cluster) killComponent(name string) error {
	comp, _, err := c.componentNamed(name)
	if err != nil {
		return err
	}
	if done, _ := comp.exited(); done {
		return fmt.Errorf("%s has exited already", name)
	}
	if err := syscall.Kill(-comp.pid(), syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill %s: %w", name, err)
	}
	select {
	case <-comp.done:
		c.progress("%s killed (pid %d)", name, comp.pid())
		return nil
	case <-time.After(stopGrace):
		return fmt.Errorf("%s (pid %d) still runs %s after SIGKILL", name, comp.pid(), stopGrace)
	}
}

// restartComponent runs a component that has exited again, with the same
// binary, flags and environment, in its place in the start order (so Stop
// and Leftovers see the new process, never the old one's reused pid).
func (c *Cluster) restartComponent(name string) (*component, error) {
	old, i, err := c.componentNamed(name)
	if err != nil {
		return nil, err
	}
	if done, _ := old.exited(); !done {
		return nil, fmt.Errorf("%s (pid %d) still runs: kill it first", name, old.pid())
	}
	comp, err := startComponent(name, old.cmd.Path, old.cmd.Args[1:], old.env, c.layout.path("logs"))
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.components[i] = comp
	c.mu.Unlock()
	c.progress("%s restarted (pid %d)", name, comp.pid())
	return comp, nil
}
