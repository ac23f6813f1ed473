package localcluster

import (
	"context"
	"fmt"
	"net/http"
	"strings"
)

// startEtcd starts the cluster's own etcd on the given ports and waits for its /health, or, with
// Options.EtcdServers, only records that etcd: the cluster that started it owns it.
func (c *Cluster) startEtcd(ctx context.Context, port, peerPort int) error {
	if c.opts.EtcdServers != "" {
		c.etcdURL = c.opts.EtcdServers
		return nil
	}
	c.etcdURL = fmt.Sprintf("http://127.0.0.1:%d", port)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	if err := c.run(Etcd, []string{
		"--name=local",
		"--data-dir=" + c.path("etcd"),
		"--listen-client-urls=" + c.etcdURL,
		"--advertise-client-urls=" + c.etcdURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=local=" + peerURL,
		// The data is thrown away with the cluster; durability only costs time.
		"--unsafe-no-fsync=true",
		"--log-level=warn",
	}, nil); err != nil {
		return err
	}
	return c.waitFor(ctx, "etcd health", c.etcdHealthy)
}

func (c *Cluster) etcdHealthy(ctx context.Context) (bool, error) {
	body, code, err := httpGet(ctx, http.DefaultClient, c.etcdURL+"/health", "")
	return err == nil && code == http.StatusOK && strings.Contains(body, `"true"`), nil
}

// EtcdURL is the client URL of the etcd the cluster stores its objects in, to be given to
// another cluster as Options.EtcdServers.
func (c *Cluster) EtcdURL() string { return c.etcdURL }
