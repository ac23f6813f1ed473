package localcluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"time"
)

// StopComponents stops the named components (Etcd, APIServer, ...) in place, in the order
// given, e.g. StopComponents(APIServer, Etcd): each gets SIGTERM, then SIGKILL after 15 s. Their
// ports, data and certificates stay, so StartComponents brings them back as they were. Clients
// see connection errors meanwhile, as on a control plane restart.
func (c *Cluster) StopComponents(names ...string) error {
	for _, name := range names {
		p := c.proc(name)
		if p == nil {
			return fmt.Errorf("localcluster: no component %q", name)
		}
		p.stop(15 * time.Second)
	}
	return nil
}

// StartComponents starts the named stopped components again, in the order given, with the same
// command line (same ports, same data directory), and waits until each is healthy: etcd's
// /health, kube-apiserver's /readyz. Components still running are left alone.
func (c *Cluster) StartComponents(ctx context.Context, names ...string) error {
	for _, name := range names {
		p := c.proc(name)
		if p == nil {
			return fmt.Errorf("localcluster: no component %q", name)
		}
		if !p.exited() {
			continue
		}
		np, err := startProcess(p.name, p.bin, p.args, c.logDir, p.env)
		if err != nil {
			return err
		}
		c.procs[slices.Index(c.procs, p)] = np
		if err := c.waitHealthy(ctx, np); err != nil {
			return err
		}
	}
	return nil
}

// RestartComponents stops the named components in the order given, keeps them down for down,
// and starts them in the reverse order: RestartComponents(ctx, d, APIServer, Etcd) restarts the
// storage under a stopped API server.
func (c *Cluster) RestartComponents(ctx context.Context, down time.Duration, names ...string) error {
	if err := c.StopComponents(names...); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(down):
	}
	rev := slices.Clone(names)
	slices.Reverse(rev)
	return c.StartComponents(ctx, rev...)
}

func (c *Cluster) proc(name string) *process {
	for _, p := range c.procs {
		if p.name == name {
			return p
		}
	}
	return nil
}

func (c *Cluster) waitHealthy(ctx context.Context, p *process) error {
	ctx, cancel := context.WithTimeout(ctx, c.opts.StartTimeout)
	defer cancel()
	var check func(context.Context) (bool, error)
	switch p.name {
	case Etcd:
		check = c.etcdHealthy
	case APIServer:
		ca, err := os.ReadFile(c.apiCA)
		if err != nil {
			return err
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(ca)
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
		check = func(ctx context.Context) (bool, error) {
			_, code, err := httpGet(ctx, client, c.Server+"/readyz", c.Token)
			return err == nil && code == http.StatusOK, err
		}
	default:
		return nil
	}
	// Only p: the other stopped components are expected to be down.
	return waitWhileRunning(ctx, p.name+" after restart", []*process{p}, check)
}

// CompactEtcd compacts etcd's history up to its current revision, as kube-apiserver does every
// five minutes, and returns that revision: a watch from an older resource version then expires
// (410 Gone) and its client must list again.
func (c *Cluster) CompactEtcd(ctx context.Context) (int64, error) {
	var status struct {
		Header struct {
			Revision string `json:"revision"`
		} `json:"header"`
	}
	// The v3 JSON gateway: a range over one key returns the store's revision in its header.
	if err := c.etcdPost(ctx, "/v3/kv/range", `{"key":"AA=="}`, &status); err != nil {
		return 0, err
	}
	rev, err := strconv.ParseInt(status.Header.Revision, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("etcd revision %q: %w", status.Header.Revision, err)
	}
	body := fmt.Sprintf(`{"revision":"%d","physical":true}`, rev)
	if err := c.etcdPost(ctx, "/v3/kv/compaction", body, nil); err != nil {
		return 0, err
	}
	return rev, nil
}

func (c *Cluster) etcdPost(ctx context.Context, path, body string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.etcdURL+path, bytes.NewBufferString(body))
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("etcd %s: HTTP %d: %.300s", path, resp.StatusCode, buf.String())
	}
	if out != nil {
		return json.Unmarshal(buf.Bytes(), out)
	}
	return nil
}
