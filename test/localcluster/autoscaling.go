package localcluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"slices"
	"time"
)

// HPAController is kube-controller-manager's HorizontalPodAutoscaler controller, which
// Options.Autoscaling adds to the controllers a cluster runs.
const HPAController = "horizontal-pod-autoscaler-controller"

// hpaSyncPeriod is how often the HPA controller reads the metrics of every autoscaler (15s by
// default): short, so that a test's metric change reaches the scale target within seconds.
const hpaSyncPeriod = "2s"

// frontProxyUser is the name in the front-proxy client certificate, the one the API server's
// aggregator presents to an extension API server and the only one --requestheader-allowed-names
// lets through.
const frontProxyUser = "front-proxy-client"

// autoscalingFlags turns on, for Options.Autoscaling, the API server's aggregation layer and the
// HPA controller: a front-proxy CA and the client certificate it signs (the aggregator's
// identity towards an extension API server such as a metrics adapter), the request-header
// flags that let an extension server trust the user the aggregator forwards, and the HPA
// controller synced every 2 seconds. Everything else keeps its defaults; a downscale
// stabilization window is set per HorizontalPodAutoscaler (spec.behavior), as a user would.
func (c *Cluster) autoscalingFlags() (apiserver, kcm []string, err error) {
	caFile, certFile, keyFile := c.path("certs", "front-proxy-ca.crt"), c.path("certs", "front-proxy-client.crt"), c.path("certs", "front-proxy-client.key")
	if c.FrontProxyCAData, err = writeFrontProxyCerts(caFile, certFile, keyFile); err != nil {
		return nil, nil, err
	}
	apiserver = []string{
		"--requestheader-client-ca-file=" + caFile,
		"--requestheader-allowed-names=" + frontProxyUser,
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + certFile,
		"--proxy-client-key-file=" + keyFile,
	}
	kcm = []string{"--horizontal-pod-autoscaler-sync-period=" + hpaSyncPeriod}
	if !slices.Contains(c.opts.Controllers, HPAController) {
		c.opts.Controllers = append(slices.Clone(c.opts.Controllers), HPAController)
	}
	return apiserver, kcm, nil
}

// writeFrontProxyCerts writes a self-signed front-proxy CA and a client certificate for
// frontProxyUser signed by it, and returns the CA in PEM.
func writeFrontProxyCerts(caFile, certFile, keyFile string) ([]byte, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTemplate := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "front-proxy-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: frontProxyUser},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	for file, data := range map[string][]byte{
		caFile:   caPEM,
		certFile: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyFile:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	} {
		if err := os.WriteFile(file, data, 0o600); err != nil {
			return nil, err
		}
	}
	return caPEM, nil
}
