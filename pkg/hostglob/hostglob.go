// Package hostglob owns the syntax of the registry host patterns an operator writes
// (allowedRegistries, deniedRegistries): host[:port], where "*" stands for one DNS label, as
// in the kubelet's credential matching. Configuration validation and the resolver's
// transport check patterns with the same function, so a pattern the configuration accepts is
// one the transport can match.
package hostglob

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"strings"
)

// Validate returns why glob is not a host[:port] pattern, or nil. A pattern that parses as
// no URL host (a stray "%", a user name, a scheme or path) is refused: the kubelet's
// matcher, which the transport uses, would match it against no host at all, so a
// deniedRegistries entry so written would refuse nothing.
func Validate(glob string) error {
	if glob == "" {
		return errors.New("must not be empty")
	}
	if strings.ContainsAny(glob, "/ ") {
		return errors.New("must be a host[:port] pattern without scheme or path")
	}
	if _, err := path.Match(strings.ToLower(glob), ""); err != nil {
		return fmt.Errorf("malformed glob: %w", err)
	}
	u, err := url.Parse("https://" + glob)
	if err != nil || u.Host != glob || u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Path != "" {
		return errors.New("must be a host[:port] pattern: a DNS name or IP address whose labels may be \"*\", and a port")
	}
	return nil
}
