package cluster

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/redis/go-redis/v9"
)

// TLSOptions are the --tls flags.
type TLSOptions struct {
	Enabled       bool
	CA, Cert, Key string
	ServerName    string
	Insecure      bool
}

// Config builds the TLS client configuration (nil when TLS is off).
func (o TLSOptions) Config() (*tls.Config, error) {
	if !o.Enabled && o.CA == "" && o.Cert == "" && o.Key == "" && o.ServerName == "" && !o.Insecure {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: o.ServerName, InsecureSkipVerify: o.Insecure}
	if o.CA != "" {
		pem, err := os.ReadFile(o.CA)
		if err != nil {
			return nil, fmt.Errorf("--tls-ca: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--tls-ca %s: no PEM certificate in it", o.CA)
		}
	}
	if (o.Cert == "") != (o.Key == "") {
		return nil, errors.New("--tls-cert and --tls-key go together (a client certificate and its key)")
	}
	if o.Cert != "" {
		c, err := tls.LoadX509KeyPair(o.Cert, o.Key)
		if err != nil {
			return nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{c}
	}
	return cfg, nil
}

// Options returns go-redis options for addr with the cluster's
// credentials and TLS (the server name checked against the address
// dialed, unless --tls-server-name says otherwise).
func (c *Cluster) Options(addr string) *redis.Options {
	o := &redis.Options{Addr: addr, Username: c.User, Password: c.Password, Protocol: 2, DisableIdentity: true,
		MaxRetries: -1, DialTimeout: 3 * time.Second, ReadTimeout: 3 * time.Second, WriteTimeout: 3 * time.Second}
	if c.TLS != nil {
		o.TLSConfig = TLSFor(c.TLS, addr)
	}
	return o
}

// TLSFor returns cfg with the server name of addr, unless cfg names one.
func TLSFor(cfg *tls.Config, addr string) *tls.Config {
	if cfg.ServerName != "" {
		return cfg
	}
	cfg = cfg.Clone()
	cfg.ServerName, _, _ = net.SplitHostPort(addr)
	return cfg
}
