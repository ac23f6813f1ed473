package localcluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"os"
	"strings"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// identity is a user known to the API server through the static token file.
// Every identity is in system:masters: the cluster is a private test fixture,
// and RBAC still governs the service accounts that controllers under test use.
type identity struct {
	user  string
	token string
}

func newIdentity(user string) (identity, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return identity{}, err
	}
	return identity{user: user, token: hex.EncodeToString(b)}, nil
}

// writeTokenFile writes the --token-auth-file: token,user,uid,"groups".
func writeTokenFile(path string, ids []identity) error {
	var b strings.Builder
	for _, id := range ids {
		fmt.Fprintf(&b, "%s,%s,%s,\"system:masters\"\n", id.token, id.user, id.user)
	}
	return os.WriteFile(path, []byte(b.String()), 0o600)
}

// writeServiceAccountKeys writes the key pair that signs service account
// tokens (kube-apiserver and kube-controller-manager share the private key).
func writeServiceAccountKeys(privPath, pubPath string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	priv, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return err
	}
	if err := os.WriteFile(privPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: priv}), 0o600); err != nil {
		return err
	}
	return os.WriteFile(pubPath, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644)
}

// writeKubeconfig writes a kubeconfig for one identity. The CA is embedded so
// that the file stays valid when copied elsewhere.
func writeKubeconfig(path, server string, caData []byte, id identity) error {
	const name = "kubectl-workload-local"
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caData}
	cfg.AuthInfos[id.user] = &clientcmdapi.AuthInfo{Token: id.token}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: id.user, Namespace: "default"}
	cfg.CurrentContext = name
	return clientcmd.WriteToFile(*cfg, path)
}
