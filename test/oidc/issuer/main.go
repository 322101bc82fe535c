/*
Copyright 2026 The nsclaim Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Command issuer is the OIDC issuer of make test-oidc (hack/test-oidc.sh): a small identity provider
// on loopback that signs ID tokens shaped like GitHub Actions' (RS256, one RSA key), for a
// kube-apiserver started with an AuthenticationConfiguration that trusts it. It serves over TLS, with
// a CA it makes and writes to <dir>/ca.crt:
//
//	/.well-known/openid-configuration  the discovery document (issuer, jwks_uri)
//	/keys                              the JWKS
//	/token?audience=A&repository=R&ref=F
//	                                   a token for that repository and ref, answered as GitHub answers
//	                                   ACTIONS_ID_TOKEN_REQUEST_URL ({"value": "<jwt>"}), to a request
//	                                   carrying "Authorization: Bearer <the contents of <dir>/request-token>"
//
// It is a test harness, not an identity provider: anyone holding the request token gets a token for
// any repository, which is what the test needs (a second repository, one the authenticator rejects).
package main

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/hex"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:17450", "address to serve on (loopback)")
	dir := flag.String("dir", "", "directory for ca.crt and request-token (required)")
	lifetime := flag.Duration("token-lifetime", 10*time.Minute, "lifetime of the tokens issued")
	flag.Parse()
	if *dir == "" {
		log.Fatal("--dir is required")
	}
	if err := run(*listen, *dir, *lifetime); err != nil {
		log.Fatal(err)
	}
}

func run(listen, dir string, lifetime time.Duration) error {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return err
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("--listen must be a loopback IP address and port, not %q", listen)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tlsConfig, caPEM, err := serving(ip)
	if err != nil {
		return err
	}
	signingKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return err
	}
	requestToken := hex.EncodeToString(secret)

	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	iss := &issuer{url: "https://" + listen, key: signingKey, kid: keyID(&signingKey.PublicKey),
		requestToken: requestToken, lifetime: lifetime, now: time.Now}
	// The files appear once the port is bound: whoever waits for ca.crt can connect at once.
	if err := os.WriteFile(filepath.Join(dir, "request-token"), []byte(requestToken), 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), caPEM, 0o644); err != nil { //nolint:gosec // a CA certificate is public
		return err
	}
	log.Printf("issuer %s serving (key %s)", iss.url, iss.kid)
	srv := &http.Server{Handler: iss.routes(), TLSConfig: tlsConfig, ReadHeaderTimeout: 10 * time.Second}
	return srv.ServeTLS(ln, "", "")
}
