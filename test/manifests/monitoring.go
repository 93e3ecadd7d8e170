package manifests

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// The Prometheus Operator's kinds under manifests/monitoring, as far as the
// manifests use them; decoded strictly, so a misspelt field fails the tests
// instead of being dropped by the operator. (charts/archfilter/test checks
// the rules themselves with promtool and against the metrics archfilter
// registers.)

// PrometheusRule is monitoring.coreos.com/v1 PrometheusRule.
type PrometheusRule struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Groups []RuleGroup `json:"groups"`
	} `json:"spec"`
}

// RuleGroup is a Prometheus rule group.
type RuleGroup struct {
	Name     string `json:"name"`
	Interval string `json:"interval,omitempty"`
	Rules    []Rule `json:"rules"`
}

// Rule is an alerting or recording rule.
type Rule struct {
	Alert         string            `json:"alert,omitempty"`
	Record        string            `json:"record,omitempty"`
	Expr          string            `json:"expr"`
	For           string            `json:"for,omitempty"`
	KeepFiringFor string            `json:"keep_firing_for,omitempty"`
	Labels        map[string]string `json:"labels,omitempty"`
	Annotations   map[string]string `json:"annotations,omitempty"`
}

// ServiceMonitor is monitoring.coreos.com/v1 ServiceMonitor.
type ServiceMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Selector          metav1.LabelSelector `json:"selector"`
		NamespaceSelector struct {
			MatchNames []string `json:"matchNames,omitempty"`
			Any        bool     `json:"any,omitempty"`
		} `json:"namespaceSelector"`
		Endpoints []MonitorEndpoint `json:"endpoints"`
	} `json:"spec"`
}

// MonitorEndpoint is a ServiceMonitor endpoint.
type MonitorEndpoint struct {
	Port            string `json:"port"`
	Scheme          string `json:"scheme,omitempty"`
	Path            string `json:"path,omitempty"`
	Interval        string `json:"interval,omitempty"`
	ScrapeTimeout   string `json:"scrapeTimeout,omitempty"`
	BearerTokenFile string `json:"bearerTokenFile,omitempty"`
	TLSConfig       *struct {
		InsecureSkipVerify bool   `json:"insecureSkipVerify,omitempty"`
		CAFile             string `json:"caFile,omitempty"`
		ServerName         string `json:"serverName,omitempty"`
	} `json:"tlsConfig,omitempty"`
}

// DecodeMonitoring strictly decodes one PrometheusRule or ServiceMonitor
// document and checks what the operator would refuse or ignore.
func DecodeMonitoring(doc []byte) error {
	tm, err := Kind(doc)
	if err != nil {
		return err
	}
	if tm.APIVersion != "monitoring.coreos.com/v1" {
		return fmt.Errorf("%s: apiVersion %q, want monitoring.coreos.com/v1", tm.Kind, tm.APIVersion)
	}
	switch tm.Kind {
	case "PrometheusRule":
		var r PrometheusRule
		if err := yaml.UnmarshalStrict(doc, &r); err != nil {
			return fmt.Errorf("PrometheusRule: %w", err)
		}
		for _, g := range r.Spec.Groups {
			for i, rule := range g.Rules {
				if (rule.Alert == "") == (rule.Record == "") || rule.Expr == "" {
					return fmt.Errorf("PrometheusRule %s: group %s rule %d: want alert or record, and expr", r.Name, g.Name, i)
				}
			}
		}
	case "ServiceMonitor":
		var m ServiceMonitor
		if err := yaml.UnmarshalStrict(doc, &m); err != nil {
			return fmt.Errorf("ServiceMonitor: %w", err)
		}
		for _, e := range m.Spec.Endpoints {
			if e.Scheme != "https" {
				return fmt.Errorf("ServiceMonitor %s: endpoint %s: scheme %q, want https (the secure port)", m.Name, e.Port, e.Scheme)
			}
		}
	default:
		return fmt.Errorf("kind %s is not a monitoring kind", tm.Kind)
	}
	return nil
}
