package schedulercmd

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"
)

// kubeconfigFlagUsage replaces kube-scheduler's, which says the flag is ignored
// next to --config.
const kubeconfigFlagUsage = "Path to a kubeconfig file. With --config, it applies when the configuration " +
	"sets no clientConnection.kubeconfig (setting both to different files is an error)."

// honourKubeconfigFlag makes --kubeconfig work next to --config, where
// kube-scheduler silently ignores it (and then connects in-cluster, or fails
// with a message that does not mention the flag): `archfilter-scheduler
// --config FILE --kubeconfig ~/.kube/config` is what people type first.
// The configuration is copied with clientConnection.kubeconfig set, and
// --config points at the copy.
func honourKubeconfigFlag(c *cobra.Command) error {
	kf, cf := c.Flags().Lookup("kubeconfig"), c.Flags().Lookup("config")
	if kf == nil || cf == nil || !kf.Changed || cf.Value.String() == "" {
		return nil
	}
	merged, err := withKubeconfig(cf.Value.String(), kf.Value.String(), os.TempDir())
	if err != nil || merged == "" {
		return err
	}
	klog.Background().Info("Using --kubeconfig with --config", "kubeconfig", kf.Value.String(), "config", cf.Value.String(), "merged", merged)
	return c.Flags().Set("config", merged)
}

// withKubeconfig returns the path of a copy of the configuration file with
// clientConnection.kubeconfig set to kubeconfig (written into dir), or ""
// when the file already names that kubeconfig.
func withKubeconfig(configFile, kubeconfig, dir string) (string, error) {
	data, err := os.ReadFile(configFile)
	if err != nil {
		return "", fmt.Errorf("--config: %w", err)
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		return "", fmt.Errorf("--config %s: %w", configFile, err)
	}
	if cfg == nil {
		cfg = map[string]any{}
	}
	cc, _ := cfg["clientConnection"].(map[string]any)
	if cc == nil {
		cc = map[string]any{}
	}
	abs, err := filepath.Abs(kubeconfig)
	if err != nil {
		return "", fmt.Errorf("--kubeconfig: %w", err)
	}
	switch set, _ := cc["kubeconfig"].(string); {
	case set == kubeconfig || set == abs:
		return "", nil
	case set != "":
		return "", fmt.Errorf("--kubeconfig %s conflicts with clientConnection.kubeconfig %s in %s: set one of them", kubeconfig, set, configFile)
	}
	cc["kubeconfig"] = abs
	cfg["clientConnection"] = cc
	out, err := yaml.Marshal(cfg)
	if err != nil {
		return "", err
	}
	f, err := os.CreateTemp(dir, "archfilter-scheduler-config-*.yaml")
	if err != nil {
		return "", fmt.Errorf("writing the configuration with --kubeconfig: %w", err)
	}
	if _, err := f.Write(out); err != nil {
		f.Close()
		return "", fmt.Errorf("writing %s: %w", f.Name(), err)
	}
	return f.Name(), f.Close()
}
