package schedulercmd

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/clientcmd"
	k8sversion "k8s.io/component-base/version"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"

	"github.com/archfilter/archfilter/pkg/version"
)

// flavourInfo is one build of archfilter-scheduler and the API servers it
// serves: its own Kubernetes minor and the next (kube-scheduler may be one
// minor older than the API server, never newer).
type flavourInfo struct {
	// Name as users see it ("main line", "k8s1.35 flavour") and its image tag suffix.
	Name, TagSuffix string
	// Minor is the Kubernetes minor it is built from.
	Minor uint
}

// shippedFlavours are the builds of this release, newest first. A minor older
// than the last one's has no flavour.
var shippedFlavours = []flavourInfo{
	{Name: "main line", Minor: 37},
	{Name: "k8s1.35 flavour", TagSuffix: "-k8s1.35", Minor: 35},
}

// serves reports whether the flavour supports an API server of that minor.
func (f flavourInfo) serves(minor uint) bool { return minor == f.Minor || minor == f.Minor+1 }

func (f flavourInfo) String() string {
	return fmt.Sprintf("the %s (image tag <version>%s; API servers 1.%d and 1.%d)", f.Name, f.TagSuffix, f.Minor, f.Minor+1)
}

// skewError is why this scheduler must not run against server, or nil. An API
// server older than the scheduler is refused: the scheduler's informers would
// ask for APIs that server does not serve, and wait for them for ever. One more
// than a minor newer is allowed with a warning (skewWarning): upstream runs
// there too, outside the skew policy.
func skewError(server, scheduler *utilversion.Version) error {
	if server.Major() != scheduler.Major() || server.Minor() >= scheduler.Minor() {
		return nil
	}
	self := fmt.Sprintf("archfilter-scheduler %s, %s, Kubernetes %s", version.Version, thisFlavour, scheduler)
	use := "no archfilter flavour supports it (Kubernetes 1." + fmt.Sprint(server.Minor()) +
		" is out of support): upgrade the control plane, or keep the archfilter release you ran before (docs/upgrading.md)"
	for _, f := range shippedFlavours {
		if f.serves(server.Minor()) {
			use = "use " + f.String()
			break
		}
	}
	return fmt.Errorf("the API server is Kubernetes %s, older than this scheduler (%s): kube-scheduler may be one minor "+
		"older than the API server, never newer, and this one would wait for APIs a 1.%d API server does not serve; %s",
		server, self, server.Minor(), use)
}

// skewWarning is a warning when server is more than one minor newer than the
// scheduler, or "".
func skewWarning(server, scheduler *utilversion.Version) string {
	if server.Major() != scheduler.Major() || server.Minor() <= scheduler.Minor()+1 {
		return ""
	}
	use := "a newer archfilter release"
	for _, f := range shippedFlavours {
		if f.serves(server.Minor()) {
			use = f.String()
			break
		}
	}
	return fmt.Sprintf("the API server is Kubernetes %s, more than one minor newer than this scheduler (Kubernetes %s), "+
		"which the version-skew policy does not support: use %s", server, scheduler, use)
}

// serverVersionTimeout bounds the start-up check: an API server that does not
// answer in time is left to kube-scheduler, which reports it in its own way.
const serverVersionTimeout = 10 * time.Second

// refuseOlderAPIServer reads the API server's version with the client
// kube-scheduler will build (--config's clientConnection, --kubeconfig,
// --master, or in-cluster) and refuses to start against an older one. When
// the version cannot be read, it lets kube-scheduler go on and report that.
func refuseOlderAPIServer(c *cobra.Command) error {
	if f := c.Flags().Lookup("version"); f != nil && f.Value.String() != "false" {
		return nil
	}
	if f := c.Flags().Lookup("write-config-to"); f != nil && f.Value.String() != "" {
		return nil
	}
	logger := klog.Background()
	scheduler, err := utilversion.ParseGeneric(k8sversion.Get().GitVersion)
	if err != nil {
		// An unstamped build (go build without the Makefile's ldflags).
		logger.V(2).Info("Skipping the API server version check: this binary's Kubernetes version is not stamped", "version", k8sversion.Get().GitVersion)
		return nil
	}
	server, err := apiServerVersion(c)
	if err != nil {
		// kube-scheduler reports an unreachable API server itself, once its
		// logging is set up (this runs before).
		logger.V(4).Info("Could not read the API server's version; the version-skew check is skipped", "err", err)
		return nil
	}
	if err := skewError(server, scheduler); err != nil {
		return err
	}
	if w := skewWarning(server, scheduler); w != "" {
		logger.Info("Warning: " + w)
	}
	return nil
}

// apiServerVersion asks the API server kube-scheduler will talk to for its
// version, as kube-scheduler builds its client (options.createKubeConfig).
func apiServerVersion(c *cobra.Command) (*utilversion.Version, error) {
	var kubeconfig, master string
	if f := c.Flags().Lookup("kubeconfig"); f != nil {
		kubeconfig = f.Value.String()
	}
	if f := c.Flags().Lookup("master"); f != nil {
		master = f.Value.String()
	}
	if f := c.Flags().Lookup("config"); f != nil && f.Value.String() != "" {
		cfg, err := options.LoadConfigFromFile(klog.Background(), f.Value.String())
		if err != nil {
			return nil, err
		}
		if cfg.ClientConnection.Kubeconfig != "" {
			kubeconfig = cfg.ClientConnection.Kubeconfig
		}
	}
	restConfig, err := clientcmd.BuildConfigFromFlags(master, kubeconfig)
	if err != nil {
		return nil, err
	}
	restConfig.Timeout = serverVersionTimeout
	dc, err := discovery.NewDiscoveryClientForConfig(restConfig)
	if err != nil {
		return nil, err
	}
	info, err := dc.ServerVersion()
	if err != nil {
		return nil, err
	}
	return utilversion.ParseGeneric(info.GitVersion)
}
