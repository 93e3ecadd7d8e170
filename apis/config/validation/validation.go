// Package validation checks ArchFilterArgs and reports every problem with the
// path of the field that causes it.
package validation

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/archfilter/archfilter/apis/config"
	"github.com/archfilter/archfilter/pkg/hostglob"
	"github.com/archfilter/archfilter/pkg/platform"
)

// Bounds that catch typos and configurations that would hurt the scheduler.
const (
	MaxWorkers          = 1024
	MaxPreferenceWeight = 100
	// MaxMaxWait caps how long a pod may be held invisible to the scheduler.
	MaxMaxWait = time.Hour
)

// ValidateArchFilterArgs returns nil or an aggregate of every invalid field,
// each named by its path under path (e.g. "profiles[0].pluginConfig[1].args").
func ValidateArchFilterArgs(path *field.Path, args *config.ArchFilterArgs) error {
	var errs field.ErrorList
	errs = append(errs, validateEnum(path.Child("failurePolicy"), string(args.FailurePolicy),
		string(config.FailurePolicyIgnore), string(config.FailurePolicyFail))...)
	errs = append(errs, validatePlatforms(path.Child("fallbackPlatforms"), args.FallbackPlatforms)...)
	errs = append(errs, validateRun32Bit(path.Child("run32BitImagesOn"), args.Run32BitImagesOn)...)
	errs = append(errs, validatePositiveDuration(path.Child("maxWait"), args.MaxWait, MaxMaxWait)...)
	errs = append(errs, validatePositiveDuration(path.Child("resolveTimeout"), args.ResolveTimeout, MaxMaxWait)...)
	if args.Workers < 1 || args.Workers > MaxWorkers {
		errs = append(errs, field.Invalid(path.Child("workers"), args.Workers, fmt.Sprintf("must be between 1 and %d", MaxWorkers)))
	}
	errs = append(errs, validateCache(path.Child("cache"), &args.Cache)...)
	errs = append(errs, validateRegistries(path.Child("registries"), args.Registries)...)
	errs = append(errs, validateHostGlobs(path.Child("allowedRegistries"), args.AllowedRegistries)...)
	errs = append(errs, validateHostGlobs(path.Child("deniedRegistries"), args.DeniedRegistries)...)
	if ref := args.GlobalPullSecret; ref != nil {
		errs = append(errs, validateSecretReference(path.Child("globalPullSecret"), ref)...)
	}
	errs = append(errs, validateSecretNamespaces(path, args)...)
	if (args.CredentialProviderConfig == "") != (args.CredentialProviderBinDir == "") {
		errs = append(errs, field.Required(path.Child("credentialProviderBinDir"),
			"credentialProviderConfig and credentialProviderBinDir must be set together"))
	}
	if args.NamespaceSelector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(args.NamespaceSelector,
			metav1validation.LabelSelectorValidationOptions{}, path.Child("namespaceSelector"))...)
	}
	errs = append(errs, validateNamespaces(path.Child("excludedNamespaces"), args.ExcludedNamespaces)...)
	errs = append(errs, validatePreferences(path.Child("preferredPlatforms"), args.PreferredPlatforms)...)
	errs = append(errs, validateEnum(path.Child("daemonSetPolicy"), string(args.DaemonSetPolicy),
		string(config.DaemonSetPolicySkip), string(config.DaemonSetPolicyEnforce))...)
	errs = append(errs, validatePolicyOverrides(path.Child("policies", "allowedOverrides"), args.Policies.AllowedOverrides)...)
	return limitErrors(path, errs).ToAggregate()
}

// MaxErrors is the most errors ValidateArchFilterArgs lists; the rest are
// counted. An aggregate's message joins its errors by repeated concatenation
// (k8s.io/apimachinery's aggregate.Error), quadratic in their number: a file
// of 20 000 duplicate fallbackPlatforms took 42 s and 25 GB to report.
const MaxErrors = 64

// limitErrors keeps the first MaxErrors errors and one, under path, counting
// the others.
func limitErrors(path *field.Path, errs field.ErrorList) field.ErrorList {
	if len(errs) <= MaxErrors {
		return errs
	}
	more := &field.Error{Type: field.ErrorTypeInvalid, Field: path.String(), BadValue: field.OmitValueType{},
		Detail: fmt.Sprintf("%d more errors not listed", len(errs)-MaxErrors)}
	return append(errs[:MaxErrors:MaxErrors], more)
}

// validatePolicyOverrides accepts each ArchFilterPolicy field once.
func validatePolicyOverrides(p *field.Path, fields []config.PolicyField) field.ErrorList {
	var errs field.ErrorList
	known := make([]string, 0, len(config.PolicyFields))
	for _, f := range config.PolicyFields {
		known = append(known, string(f))
	}
	seen := sets.New[config.PolicyField]()
	for i, f := range fields {
		switch {
		case !slices.Contains(config.PolicyFields, f):
			errs = append(errs, field.NotSupported(p.Index(i), f, known))
		case seen.Has(f):
			errs = append(errs, field.Duplicate(p.Index(i), f))
		}
		seen.Insert(f)
	}
	return errs
}

// validateRun32Bit accepts the host architectures platform.Compat knows, once each.
func validateRun32Bit(p *field.Path, archs []string) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, arch := range archs {
		if seen[arch] {
			errs = append(errs, field.Duplicate(p.Index(i), arch))
			continue
		}
		seen[arch] = true
		errs = append(errs, validateEnum(p.Index(i), arch, platform.AMD64Runs386, platform.ARM64RunsARM)...)
	}
	return errs
}

func validateEnum(p *field.Path, value string, allowed ...string) field.ErrorList {
	for _, a := range allowed {
		if value == a {
			return nil
		}
	}
	return field.ErrorList{field.NotSupported(p, value, allowed)}
}

func validatePositiveDuration(p *field.Path, d metav1.Duration, upper time.Duration) field.ErrorList {
	if d.Duration <= 0 || d.Duration > upper {
		return field.ErrorList{field.Invalid(p, d.Duration.String(), fmt.Sprintf("must be greater than 0 and at most %s", upper))}
	}
	return nil
}

func validatePlatforms(p *field.Path, values []string) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, v := range values {
		pl, err := platform.Parse(v)
		if err != nil {
			errs = append(errs, field.Invalid(p.Index(i), v, err.Error()))
			continue
		}
		if seen.Has(pl.String()) {
			errs = append(errs, field.Duplicate(p.Index(i), v))
		}
		seen.Insert(pl.String())
	}
	return errs
}

func validateCache(p *field.Path, c *config.CacheArgs) field.ErrorList {
	var errs field.ErrorList
	if c.MaxEntries < 1 {
		errs = append(errs, field.Invalid(p.Child("maxEntries"), c.MaxEntries, "must be at least 1"))
	}
	const year = 365 * 24 * time.Hour
	errs = append(errs, validatePositiveDuration(p.Child("tagTTL"), c.TagTTL, year)...)
	errs = append(errs, validatePositiveDuration(p.Child("digestTTL"), c.DigestTTL, year)...)
	errs = append(errs, validatePositiveDuration(p.Child("negativeTTL"), c.NegativeTTL, year)...)
	if d := c.StaleWhileRevalidate.Duration; d < 0 || d > year {
		errs = append(errs, field.Invalid(p.Child("staleWhileRevalidate"), d.String(), fmt.Sprintf("must be at least 0 (off) and at most %s", year)))
	}
	return errs
}

func validateRegistries(p *field.Path, regs []config.RegistryConfig) field.ErrorList {
	var errs field.ErrorList
	hosts := sets.New[string]()
	for i, r := range regs {
		rp := p.Index(i)
		if err := ValidateRegistryHost(r.Host); err != nil {
			errs = append(errs, field.Invalid(rp.Child("host"), r.Host, err.Error()))
		} else if hosts.Has(r.Host) {
			errs = append(errs, field.Duplicate(rp.Child("host"), r.Host))
		}
		hosts.Insert(r.Host)
		for j, m := range r.Mirrors {
			if err := ValidateRegistryHost(m); err != nil {
				errs = append(errs, field.Invalid(rp.Child("mirrors").Index(j), m, err.Error()))
			} else if m == r.Host {
				errs = append(errs, field.Invalid(rp.Child("mirrors").Index(j), m, "a registry cannot be its own mirror"))
			}
		}
	}
	return errs
}

// ValidateRegistryHost accepts what may stand before the first "/" of an image
// reference: a DNS name or IP address (IPv6 in brackets), with an optional port.
func ValidateRegistryHost(host string) error {
	if host == "" {
		return fmt.Errorf("must not be empty")
	}
	if strings.ContainsAny(host, "/ ") || strings.Contains(host, "://") {
		return fmt.Errorf("must be a host[:port] without scheme or path")
	}
	name := host
	if h, port, err := net.SplitHostPort(host); err == nil {
		n, perr := strconv.Atoi(port)
		if perr != nil || n < 1 || n > 65535 {
			return fmt.Errorf("port %q must be a number between 1 and 65535", port)
		}
		name = h
	} else if strings.HasPrefix(host, "[") || strings.Count(host, ":") > 1 {
		return fmt.Errorf("an IPv6 address must be written in brackets, e.g. [::1]:5000")
	}
	if net.ParseIP(name) != nil {
		return nil
	}
	if msgs := utilvalidation.IsDNS1123Subdomain(name); len(msgs) > 0 {
		return fmt.Errorf("must be a DNS name or IP address: %s", strings.Join(msgs, "; "))
	}
	return nil
}

// validateHostGlobs checks registry host patterns. Like kubelet's credential
// matching, "*" stands for one DNS label and a port must match exactly.
func validateHostGlobs(p *field.Path, globs []string) field.ErrorList {
	var errs field.ErrorList
	for i, g := range globs {
		if err := hostglob.Validate(g); err != nil {
			errs = append(errs, field.Invalid(p.Index(i), g, err.Error()))
		}
	}
	return errs
}

func validateSecretReference(p *field.Path, ref *config.SecretReference) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, invalidIf(p.Child("namespace"), ref.Namespace, utilvalidation.IsDNS1123Label)...)
	errs = append(errs, invalidIf(p.Child("name"), ref.Name, utilvalidation.IsDNS1123Subdomain)...)
	return errs
}

func validateNamespaces(p *field.Path, namespaces []string) field.ErrorList {
	var errs field.ErrorList
	for i, ns := range namespaces {
		errs = append(errs, invalidIf(p.Index(i), ns, utilvalidation.IsDNS1123Label)...)
	}
	return errs
}

// validateSecretNamespaces checks secretNamespaces, and that the global pull
// secret is in one of them: otherwise it could never be read.
func validateSecretNamespaces(path *field.Path, args *config.ArchFilterArgs) field.ErrorList {
	p := path.Child("secretNamespaces")
	errs := validateNamespaces(p, args.SecretNamespaces)
	seen := sets.New[string]()
	for i, ns := range args.SecretNamespaces {
		if seen.Has(ns) {
			errs = append(errs, field.Duplicate(p.Index(i), ns))
		}
		seen.Insert(ns)
	}
	if ref := args.GlobalPullSecret; ref != nil && len(args.SecretNamespaces) > 0 && !seen.Has(ref.Namespace) {
		errs = append(errs, field.Invalid(path.Child("globalPullSecret", "namespace"), ref.Namespace,
			fmt.Sprintf("must be one of secretNamespaces (%s): secrets are read only there", strings.Join(args.SecretNamespaces, ", "))))
	}
	return errs
}

// invalidIf reports one error for value, joining every message check returns.
func invalidIf(p *field.Path, value string, check func(string) []string) field.ErrorList {
	if msgs := check(value); len(msgs) > 0 {
		return field.ErrorList{field.Invalid(p, value, strings.Join(msgs, "; "))}
	}
	return nil
}

func validatePreferences(p *field.Path, prefs []config.PlatformPreference) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, pref := range prefs {
		pp := p.Index(i)
		pl, err := platform.Parse(pref.Platform)
		if err != nil {
			errs = append(errs, field.Invalid(pp.Child("platform"), pref.Platform, err.Error()))
		} else {
			if seen.Has(pl.String()) {
				errs = append(errs, field.Duplicate(pp.Child("platform"), pref.Platform))
			}
			seen.Insert(pl.String())
		}
		if pref.Weight < 1 || pref.Weight > MaxPreferenceWeight {
			errs = append(errs, field.Invalid(pp.Child("weight"), pref.Weight, fmt.Sprintf("must be between 1 and %d", MaxPreferenceWeight)))
		}
	}
	return errs
}
