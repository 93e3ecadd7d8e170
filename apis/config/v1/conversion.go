package v1

import (
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/utils/ptr"

	"github.com/archfilter/archfilter/apis/config"
)

// The two enum fields are pointers here (unset → defaulted) and values in the
// internal version; conversion-gen cannot bridge named types across packages.

// Convert_v1_ArchFilterArgs_To_config_ArchFilterArgs converts v1 args to internal args.
func Convert_v1_ArchFilterArgs_To_config_ArchFilterArgs(in *ArchFilterArgs, out *config.ArchFilterArgs, s conversion.Scope) error {
	if err := autoConvert_v1_ArchFilterArgs_To_config_ArchFilterArgs(in, out, s); err != nil {
		return err
	}
	out.FailurePolicy = config.FailurePolicy(ptr.Deref(in.FailurePolicy, ""))
	out.DaemonSetPolicy = config.DaemonSetPolicy(ptr.Deref(in.DaemonSetPolicy, ""))
	return nil
}

// Convert_config_ArchFilterArgs_To_v1_ArchFilterArgs converts internal args to v1 args.
func Convert_config_ArchFilterArgs_To_v1_ArchFilterArgs(in *config.ArchFilterArgs, out *ArchFilterArgs, s conversion.Scope) error {
	if err := autoConvert_config_ArchFilterArgs_To_v1_ArchFilterArgs(in, out, s); err != nil {
		return err
	}
	out.FailurePolicy = ptr.To(FailurePolicy(in.FailurePolicy))
	out.DaemonSetPolicy = ptr.To(DaemonSetPolicy(in.DaemonSetPolicy))
	return nil
}
