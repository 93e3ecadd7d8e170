package benchreport

import "testing"

func TestLookupScale(t *testing.T) {
	for name, workload := range map[string]string{
		"smoke": "50Nodes_100Pods",
		"small": "500Nodes_2000Pods",
		"full":  "5000Nodes_10000Pods",
	} {
		t.Run(name, func(t *testing.T) {
			s, err := LookupScale(name)
			if err != nil || s.Name != name || s.Workload != workload {
				t.Errorf("LookupScale(%q) = %+v, %v; want workload %s", name, s, err, workload)
			}
		})
	}
	t.Run("unknown", func(t *testing.T) {
		if s, err := LookupScale("huge"); err == nil {
			t.Errorf("LookupScale(huge) = %+v, want an error", s)
		}
	})
}
