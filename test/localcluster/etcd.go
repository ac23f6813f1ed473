package localcluster

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
)

// startEtcd starts the cluster's own etcd on the given ports and waits for its /health, or, with
// Options.EtcdServers, only records that etcd: whoever started it owns it.
func (c *Cluster) startEtcd(ctx context.Context, port, peerPort int) error {
	if c.opts.EtcdServers != "" {
		c.etcdURL = c.opts.EtcdServers
		return nil
	}
	p, url, err := startEtcdProcess(c.binDir, c.path("etcd"), c.logDir, port, peerPort, c.opts.ExtraFlags[Etcd])
	if err != nil {
		return err
	}
	c.procs = append(c.procs, p)
	c.etcdURL = url
	return c.waitFor(ctx, "etcd health", c.etcdHealthy)
}

// startEtcdProcess starts an etcd storing in dataDir and logging to logDir/etcd.log, and
// returns it with its client URL.
func startEtcdProcess(binDir, dataDir, logDir string, port, peerPort int, extra []string) (*process, string, error) {
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	p, err := startProcess(Etcd, filepath.Join(binDir, Etcd), append([]string{
		"--name=local",
		"--data-dir=" + dataDir,
		"--listen-client-urls=" + url,
		"--advertise-client-urls=" + url,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=local=" + peerURL,
		// The data is thrown away with the cluster; durability only costs time.
		"--unsafe-no-fsync=true",
		"--log-level=warn",
	}, extra...), logDir, nil)
	return p, url, err
}

func (c *Cluster) etcdHealthy(ctx context.Context) (bool, error) { return etcdHealthy(ctx, c.etcdURL) }

func etcdHealthy(ctx context.Context, url string) (bool, error) {
	body, code, err := httpGet(ctx, http.DefaultClient, url+"/health", "")
	return err == nil && code == http.StatusOK && strings.Contains(body, `"true"`), nil
}

// EtcdURL is the client URL of the etcd the cluster stores its objects in, to be given to
// another cluster as Options.EtcdServers.
func (c *Cluster) EtcdURL() string { return c.etcdURL }
