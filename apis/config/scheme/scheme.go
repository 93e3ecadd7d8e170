// Package scheme registers ArchFilterArgs on kube-scheduler's configuration
// scheme, which is where the framework decodes every plugin's args from.
package scheme

import (
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	kubeschedulerscheme "k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"

	"github.com/archfilter/archfilter/apis/config"
	configv1 "github.com/archfilter/archfilter/apis/config/v1"
)

// Scheme is kube-scheduler's scheme; importing this package adds ArchFilterArgs to it.
var Scheme = kubeschedulerscheme.Scheme

func init() {
	AddToScheme(Scheme)
}

// AddToScheme registers the internal and v1 ArchFilterArgs on s.
func AddToScheme(s *runtime.Scheme) {
	utilruntime.Must(config.AddToScheme(s))
	utilruntime.Must(configv1.AddToScheme(s))
}
