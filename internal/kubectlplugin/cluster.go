package kubectlplugin

import (
	"fmt"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
)

// connector connects to the cluster of the kubeconfig flags when called.
func connector(kube *genericclioptions.ConfigFlags) connectFunc {
	return func() (kubernetes.Interface, string, error) { return clusterClient(kube) }
}

// clusterClient returns a clientset and the namespace of -n or the kubeconfig context.
func clusterClient(kube *genericclioptions.ConfigFlags) (kubernetes.Interface, string, error) {
	cfg, err := kube.ToRESTConfig()
	if err != nil {
		return nil, "", fmt.Errorf("kubeconfig: %w", err)
	}
	ns, _, err := kube.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, "", fmt.Errorf("kubeconfig namespace: %w", err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, "", err
	}
	return client, ns, nil
}
