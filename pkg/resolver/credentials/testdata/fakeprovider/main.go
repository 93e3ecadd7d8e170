// Command fakeprovider is a kubelet credential provider plugin for tests. It
// answers with credentials for the requested image's host; environment
// variables choose how it behaves.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"
)

func main() {
	var req struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Image      string `json:"image"`
	}
	if err := json.NewDecoder(os.Stdin).Decode(&req); err != nil || req.Kind != "CredentialProviderRequest" {
		fmt.Fprintln(os.Stderr, "bad request", err)
		os.Exit(2)
	}
	runs := 1
	if log := os.Getenv("FAKE_PROVIDER_LOG"); log != "" {
		old, _ := os.ReadFile(log)
		runs += strings.Count(string(old), "\n")
		f, err := os.OpenFile(log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			os.Exit(3)
		}
		fmt.Fprintf(f, "%s %s\n", req.Image, strings.Join(os.Args[1:], " "))
		f.Close()
	}
	switch os.Getenv("FAKE_PROVIDER_MODE") {
	case "fail":
		fmt.Fprintln(os.Stderr, "stderr-secret")
		os.Exit(1)
	case "sleep":
		time.Sleep(time.Minute)
	case "garbage":
		fmt.Println("stdout-secret")
		return
	case "wrong-version":
		req.APIVersion = "credentialprovider.kubelet.k8s.io/v1alpha1"
	}
	host, _, _ := strings.Cut(req.Image, "/")
	host = envOr("FAKE_PROVIDER_AUTH_KEY", host)
	resp := map[string]any{
		"apiVersion":   req.APIVersion,
		"kind":         "CredentialProviderResponse",
		"cacheKeyType": envOr("FAKE_PROVIDER_CACHE_KEY", "Registry"),
		"auth": map[string]any{
			host: map[string]string{"username": "plugin-user", "password": fmt.Sprintf("plugin-pass-%d", runs)},
		},
	}
	if d := os.Getenv("FAKE_PROVIDER_CACHE_DURATION"); d != "" {
		resp["cacheDuration"] = d
	}
	_ = json.NewEncoder(os.Stdout).Encode(resp)
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
